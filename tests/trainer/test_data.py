"""Transitions -> token sequences (engine ids vs chat template), truncation, sft filter, step plan."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spanrl.trainer.data import bucket_by_tokens, build_sequences, collate, plan_steps, select_sft
from spanrl.transitions import TRANSITION_SCHEMA
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, transition_row


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(make_tiny_model(tmp_path_factory.mktemp("tiny")))


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA)


def _build(tokenizer, rows, max_prompt=4096, max_response=4096):
    return build_sequences(_table(rows), tokenizer, max_prompt, max_response)


def test_engine_and_text_paths_give_the_same_tokens(tokenizer) -> None:
    engine_rows = tiny_rollout_rows(tokenizer, engine=True)
    text_rows = [{**r, "token_source": "text", "prompt_token_ids": None, "response_token_ids": None} for r in engine_rows]
    engine, s_engine = _build(tokenizer, engine_rows)
    text, s_text = _build(tokenizer, text_rows)
    assert (s_engine.engine, s_engine.text, s_text.engine, s_text.text) == (12, 0, 0, 12)
    assert s_text.skipped == 0 and s_text.template_mismatch == 0
    assert [s.ids for s in engine] == [s.ids for s in text]
    assert [s.n_prompt for s in engine] == [s.n_prompt for s in text]
    # the response is the assistant turn up to and including the end-of-turn token
    for s in text:
        assert s.ids[-1] == tokenizer.eos_token_id
        assert "<|im_start|>" not in tokenizer.decode(s.ids[s.n_prompt:])
    tool_call = tokenizer.decode(text[0].ids[text[0].n_prompt:])
    assert tool_call.startswith("<tool_call>\n{\"name\": \"add\"")


def test_a_response_cut_at_the_token_limit_trains_without_an_end_of_turn_token(tokenizer) -> None:
    """An engine stopped by max_tokens never sampled end-of-turn: a text row whose finish_reason says so
    must not train on the one the template appends (the engine's ids of such a reply have none)."""
    engine_rows = tiny_rollout_rows(tokenizer, engine=True, n_tasks=1, rollouts_per_task=1)
    text_rows = [{**r, "token_source": "text", "prompt_token_ids": None, "response_token_ids": None}
                 for r in engine_rows]
    cut = [{**r, "finish_reason": ("length", "MAX_TOKENS")[i % 2]} for i, r in enumerate(text_rows)]
    stopped = [{**r, "finish_reason": "stop"} for r in text_rows]
    cut_seqs, s_cut = _build(tokenizer, cut)
    stop_seqs, s_stop = _build(tokenizer, stopped)
    assert (s_cut.cut_at_length, s_stop.cut_at_length) == (len(cut), 0)
    for a, b in zip(cut_seqs, stop_seqs, strict=True):
        assert b.ids[-1] == tokenizer.eos_token_id and tokenizer.eos_token_id not in a.ids[a.n_prompt:]
        assert a.ids == b.ids[:-1] and a.n_prompt == b.n_prompt
    # an engine row cut the same way is its own evidence: the text render now agrees with its ids
    engine_cut = [{**r, "finish_reason": "length", "response_token_ids": r["response_token_ids"][:-1]}
                  for r in engine_rows]
    _, s_engine = _build(tokenizer, engine_cut)
    assert (s_engine.drift_checked, s_engine.drift) == (len(engine_cut), 0)


def test_template_mismatch_is_counted_and_skipped_not_misaligned(tokenizer) -> None:
    rows = [{**r, "token_source": "text"} for r in tiny_rollout_rows(tokenizer, engine=False)]
    original = tokenizer.chat_template
    # a template whose generation prompt is not what the assistant turn starts with (like a
    # "thinking" template that drops <think> from rendered turns)
    tokenizer.chat_template = original.replace(
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}",
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}",
    )
    try:
        seqs, stats = _build(tokenizer, rows)
    finally:
        tokenizer.chat_template = original
    assert seqs == []
    assert stats.template_mismatch == len(rows) and stats.skipped == len(rows)


def test_bad_json_and_bad_token_ids_are_counted(tokenizer) -> None:
    good = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1, engine=True)[0]
    broken_json = {**good, "token_source": "text", "prompt_messages": "{not json"}
    bad_ids = {**good, "response_token_ids": [len(tokenizer) + 5]}
    seqs, stats = _build(tokenizer, [good, broken_json, bad_ids])
    assert len(seqs) == 1
    assert (stats.template_error, stats.bad_token_ids, stats.skipped) == (1, 1, 2)


def test_a_text_row_without_its_prompt_is_counted_not_trained_on_an_empty_one(tokenizer) -> None:
    good = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1, engine=False)[0]
    good = {**good, "token_source": "text"}
    hidden = [{**good, "prompt_messages": p} for p in (None, "[]")]  # content not captured (coverage.missing_input)
    seqs, stats = _build(tokenizer, [good, *hidden])
    assert len(seqs) == 1
    assert (stats.no_prompt, stats.skipped) == (2, 2)


def test_truncation_keeps_prompt_end_and_response_start(tokenizer) -> None:
    row = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1, engine=True, logprobs=True)[0]
    p, r = row["prompt_token_ids"], row["response_token_ids"]
    [seq], stats = _build(tokenizer, [row], max_prompt=10, max_response=3)
    assert seq.ids == p[-10:] + r[:3] and seq.n_prompt == 10
    assert seq.behaviour == [-1.0] * 3
    assert (stats.prompt_truncated, stats.response_truncated) == (1, 1)


def test_behaviour_logprobs_dropped_when_they_do_not_line_up(tokenizer) -> None:
    row = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1, engine=True)[0]
    row["response_logprobs"] = [-0.5]  # wrong length
    [seq], stats = _build(tokenizer, [row])
    assert seq.behaviour is None and stats.behaviour_dropped == 1
    text_row = {**row, "token_source": "text", "response_logprobs": [-0.5] * len(row["response_token_ids"])}
    [seq], stats = _build(tokenizer, [text_row])
    assert seq.behaviour is None and stats.behaviour_dropped == 1  # text tokens are not the engine's


def test_advantage_falls_back_to_return(tokenizer) -> None:
    row = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1)[0]
    row.update(advantage=None, **{"return": 0.75})
    [seq], _ = _build(tokenizer, [row])
    assert seq.advantage == 0.75


def test_select_sft_threshold_top_k_and_default(tokenizer) -> None:
    rows = tiny_rollout_rows(tokenizer, n_tasks=2, rollouts_per_task=3, calls_per_rollout=2)
    seqs, _ = _build(tokenizer, rows)  # rewards 0, 1, 2 per task; advantages -1, 0, 1
    assert {s.rollout_id for s in select_sft(seqs, 1.0, None)} == {"t0-r1", "t0-r2", "t1-r1", "t1-r2"}
    assert {s.rollout_id for s in select_sft(seqs, None, 1)} == {"t0-r2", "t1-r2"}
    assert {s.rollout_id for s in select_sft(seqs, 2.0, 2)} == {"t0-r2", "t1-r2"}
    assert {s.rollout_id for s in select_sft(seqs, None, None)} == {"t0-r2", "t1-r2"}  # advantage > 0
    assert len(select_sft(seqs, None, 1)) == 4  # whole rollouts: both calls of each kept rollout
    # a reply the engine cut at its token limit is not imitated, even in the best rollout; the rollout's
    # other calls still are, and the choice of rollouts does not change
    cut_rows = [{**r, "finish_reason": "length" if (r["rollout_id"], r["step"]) == ("t0-r2", 0) else "stop"}
                for r in rows]
    cut_seqs, _ = _build(tokenizer, cut_rows)
    assert sum(s.cut for s in cut_seqs) == 1
    for top_k, min_return in ((1, None), (None, None), (None, 1.0)):
        kept = select_sft(cut_seqs, min_return, top_k)
        assert len(kept) == len(select_sft(seqs, min_return, top_k)) - 1 and not any(s.cut for s in kept)


def test_sft_with_only_cut_replies_says_to_raise_max_tokens_not_to_loosen_the_filters() -> None:
    from spanrl.trainer.config import TrainConfig
    from spanrl.trainer.data import DataStats
    from spanrl.trainer.train import _nothing_to_train_hint

    sft = TrainConfig(model=Path("."), loss="sft")
    assert "max_tokens" in _nothing_to_train_hint(sft, DataStats(sft_cut=3))
    assert "--sft-min-return" in _nothing_to_train_hint(sft, DataStats(sft_cut=3, sft_dropped=2))


def test_plan_steps_counts_rollouts_weights_sum_to_one_and_buckets_fit(tokenizer) -> None:
    rows = tiny_rollout_rows(tokenizer, n_tasks=3, rollouts_per_task=2, calls_per_rollout=3)
    seqs, _ = _build(tokenizer, rows)
    steps = plan_steps(seqs, rollouts_per_step=4, epochs=2, seed=0, agg="rollout", tokens_per_batch=600)
    assert [s.n_rollouts for s in steps] == [4, 2, 4, 2]
    for epoch in (steps[:2], steps[2:]):
        seen = [i for st in epoch for b in st.batches for i in b]
        assert sorted(seen) == list(range(len(seqs)))  # every call once per epoch
    for st in steps:
        total = sum(w * (p.end - p.start) for b in st.batches for i in b
                    for w, p in zip(st.weights[i], seqs[i].response_parts, strict=True))
        assert total == pytest.approx(1.0)
        for b in st.batches:
            assert len(b) == 1 or max(len(seqs[i].ids) for i in b) * len(b) <= 600
    again = plan_steps(seqs, rollouts_per_step=4, epochs=2, seed=0, agg="rollout", tokens_per_batch=600)
    assert [s.batches for s in again] == [s.batches for s in steps]  # seeded


def test_bucket_by_tokens_groups_similar_lengths() -> None:
    lengths = {0: 100, 1: 10, 2: 95, 3: 12, 4: 500}
    assert bucket_by_tokens(lengths, 200) == [[4], [0, 2], [3, 1]]


def test_collate_positions_predict_response_tokens(tokenizer) -> None:
    rows = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=2, calls_per_rollout=1, logprobs=True)
    seqs, _ = _build(tokenizer, rows)
    b = collate(seqs, [0, 1], pad_id=0, weights={0: [0.1], 1: [0.2]})
    n = sum(s.n_response for s in seqs)
    assert b["targets"].tolist() == seqs[0].ids[seqs[0].n_prompt:] + seqs[1].ids[seqs[1].n_prompt:]
    assert b["pos_t"].numel() == n and b["behaviour_logp"].tolist() == [-1.0] * n
    assert b["input_ids"][b["pos_b"], b["pos_t"] + 1].tolist() == b["targets"].tolist()
    assert b["weight"].tolist() == pytest.approx([0.1] * seqs[0].n_response + [0.2] * seqs[1].n_response)


def test_tiny_model_is_deterministic(tmp_path: Path) -> None:
    a, b = make_tiny_model(tmp_path / "a"), make_tiny_model(tmp_path / "b")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert json.loads((a / "config.json").read_text())["vocab_size"] == 512


def test_transition_row_has_every_column() -> None:
    row = transition_row(rollout_id="x")
    assert row["token_source"] == "text" and row["snapshot_id"] == "" and set(row) == set(TRANSITION_SCHEMA.names)
