"""The update guard (``--max-kl``, trainer/guard.py) on the tiny random Llama: an absurd step is rolled
back and reported, a sane one is untouched, and 0 turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.trainer.config import TrainConfig
from spanrl.trainer.guard import UpdateGuard
from spanrl.trainer.losses import kl_k3
from spanrl.trainer.train import train
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot

# The tiny model's head is random and small, so even a wrecking step moves its token distribution
# little (lr 1.0: KL ~0.1 per token, where SmolLM2 goes past 20); the limit is scaled to it.
MAX_KL = 0.02


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def data(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    from transformers import AutoTokenizer

    rows = tiny_rollout_rows(AutoTokenizer.from_pretrained(model_dir), n_tasks=3, rollouts_per_task=2, calls_per_rollout=1)
    root = tmp_path_factory.mktemp("data")
    write_rows_snapshot(root, rows)
    return root, rows


def _train(model_dir: Path, root: Path, out: Path, **kw):
    kw = {"max_kl": MAX_KL, **kw}
    return train(TrainConfig(model=model_dir, data=root, out=out, fresh=True, rollouts_per_step=2, **kw), progress=False)


def _kl_to_base(model_dir: Path, adapter: Path, rows: list[dict]) -> float:
    """Mean per-token k3 KL(adapter || base) over the snapshot's response tokens, measured outside the trainer."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), adapter)
    total, count = 0.0, 0
    with torch.no_grad():
        for r in rows:
            ids, n = r["prompt_token_ids"] + r["response_token_ids"], len(r["prompt_token_ids"])
            targets = torch.tensor(ids[n:])[:, None]
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, n - 1 : -1].float(), -1).gather(-1, targets)
            with model.disable_adapter():
                base = torch.log_softmax(model(torch.tensor([ids])).logits[0, n - 1 : -1].float(), -1).gather(-1, targets)
            total += float(kl_k3(logp.squeeze(-1), base.squeeze(-1)).sum())
            count += len(ids) - n
    return total / count


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def test_an_absurd_step_is_rolled_back_recorded_and_the_adapter_stays_near_the_base(model_dir, data, tmp_path) -> None:
    root, rows = data
    res = CliRunner().invoke(cli, ["train", "--data", str(root), "--model", str(model_dir), "--out", str(tmp_path / "on"),
                                   "--fresh", "--rollouts-per-step", "2", "--lr", "1.0", "--max-kl", str(MAX_KL),
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "guard: rolled back" in res.output and f"--max-kl {MAX_KL:g}" in res.output  # the console summary
    folder = next((tmp_path / "on").glob("0001-*"))
    g = json.loads((folder / "training_state.json").read_text())["guard"]
    assert g["max_kl"] == MAX_KL and g["steps"] == 3 and g["rolled_back_steps"] >= 1
    assert all(r["kl"] > MAX_KL or r["kl"] != r["kl"] for r in g["rolled_back"])  # the value that tripped it
    line = json.loads((tmp_path / "on" / "cycles.jsonl").read_text().splitlines()[-1])
    assert line["rolled_back_steps"] == g["rolled_back_steps"]
    steps = _rows(folder)
    tripped = {r["step"] for r in steps if r.get("rolled_back")}
    assert tripped == {r["step"] for r in g["rolled_back"]}
    for s in tripped - {3}:  # the next step's gradient was taken at the rolled-back weights: skipped
        assert steps[s]["skipped"] == 1
    assert _kl_to_base(model_dir, folder, rows) <= MAX_KL

    unguarded = _train(model_dir, root, tmp_path / "off", lr=1.0, max_kl=0)  # the same step without the guard
    assert unguarded.guard["rolled_back_steps"] == 0
    assert not _kl_to_base(model_dir, unguarded.folder, rows) <= MAX_KL  # far (or NaN): what the guard prevented


def test_a_sane_step_is_untouched_and_zero_turns_the_guard_off(model_dir, data, tmp_path) -> None:
    root, _ = data
    on = _train(model_dir, root, tmp_path / "on")  # the default lr
    off = _train(model_dir, root, tmp_path / "off", max_kl=0)
    assert on.guard["rolled_back_steps"] == 0 and 0 < on.guard["kl_max_accepted"] <= MAX_KL
    assert [(r["rolled_back"], r["skipped"]) for r in _rows(on.folder)] == [(0, 0)] * 3
    assert on.weights_sha256 == off.weights_sha256  # measuring changes nothing: healthy training is as it was
    assert off.guard == {"max_kl": 0, "steps": 3, "rolled_back_steps": 0, "rolled_back": [], "kl_max_accepted": None}
    assert not any("kl_start" in r or "rolled_back" in r for r in _rows(off.folder))


@pytest.mark.parametrize("steps_before", [0, 2])
def test_rollback_restores_weights_and_optimizer_state_exactly(steps_before: int) -> None:
    w = torch.nn.Parameter(torch.arange(4, dtype=torch.float32))
    opt = torch.optim.AdamW([w], lr=0.1)
    guard = UpdateGuard(torch, [w], opt, max_kl=0.5)

    def step() -> None:
        w.grad = torch.ones(4)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(steps_before):
        step()
    weights, state = w.detach().clone(), {k: v.clone() for k, v in opt.state[w].items()}
    guard.save()
    step()
    assert guard.check(7, float("nan"))["rolled_back"] == 1  # a NaN (a blown-up step) trips it too
    assert torch.equal(w.detach(), weights)
    assert set(opt.state[w]) == set(state) and all(torch.equal(opt.state[w][k], v) for k, v in state.items())
    guard.save()
    step()
    assert guard.check(8, 0.1) == {"guard_kl": 0.1, "rolled_back": 0} and not torch.equal(w.detach(), weights)
    assert guard.rolled_back[0]["step"] == 7 and guard.summary(8)["rolled_back_steps"] == 1
