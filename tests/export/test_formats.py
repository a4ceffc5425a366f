"""Each export format, loaded with its consumer's loader and compared with the snapshot rows it came from."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from spanrl.export import ExportConfig, export_snapshot
from tests.export.conftest import IMAGE_URL, by_key
from tests.export.openai_ft_schema import check_example


def _export(data: Path, out: Path, fmt: str, **options):
    return export_snapshot(ExportConfig(data=data, format=fmt, out=out, **options))


def _load(out: Path, tmp_path: Path):
    from datasets import load_dataset

    return load_dataset(str(out), split="train", cache_dir=str(tmp_path / "hf-cache"))


def _reward(row: dict) -> float | None:
    return row["return"]


@pytest.mark.parametrize("file_type", ["parquet", "jsonl"])
def test_trl_sft_messages_are_prompt_plus_response(snapshot, tmp_path: Path, file_type: str) -> None:
    data, rows = snapshot
    result = _export(data, tmp_path / "sft", "trl-sft", file_type=file_type)
    ds = _load(tmp_path / "sft", tmp_path)
    assert len(ds) == result.rows_out == len(rows)
    src = by_key(rows)
    for ex in ds:
        row = src[(ex["rollout_id"], ex["step"])]
        prompt = json.loads(row["prompt_messages"])
        response = json.loads(row["response_message"])
        assert [m["role"] for m in ex["messages"]] == [m["role"] for m in prompt] + ["assistant"]
        last = ex["messages"][-1]
        assert last["content"] == response.get("content")
        if response.get("tool_calls"):
            assert last["tool_calls"][0]["function"]["arguments"] == response["tool_calls"][0]["function"]["arguments"]
        assert (json.loads(ex["tools"]) if ex["tools"] else None) == (json.loads(row["tools"]) if row["tools"] else None)
    card = (tmp_path / "sft" / "README.md").read_text()
    assert "prompt_messages" in card and f"path: train.{file_type}" in card


def test_trl_sft_min_reward_keeps_rows_at_or_above_it(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    result = _export(data, tmp_path / "sft", "trl-sft", min_reward=0.5)
    kept = [r for r in rows if _reward(r) is not None and _reward(r) >= 0.5]
    assert result.rows_out == len(_load(tmp_path / "sft", tmp_path)) == len(kept)
    assert result.left_out == {"reward below --min-reward (or none)": len(rows) - len(kept)}


def test_imitation_formats_leave_out_replies_cut_at_the_token_limit(tokenizer, tmp_path: Path) -> None:
    """A reply the engine cut at max_tokens is a half answer: the SFT formats would teach it as a finished
    turn, so they leave it out with its reason; triplets (RL data, engine ids) keep it."""
    from tests.export.conftest import snapshot_rows
    from tests.helpers.tiny_model import write_rows_snapshot

    rows = snapshot_rows(tokenizer)
    for i, row in enumerate(rows):
        row["finish_reason"] = ("length", "stop", "MAX_TOKENS", None)[i % 4]
    write_rows_snapshot(tmp_path / "data", rows)
    cut = {"length": sum(r["finish_reason"] == "length" for r in rows),
           "MAX_TOKENS": sum(r["finish_reason"] == "MAX_TOKENS" for r in rows)}
    expected = {f"response cut at the token limit (finish_reason {k})": n for k, n in cut.items()}
    for fmt in ("trl-sft", "openai-ft"):
        result = _export(tmp_path / "data", tmp_path / fmt, fmt)
        assert result.left_out == expected and result.rows_out == len(rows) - sum(cut.values()), result.left_out
    triplets = _export(tmp_path / "data", tmp_path / "triplets", "triplets")
    assert not any("cut" in reason for reason in triplets.left_out), triplets.left_out


def test_multimodal_prompt_text_in_trl_image_in_openai(snapshot, tmp_path: Path) -> None:
    data, _ = snapshot
    _export(data, tmp_path / "sft", "trl-sft")
    sft = {ex["rollout_id"]: ex for ex in _load(tmp_path / "sft", tmp_path)}
    assert sft["mm"]["messages"][0]["content"] == "What is in this picture?"
    _export(data, tmp_path / "oai", "openai-ft")
    lines = [json.loads(line) for line in (tmp_path / "oai" / "train.jsonl").read_text().splitlines()]
    parts = [m["content"] for ex in lines for m in ex["messages"] if isinstance(m.get("content"), list)]
    assert parts and parts[0][1]["image_url"]["url"] == IMAGE_URL


def test_trl_kto_label_is_reward_over_threshold(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    result = _export(data, tmp_path / "kto", "trl-kto", threshold=0.5)
    ds = _load(tmp_path / "kto", tmp_path)
    src = by_key(rows)
    assert len(ds) == len([r for r in rows if _reward(r) is not None])
    assert result.left_out == {"no reward": 1}
    for ex in ds:
        row = src[(ex["rollout_id"], ex["step"])]
        assert ex["label"] is (_reward(row) >= 0.5)
        assert ex["completion"][0]["role"] == "assistant"
        assert len(ex["prompt"]) == len(json.loads(row["prompt_messages"]))
    assert {ex["label"] for ex in ds} == {True, False}


def test_trl_dpo_pairs_only_identical_prompts(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    result = _export(data, tmp_path / "dpo", "trl-dpo")
    ds = _load(tmp_path / "dpo", tmp_path)
    src = by_key(rows)
    used: list[tuple[str, int]] = []
    for ex in ds:
        chosen, rejected = src[(ex["chosen_rollout_id"], ex["step"])], src[(ex["rejected_rollout_id"], ex["step"])]
        assert chosen["task_id"] == rejected["task_id"] == ex["task_id"]
        assert chosen["prompt_messages"] == rejected["prompt_messages"]
        assert chosen["tools"] == rejected["tools"]
        assert _reward(chosen) > _reward(rejected)
        assert chosen["response_message"] != rejected["response_message"]
        assert ex["chosen"][0]["content"] == json.loads(chosen["response_message"])["content"]
        used += [(chosen["rollout_id"], chosen["step"]), (rejected["rollout_id"], rejected["step"])]
    assert len(used) == len(set(used)), "a row was paired twice"
    # every rollout's second call answers the same prompt as its sibling's, with a different answer
    # and reward; the engine and text copies of task t0 share prompts, so t0 has two pairs
    assert len(ds) == result.rows_out == 4
    assert sum(result.left_out.values()) == len(rows) - 2 * len(ds)
    assert result.left_out["no reward"] == 1
    assert result.left_out["could not be paired: no other response to the same prompt"] == 1  # the image call


def test_openai_ft_lines_follow_the_documented_schema(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    _export(data, tmp_path / "oai", "openai-ft")
    lines = (tmp_path / "oai" / "train.jsonl").read_text().splitlines()
    assert len(lines) == len(rows)
    for line in lines:
        example = json.loads(line)
        check_example(example)
        weights = [m.get("weight") for m in example["messages"] if m["role"] == "assistant"]
        assert weights[-1] == 1 and all(w == 0 for w in weights[:-1])
        assert example["messages"][-1]["role"] == "assistant"
    tooled = sum(1 for r in rows if r["tools"])
    assert sum(1 for line in lines if '"tools"' in line) == tooled


def test_openai_ft_schema_check_can_fail() -> None:
    """The checker itself refuses what the documented schema refuses."""
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "weight": 1}]}
    check_example(good)
    for bad in ({"messages": [{"role": "user", "content": "hi"}]},
                {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]},
                {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x", "weight": 2}]},
                {"messages": [{"role": "tool", "content": "3"}, {"role": "assistant", "content": "x"}]},
                {**good, "tools": None}, {**good, "metadata": {}}):
        with pytest.raises(jsonschema.ValidationError):
            check_example(bad)


def test_triplets_carry_engine_ids_and_refuse_text_rows_without_tokenizer(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    result = _export(data, tmp_path / "trip", "triplets")
    ds = _load(tmp_path / "trip", tmp_path)
    engine = [r for r in rows if r["prompt_token_ids"]]
    assert len(ds) == len(engine)
    assert result.left_out == {"text only: pass --tokenizer PATH to render it": len(rows) - len(engine)}
    src = by_key(rows)
    for ex in ds:
        row = src[(ex["metadata"]["rollout_id"], ex["metadata"]["step"])]
        assert ex["prompt"]["token_ids"] == row["prompt_token_ids"]
        assert ex["response"]["token_ids"] == row["response_token_ids"]
        assert ex["reward"] == _reward(row)
        assert ex["metadata"]["agent_name"] == row["agent_name"]


def test_triplets_tokenizer_renders_text_rows_like_the_engine(snapshot, tiny_model: Path, tmp_path: Path) -> None:
    """Task t0's text-only copy renders to the very ids its engine copy carries (same template)."""
    data, rows = snapshot
    result = _export(data, tmp_path / "trip", "triplets", tokenizer=tiny_model)
    ds = _load(tmp_path / "trip", tmp_path)
    rendered = {(ex["metadata"]["rollout_id"], ex["metadata"]["step"]): ex for ex in ds
                if ex["metadata"]["token_source"] == "tokenizer"}
    text_rows = [r for r in rows if not r["prompt_token_ids"]]
    # the tiny template concatenates content as a string: the image prompt cannot be rendered
    assert result.left_out == {"tokenizer: chat template failed (TypeError)": 1}
    assert len(rendered) == len(text_rows) - 1 and ("mm", 0) not in rendered
    src = by_key(rows)
    for step in (0, 1):
        for r in (0, 1):
            ex = rendered[(f"text-t0-r{r}", step)]
            engine = src[(f"t0-r{r}", step)]
            assert ex["prompt"]["token_ids"] == engine["prompt_token_ids"]
            assert ex["response"]["token_ids"] == engine["response_token_ids"]
            assert ex["response"]["logprobs"] is None
