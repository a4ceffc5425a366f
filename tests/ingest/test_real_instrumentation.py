"""llm_calls / tool_calls over spans from REAL instrumentation libraries (openai-v2 default with log
events, openai-v2 latest-experimental SPAN_ONLY, OpenInference, Traceloop) driving the real openai
client against the fake server, exported over OTLP to the embedded collector, then ingested.
The lake must hold exactly what the server saw."""

from __future__ import annotations

import json

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import REAL_RUNS

CONVENTION = {"openai-v2": "genai_semconv_log_events", "openai-v2-latest": "genai_semconv_latest",
              "openai-v2-event": "genai_semconv_latest_log_event", "openai-v2-span-and-event": "genai_semconv_latest",
              "openinference": "openinference", "traceloop": "openllmetry"}


def norm_message(m: dict) -> dict:
    """Compare messages on what matters: role, text, tool calls (arguments parsed), tool_call_id."""
    calls = [{"id": tc["id"], "name": tc["function"]["name"], "arguments": json.loads(tc["function"]["arguments"])}
             for tc in (m.get("tool_calls") or [])]
    return {"role": m["role"], "content": m.get("content") or None, "tool_calls": calls,
            "tool_call_id": m.get("tool_call_id")}


def assert_holds_exchange(row: dict, req: dict, resp: dict) -> None:
    """An llm_calls row holds one call as the fake server saw it: model, token counts, the prompt's
    messages and the response message."""
    assert (row["model"], row["input_tokens"], row["output_tokens"]) == (
        req["model"], resp["usage"]["prompt_tokens"], resp["usage"]["completion_tokens"])
    assert [norm_message(m) for m in json.loads(row["input_messages"])] == [norm_message(m) for m in req["messages"]]
    assert norm_message(json.loads(row["output_message"])) == norm_message(resp["choices"][0]["message"])


@pytest.fixture(scope="module")
def calls(real_lake):
    data, exchanges, runs = real_lake
    con = connect(data)
    cols = [d[0] for d in con.execute("SELECT * FROM llm_calls LIMIT 0").description]
    rows = [dict(zip(cols, r, strict=True)) for r in con.execute("SELECT * FROM llm_calls").fetchall()]
    return con, rows, exchanges, runs


def test_one_row_per_call_the_server_answered(calls) -> None:
    _, rows, exchanges, runs = calls
    assert len(exchanges) == sum(r["calls"] for r in runs.values())
    assert sorted(r["response_id"] for r in rows) == sorted(resp["id"] for _, resp in exchanges)


@pytest.mark.parametrize("inst", [r[0] for r in REAL_RUNS if "," not in r[0]])
def test_llm_calls_hold_exactly_what_the_server_saw(calls, inst: str) -> None:
    _, rows, exchanges, runs = calls
    trace_id = runs[inst]["trace_id"]
    by_id = {r["response_id"]: r for r in rows if r["trace_id"] == trace_id}
    mine = [(req, resp) for req, resp in exchanges if resp["id"] in by_id]
    assert len(mine) == runs[inst]["calls"] == 2
    for req, resp in mine:
        row = by_id[resp["id"]]
        assert row["convention"] == CONVENTION[inst]
        assert_holds_exchange(row, req, resp)
        assert row["temperature"] == pytest.approx(req["temperature"])
        assert row["finish_reason"].startswith(resp["choices"][0]["finish_reason"].rstrip("s"))
        assert row["agent_name"] == f"agent-{inst}"
        assert row["status_code"] in ("UNSET", "OK")
        if inst in ("openinference", "traceloop") and req.get("tools"):
            assert json.loads(row["tools"]) == req["tools"]


def test_a_call_instrumented_twice_is_one_row(calls) -> None:
    con, rows, exchanges, runs = calls
    run = runs["openinference,openai-v2-latest"]
    (row,) = [r for r in rows if r["trace_id"] == run["trace_id"]]
    n_spans = con.execute("SELECT count(*) FROM spans WHERE trace_id = ? AND name IN ('ChatCompletion', 'chat fake-model')",
                          [run["trace_id"]]).fetchone()[0]
    assert n_spans == 2 and run["calls"] == 1
    assert row["convention"] in ("genai_semconv_latest", "openinference")
    req, resp = next((q, r) for q, r in exchanges if r["id"] == row["response_id"])
    assert [norm_message(m) for m in json.loads(row["input_messages"])] == [norm_message(m) for m in req["messages"]]
    assert row["input_tokens"] == resp["usage"]["prompt_tokens"]


def test_tool_calls_from_tool_spans_and_from_outputs(calls) -> None:
    con, rows, exchanges, runs = calls
    cols = ["trace_id", "span_id", "llm_span_id", "tool_name", "arguments", "result", "status_code", "error_type"]
    tools = {r[0]: dict(zip(cols, r, strict=True)) for r in con.execute(f"SELECT {', '.join(cols)} FROM tool_calls").fetchall()}
    asked = {r["trace_id"]: r for r in rows if r["output_message"] and "tool_calls" in r["output_message"]}
    question = "What is the weather in Paris?"
    # openai-v2: a real execute_tool span, linked to the call that asked for it
    t = tools[runs["openai-v2"]["trace_id"]]
    assert t["span_id"] is not None and t["tool_name"] == "get_weather"
    assert t["llm_span_id"] == asked[t["trace_id"]]["span_id"]
    assert json.loads(t["arguments"]) == {"query": question} and t["result"] == f"sunny in {question}"
    # traceloop run: the tool failed
    t = tools[runs["traceloop"]["trace_id"]]
    assert (t["status_code"], t["error_type"]) == ("ERROR", "ToolError")
    # openai-v2-latest: no tool span -> taken from the output and the next call's tool message
    t = tools[runs["openai-v2-latest"]["trace_id"]]
    assert t["span_id"] is None and t["llm_span_id"] == asked[t["trace_id"]]["span_id"]
    assert t["result"] == f"sunny in {question}" and t["status_code"] == "UNSET"
    assert runs["openinference"]["trace_id"] not in tools  # the multi-turn run used no tool


def test_log_records_carry_the_openai_v2_events(calls) -> None:
    con, _, _, runs = calls
    names = {r[0] for r in con.execute("SELECT DISTINCT event_name FROM logs WHERE trace_id = ?",
                                       [runs["openai-v2"]["trace_id"]]).fetchall()}
    assert {"gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message", "gen_ai.assistant.message"} <= names
