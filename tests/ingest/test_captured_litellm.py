"""LiteLLM's OpenTelemetry logger (recorded once from the real library:
tests/data/ingest/captured_litellm/record.sh), an instrumentation spanrl was not written against.
Its GenAI attributes lose assistant tool calls and tool-call ids and, inside an agent's span, land on
that span (every call made under it writing over the last); the raw_gen_ai_request child of each call
holds the provider request and response as Python literals. The lake must hold exactly what the
server saw, one row per call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest_captured, rows_of, stage2_connection
from tests.ingest.test_real_instrumentation import assert_holds_exchange

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured_litellm"


@pytest.fixture(scope="module")
def litellm_lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("litellm")
    s, exchanges = ingest_captured(CAPTURED, data)
    assert (s.rejects, s.spans) == (0, 10)  # 2 agent roots, 2 tool spans, 5 raw requests, 1 litellm_request
    return data, exchanges


def test_every_litellm_call_holds_what_the_server_saw(litellm_lake) -> None:
    data, exchanges = litellm_lake
    con = connect(data)
    rows = {r["response_id"]: r for r in rows_of(con, "SELECT * FROM llm_calls")}
    assert len(rows) == len(exchanges) == 5
    for req, resp in exchanges:
        row = rows[resp["id"]]
        assert row["convention"] == "litellm"
        assert row["provider"] == "openai"
        assert_holds_exchange(row, req, resp)
        assert json.loads(row["tools"] or "null") == req.get("tools")
        assert row["restored_messages"] == 0
    assert json.loads(rows["chatcmpl-5"]["input_messages"])[0]["content"] == "it's \"quoted\" and it's None"


def test_litellm_rollouts(litellm_lake) -> None:
    data, _ = litellm_lake
    con = stage2_connection(data)
    got = sorted((r["task_id"] if r["task_id"].startswith("add") else "msg", r["final_reward"], r["n_llm_calls"],
                  r["n_tool_calls"]) for r in rows_of(con, "SELECT * FROM rollouts"))
    assert got == [("add-0", 1.0, 2, 1), ("add-1", 0.0, 2, 1), ("msg", None, 1, 0)]
