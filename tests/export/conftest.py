"""A snapshot with every shape the exports must handle, written with the real snapshot writer.

- 3 tasks x 2 rollouts x 2 calls with engine token ids (``tiny_rollout_rows``): the first calls of a
  task's rollouts answer the same prompt with the same tool call; the second calls answer the same
  prompt differently (rollout r1 right, reward 1; r0 wrong, reward 0);
- task t0 again, text only (no token ids), as rollouts ``text-t0-r*``;
- one single-call rollout whose user message is multimodal (a text part and an image part);
- one rollout without any reward.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, transition_row, write_rows_snapshot

IMAGE_URL = "https://example.com/cat.png"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def snapshot_rows(tokenizer) -> list[dict]:
    rows = tiny_rollout_rows(tokenizer)
    for row in tiny_rollout_rows(tokenizer, n_tasks=1, engine=False):
        row["rollout_id"] = "text-" + row["rollout_id"]
        rows.append(row)
    prompt = [{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                           {"type": "image_url", "image_url": {"url": IMAGE_URL}}]}]
    rows.append(transition_row(rollout_id="mm", task_id="mm", trace_id="f" * 32, span_id="e" * 16, agent_name="viewer",
                               prompt_messages=json.dumps(prompt), response_message=json.dumps(
                                   {"role": "assistant", "content": "A cat."}), final_reward=1.0,
                               **{"return": 1.0}, advantage=0.0))
    rows.append(transition_row(rollout_id="unrewarded", task_id="u", prompt_messages=json.dumps(
        [{"role": "user", "content": "hi"}]), response_message=json.dumps({"role": "assistant", "content": "hello"})))
    return rows


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory: pytest.TempPathFactory, tokenizer) -> tuple[Path, list[dict]]:
    """(data root, the rows written): tests compare exports against these rows, not constants."""
    data = tmp_path_factory.mktemp("data")
    rows = snapshot_rows(tokenizer)
    write_rows_snapshot(data, rows)
    return data, rows


def by_key(rows: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["rollout_id"], r["step"]): r for r in rows}
