"""OpenLIT (recorded once from the real library: tests/data/ingest/captured_openlit/record.sh), an
instrumentation spanrl was not written against. It writes GenAI >= 1.37 content on the span and as
log events, but (a) repeats the system prompt in gen_ai.system_instructions AND gen_ai.input.messages
and (b) leaves the assistant's tool-call message out of the next call's gen_ai.input.messages. The
lake must still hold exactly what the server saw; the repair of (b) is counted, not silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest_captured, rows_of, stage2_connection
from tests.ingest.test_real_instrumentation import assert_holds_exchange

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured_openlit"


@pytest.fixture(scope="module")
def openlit_lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("openlit")
    s, exchanges = ingest_captured(CAPTURED, data)
    assert (s.rejects, s.spans, s.logs) == (0, 14, 7)  # 4 roots, 7 chat calls, 3 tool spans; one log event a call
    return data, exchanges


def test_every_openlit_call_holds_what_the_server_saw(openlit_lake) -> None:
    data, exchanges = openlit_lake
    con = connect(data)
    rows = {r["response_id"]: r for r in rows_of(con, "SELECT * FROM llm_calls")}
    assert len(rows) == len(exchanges) == 7
    for req, resp in exchanges:
        row = rows[resp["id"]]
        assert row["convention"] == "genai_semconv_latest"
        assert_holds_exchange(row, req, resp)
        assert json.loads(row["tools"] or "null") == req.get("tools")
        # OpenLIT left the assistant's tool call out of every prompt that answers one: restored, and counted
        answers = sum(m["role"] == "tool" for m in req["messages"])
        assert row["restored_messages"] == (1 if answers else 0)


def test_openlit_rollouts_tasks_and_rewards(openlit_lake) -> None:
    data, _ = openlit_lake
    con = stage2_connection(data)
    got = {(r["task_id"], tuple(r["agent_names"]), r["final_reward"], r["n_llm_calls"], r["n_tool_calls"])
           for r in rows_of(con, "SELECT * FROM rollouts")}
    assert got == {("add-0", ("calc",), 1.0, 2, 1), ("add-1", ("calc",), 0.0, 2, 1), ("add-2", ("calc",), 1.0, 2, 1),
                   ("echo-0", ("echo",), 1.0, 1, 0)}


def test_openlit_restorations_are_reported_by_the_build(openlit_lake) -> None:
    """The build summary (and the snapshot's stats) name the restored messages: 3, one per tool round."""
    data, _ = openlit_lake
    from spanrl.transitions.build import build_transitions
    from spanrl.transitions.config import IngestConfig

    result = build_transitions(IngestConfig(data=data, settle_s=0, threads=2))
    assert result.stats["prompt_messages_restored"] == 3
