"""Tokenizer drift (issue 29): engine rows that also carry messages are re-tokenised the way the
text path would, and the rows whose ids differ from the engine's are counted (not trained on
differently: the engine's ids still train)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spanrl.trainer.data import build_sequences
from spanrl.transitions import TRANSITION_SCHEMA
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(make_tiny_model(tmp_path_factory.mktemp("tiny")))


def test_rows_whose_text_retokenises_differently_are_counted(tokenizer) -> None:
    rows = tiny_rollout_rows(tokenizer, n_tasks=2, rollouts_per_task=2, calls_per_rollout=1)
    # an engine that sampled the same text as other tokens: character by character (same decoded text)
    text = tokenizer.decode(rows[0]["response_token_ids"])
    rows[0]["response_token_ids"] = [i for ch in text for i in tokenizer(ch, add_special_tokens=False)["input_ids"]]
    assert tokenizer.decode(rows[0]["response_token_ids"]) == text
    assert rows[0]["response_token_ids"] != rows[1]["response_token_ids"]
    rows[3]["prompt_messages"] = None  # no text: not checked
    seqs, stats = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)
    assert (stats.engine, stats.drift_checked, stats.drift) == (4, 3, 1)
    assert seqs[0].ids[seqs[0].n_prompt:] == rows[0]["response_token_ids"]  # the engine's ids train
    assert "drift=1" in stats.summary()
