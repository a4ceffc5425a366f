"""Data-parallel: the same command under torchrun (2 CPU processes, gloo) trains one adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spanrl.trainer.config import TrainConfig
from spanrl.trainer.train import train
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # ~20 s alone (two processes start torch), minutes on a loaded machine
def test_torchrun_two_ranks_agree_and_match_one_process(tmp_path: Path) -> None:
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    model = make_tiny_model(tmp_path / "model")
    write_rows_snapshot(tmp_path / "data", tiny_rollout_rows(AutoTokenizer.from_pretrained(model), n_tasks=4))
    args = ["--data", str(tmp_path / "data"), "--model", str(model), "--lr", "1e-2", "--rollouts-per-step", "4",
            "--tokens-per-batch", "256", "--seed", "3", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "spanrl", "train", *args, "--out", str(tmp_path / "ddp")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]

    folders = [p for p in (tmp_path / "ddp").iterdir() if p.is_dir()]
    assert len(folders) == 1  # rank 0 wrote once
    assert len((tmp_path / "ddp" / "cycles.jsonl").read_text().splitlines()) == 1
    state = json.loads((folders[0] / "training_state.json").read_text())
    assert state["world_size"] == 2  # and train() checked that both ranks hold the same weights

    single = train(TrainConfig(model=model, data=tmp_path / "data", lr=1e-2, rollouts_per_step=4,
                               tokens_per_batch=256, seed=3, out=tmp_path / "one"), progress=False)
    a = load_file(folders[0] / "adapter_model.safetensors")
    b = load_file(single.folder / "adapter_model.safetensors")
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst < 1e-4, f"data-parallel and single-process adapters differ by {worst}"
    assert any(float(a[k].abs().max()) > 0 for k in a if "lora_B" in k)

