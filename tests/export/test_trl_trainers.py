"""The TRL exports train: a real TRL trainer runs 2 steps on a tiny local model, on CPU, from the
dataset ``datasets.load_dataset`` reads out of the export folder (no hub, no glue code)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from spanrl.export import ExportConfig, export_snapshot

pytest.importorskip("trl")


def _trainer(kind: str, model, tokenizer, dataset, out: Path):
    import trl

    common = dict(output_dir=str(out), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3,
                  report_to=[], save_strategy="no", logging_steps=1, use_cpu=True, disable_tqdm=True,
                  dataloader_num_workers=0, max_length=512)
    config_cls, trainer_cls = {"trl-sft": (trl.SFTConfig, trl.SFTTrainer), "trl-kto": (trl.KTOConfig, trl.KTOTrainer),
                               "trl-dpo": (trl.DPOConfig, trl.DPOTrainer)}[kind]
    return trainer_cls(model=model, args=config_cls(**common), train_dataset=dataset, processing_class=tokenizer)


@pytest.mark.parametrize("kind", ["trl-sft", "trl-kto", "trl-dpo"])
def test_trl_trainer_runs_two_steps_on_the_export(kind: str, snapshot, tiny_model: Path, tokenizer,
                                                  tmp_path: Path) -> None:
    import torch
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM

    data, _ = snapshot
    export_snapshot(ExportConfig(data=data, format=kind, out=tmp_path / "ds"))
    dataset = load_dataset(str(tmp_path / "ds"), split="train", cache_dir=str(tmp_path / "hf-cache"))
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer = _trainer(kind, model, tokenizer, dataset, tmp_path / "run")
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert any(not torch.equal(before[name], p) for name, p in model.named_parameters()), "nothing trained"
