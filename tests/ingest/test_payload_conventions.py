"""llm_calls convention `payload`: LLM spans that carry the whole request / response body as JSON
(OpenInference input.value / output.value only, Langfuse v3 generations, MLflow CHAT_MODEL spans,
Google ADK call_llm, pydantic-ai instrumentation v1 `events`), with OpenAI chat, Responses API,
Anthropic and Gemini bodies. Fixtures: tests/data/ingest/payload/ (README.md says where each shape
comes from); the expected rows below are written out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import T0, new_span_id, new_trace_id, span, trace_line, write_lines

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "ingest" / "payload"
TOOL_PARAMS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": TOOL_PARAMS}}]
ARGS = {"city": "Paris"}


def _call(cid: str) -> list[dict]:
    return [{"id": cid, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}]


def _conversation(cid: str, assistant_text: str | None = None, tool_text: str = "rainy") -> list[dict]:
    """The weather conversation every fixture records, in OpenAI chat shape (arguments parsed)."""
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": assistant_text, "tool_calls": _call(cid)},
            {"role": "tool", "content": tool_text, "tool_call_id": cid}]


RAINY = {"role": "assistant", "content": "It is rainy."}
GEMINI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}}]
# fixture -> (input_messages, output_message, tools, model, input_tokens, output_tokens, finish_reason,
#             temperature, response_id)
EXPECTED = {
    "openinference_anthropic": (_conversation("toolu_1", "Let me check."), RAINY, WEATHER_TOOLS, "claude-x", 30, 4,
                                "end_turn", 0.2, "msg_01"),
    "openinference_gemini": ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
                             {"role": "assistant", "content": None, "tool_calls": _call("get_weather")}, WEATHER_TOOLS,
                             "gemini-2.0-flash-001", 30, 4, "STOP", 0.2, "gem-resp-1"),
    "openinference_responses": (_conversation("c1"), RAINY, WEATHER_TOOLS, "gpt-x", 30, 4, None, 0.2, "resp_1"),
    "langfuse_generation": (_conversation("c1"), RAINY, WEATHER_TOOLS, "gpt-x", 30, 4, None, 0.2, None),
    "mlflow_chat_model": (_conversation("c1"), RAINY, WEATHER_TOOLS, "gpt-x", 30, 4, "stop", 0.2, "chatcmpl-1"),
    "google_adk": (_conversation("adk-1", tool_text='{"result":"rainy"}'), RAINY, GEMINI_TOOLS, "gemini-2.0-flash", 30, 34,
                   "STOP", 0.2, None),
    "pydantic_ai_v1": (_conversation("c1"), RAINY, WEATHER_TOOLS, "gpt-x", 30, 4, None, 0.2, None),
}


def _parsed(msg: dict | None) -> dict | None:
    """A message with its tool-call arguments parsed (same JSON whatever the spacing)."""
    if msg is None:
        return None
    msg = dict(msg)
    if "tool_calls" in msg:
        msg["tool_calls"] = [{**tc, "function": {**tc["function"], "arguments": json.loads(tc["function"]["arguments"])}}
                             for tc in msg["tool_calls"]]
    return msg


def _fixture_lines(name: str) -> tuple[str, list[str]]:
    """The fixture's spans as one trace (first span = the call, the others its children)."""
    doc = json.loads((FIXTURES / f"{name}.json").read_text())
    tid, root = new_trace_id(), new_span_id()
    spans = [span(s["name"], tid, root if i == 0 else new_span_id(), parent=None if i == 0 else root, kind=3 if i == 0 else 1,
                  start=T0 + 10 * i, attrs=s["attributes"]) for i, s in enumerate(doc["spans"])]
    return tid, [trace_line(spans, service=name)]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("payload")
    lines, traces = [], {}
    for name in EXPECTED:
        traces[name], more = _fixture_lines(name)
        lines += more

    def add(key: str, spans_attrs: list[tuple[str, dict]]) -> None:
        tid, root = new_trace_id(), new_span_id()
        traces[key] = tid
        lines.append(trace_line([span(n, tid, root if i == 0 else new_span_id(), parent=None if i == 0 else root,
                                      start=T0 + i, attrs=a) for i, (n, a) in enumerate(spans_attrs)], service=key))

    body = json.dumps({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]})
    out = json.dumps({"id": "cc-9", "choices": [{"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]})
    # OpenInference with flattened messages AND input.value: the openinference convention's row, alone
    add("both", [("ChatCompletion", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x",
                                     "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi",
                                     "llm.output_messages.0.message.role": "assistant",
                                     "llm.output_messages.0.message.content": "hello",
                                     "input.value": body, "input.mime_type": "application/json", "output.value": out,
                                     "output.mime_type": "application/json"})])
    # non-LLM OpenInference spans with bodies are not calls
    add("chain", [("RunnableSequence", {"openinference.span.kind": "CHAIN", "input.value": body, "output.value": out}),
                  ("get_weather", {"openinference.span.kind": "TOOL", "input.value": '{"city": "Paris"}', "output.value": "rainy"})])
    # malformed bodies: the call is kept, its messages are NULL
    add("broken", [("generation", {"langfuse.observation.type": "generation", "langfuse.observation.model.name": "gpt-x",
                                   "langfuse.observation.input": '{"messages": [{"role": "user", "content": "hi"',
                                   "langfuse.observation.output": "[not json"})])
    add("broken_oi", [("llm", {"openinference.span.kind": "LLM", "input.value": "{oops", "input.mime_type": "application/json"})])
    # a Langfuse span that is not a generation, an MLflow tool span: not calls
    add("not_llm", [("retrieve", {"langfuse.observation.type": "span", "langfuse.observation.input": body}),
                    ("tool", {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": '{"city": "Paris"}'})])
    write_lines(data / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", lines)
    assert ingest(data).rejects == 0
    con = connect(data)
    cols = [d[0] for d in con.execute("SELECT * FROM llm_calls LIMIT 0").description]
    rows: dict[str, list[dict]] = {}
    for r in con.execute("SELECT * FROM llm_calls").fetchall():
        row = dict(zip(cols, r, strict=True))
        rows.setdefault(row["trace_id"], []).append(row)
    return con, rows, traces


@pytest.mark.parametrize("name", list(EXPECTED))
def test_body_is_normalised_to_openai_chat(lake, name: str) -> None:
    _, rows, traces = lake
    (row,) = rows[traces[name]]  # one call (ADK's tool span is not one)
    inputs, output, tools, model, tin, tout, finish, temp, rid = EXPECTED[name]
    assert row["convention"] == "payload"
    assert [_parsed(m) for m in json.loads(row["input_messages"])] == inputs
    assert _parsed(json.loads(row["output_message"])) == output
    assert (json.loads(row["tools"]) if row["tools"] else None) == tools
    assert (row["model"], row["input_tokens"], row["output_tokens"]) == (model, tin, tout)
    assert row["finish_reason"] == finish and row["response_id"] == rid
    assert row["temperature"] == pytest.approx(temp)


def test_flattened_openinference_messages_win_and_stay_one_row(lake) -> None:
    _, rows, traces = lake
    (row,) = rows[traces["both"]]
    assert row["convention"] == "openinference" and row["response_id"] == "cc-9"
    assert json.loads(row["input_messages"]) == [{"role": "user", "content": "hi"}]


def test_spans_that_are_not_llm_calls_are_not_rows(lake) -> None:
    _, rows, traces = lake
    assert traces["chain"] not in rows and traces["not_llm"] not in rows


def test_malformed_bodies_give_null_messages_not_errors(lake) -> None:
    _, rows, traces = lake
    (row,) = rows[traces["broken"]]
    assert (row["convention"], row["model"]) == ("payload", "gpt-x")
    assert row["input_messages"] is None and row["output_message"] is None
    (oi,) = rows[traces["broken_oi"]]  # openinference's own (empty) row: no messages from the body
    assert not json.loads(oi["input_messages"] or "[]")


def test_payload_view_names_its_source(lake) -> None:
    con, _, traces = lake
    got = dict(con.execute("SELECT trace_id, payload_source FROM llm_calls_payload").fetchall())
    assert got[traces["google_adk"]] == "google_adk" and got[traces["pydantic_ai_v1"]] == "pydantic_ai"
    assert got[traces["mlflow_chat_model"]] == "mlflow" and got[traces["langfuse_generation"]] == "langfuse"
    assert got[traces["openinference_gemini"]] == "openinference"


@pytest.fixture(scope="module")
def real_hidden_messages(tmp_path_factory):
    """The real openinference-instrumentation-openai with OPENINFERENCE_HIDE_INPUT_MESSAGES /
    HIDE_OUTPUT_MESSAGES: its LLM spans keep only input.value / output.value (the request and the
    ChatCompletion as JSON). Returns (connection, trace id, what the fake server saw)."""
    import os
    import subprocess
    import sys

    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI
    from tests.ingest.conftest import AGENT, ROOT

    data = tmp_path_factory.mktemp("payload_real") / "data"
    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT),
                   OPENINFERENCE_HIDE_INPUT_MESSAGES="true", OPENINFERENCE_HIDE_OUTPUT_MESSAGES="true")
        proc = subprocess.run([sys.executable, str(AGENT), "--base-url", fake.url, "--instrumentation", "openinference",
                               "--scenario", "tools", "--service", "hidden"], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        exchanges = list(fake.exchanges)
    assert ingest(data).rejects == 0
    return connect(data), json.loads(proc.stdout.strip().splitlines()[-1])["trace_id"], exchanges


def test_real_openinference_spans_without_flattened_messages(real_hidden_messages) -> None:
    con, trace_id, exchanges = real_hidden_messages
    a = json.loads(con.execute("SELECT attributes FROM spans WHERE name = 'ChatCompletion' LIMIT 1").fetchone()[0])
    assert "input.value" in a and not any(k.startswith("llm.input_messages.") for k in a)  # the library hid them
    rows = con.execute("SELECT convention, input_messages, output_message, tools, model, input_tokens, output_tokens, "
                       "finish_reason, response_id FROM llm_calls WHERE trace_id = ? ORDER BY start_ns", [trace_id]).fetchall()
    assert len(rows) == len(exchanges) == 2
    for (conv, ins, out, tools, model, tin, tout, finish, rid), (request, response) in zip(rows, exchanges, strict=True):
        choice = response["choices"][0]
        assert conv == "payload" and model == request["model"] and rid == response["id"]
        assert [_parsed(m) for m in json.loads(ins)] == [_parsed({k: v for k, v in m.items() if v is not None or k == "content"})
                                                        for m in request["messages"]]
        assert _parsed(json.loads(out)) == _parsed({"role": "assistant", "content": choice["message"].get("content"),
                                                    **({"tool_calls": choice["message"]["tool_calls"]}
                                                       if choice["message"].get("tool_calls") else {})})
        assert json.loads(tools) == request["tools"] and finish == choice["finish_reason"]
        assert (tin, tout) == (response["usage"]["prompt_tokens"], response["usage"]["completion_tokens"])
