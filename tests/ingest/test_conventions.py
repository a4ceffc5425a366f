"""llm_calls normalisation of the conventions we cannot produce with a real library here (LangSmith,
Vercel AI SDK, Logfire, old OpenLLMetry, Strands span events, token-id spans), from hand-made spans
written like each producer documents them; plus dedupe of a call recorded twice and agent_name."""

from __future__ import annotations

import json

import pytest

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import T0, new_span_id, new_trace_id, span, trace_line, write_lines

WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
EXPECTED_INPUT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
    {"role": "tool", "content": "rainy", "tool_call_id": "c1"},
]
EXPECTED_OUTPUT = {"role": "assistant", "content": "It is rainy."}


def _root(tid: str, rid: str, name: str = "invoke_agent planner", **attrs) -> dict:
    return span(name, tid, rid, attrs={"gen_ai.operation.name": "invoke_agent", **attrs})


def build_lines() -> tuple[list[str], dict[str, str]]:
    """One trace per convention; returns the lines and {convention: trace_id}."""
    lines, traces = [], {}

    def add(conv: str, llm_attrs: dict, name: str = "llm", events=None, extra=()) -> None:
        tid, root, sid = new_trace_id(), new_span_id(), new_span_id()
        traces[conv] = tid
        lines.append(trace_line([_root(tid, root, **{"gen_ai.agent.name": "planner"}),
                                 span(name, tid, sid, parent=root, kind=3, start=T0 + 10, attrs=llm_attrs, events=events),
                                 *[f(tid, root, sid) for f in extra]], service=conv))

    add("openllmetry", {
        "gen_ai.system": "openai", "llm.request.type": "chat", "gen_ai.request.model": "gpt-x",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in Paris?",
        "gen_ai.prompt.2.role": "assistant", "gen_ai.prompt.2.tool_calls.0.id": "c1",
        "gen_ai.prompt.2.tool_calls.0.name": "get_weather", "gen_ai.prompt.2.tool_calls.0.arguments": '{"city":"Paris"}',
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "rainy", "gen_ai.prompt.3.tool_call_id": "c1",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "It is rainy.",
        "gen_ai.completion.0.finish_reason": "stop", "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": "Weather.",
        "llm.request.functions.0.parameters": json.dumps(WEATHER_TOOL["function"]["parameters"]),
        "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 4}, name="openai.chat")
    add("langsmith", {
        "langsmith.span.kind": "llm", "gen_ai.request.model": "gpt-x", "gen_ai.usage.input_tokens": 30,
        "gen_ai.prompt": json.dumps({"messages": [[
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "SystemMessage"], "kwargs": {"content": "Be brief."}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"], "kwargs": {"content": "Weather in Paris?"}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
             "kwargs": {"content": "", "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
             "kwargs": {"content": "rainy", "tool_call_id": "c1"}}]]}),
        "gen_ai.completion": json.dumps({"generations": [[{"text": "It is rainy.", "message": {
            "lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": "It is rainy."}}}]]})})
    add("vercel_ai", {
        "ai.model.id": "gpt-x", "ai.model.provider": "openai.chat", "ai.usage.promptTokens": 30, "ai.usage.completionTokens": 4,
        "ai.prompt.messages": json.dumps([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Paris"}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather", "result": "rainy"}]}]),
        "ai.prompt.tools": [json.dumps({"type": "function", "name": "get_weather", "description": "Weather.",
                                        "parameters": WEATHER_TOOL["function"]["parameters"]})],
        "ai.response.text": "It is rainy.", "ai.response.finishReason": "stop"}, name="ai.generateText.doGenerate")
    add("logfire", {
        "logfire.span_type": "span", "logfire.msg_template": "Chat Completion with {request_data[model]!r}",
        "request_data": json.dumps({"model": "gpt-x", "temperature": 0.2, "tools": [WEATHER_TOOL], "messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "rainy"}]}),
        "response_data": json.dumps({"message": {"role": "assistant", "content": "It is rainy."},
                                     "usage": {"prompt_tokens": 30, "completion_tokens": 4}})}, name="Chat Completion with 'gpt-x'")
    add("genai_semconv_span_events", {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents",
                                      "gen_ai.request.model": "gpt-x"}, name="chat", events=[
        ("gen_ai.system.message", {"content": '[{"text": "Be brief."}]'}),
        ("gen_ai.user.message", {"content": '[{"text": "Weather in Paris?"}]'}),
        ("gen_ai.assistant.message", {"tool_calls": json.dumps(EXPECTED_INPUT[2]["tool_calls"])}),
        ("gen_ai.tool.message", {"content": "rainy", "id": "c1"}),
        ("gen_ai.choice", {"message": '[{"text": "It is rainy."}]', "finish_reason": "end_turn"})])
    return lines, traces


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("conv")
    lines, traces = build_lines()
    # a call recorded twice: OpenInference outer span + openai-v2 inner span, and a serving engine's
    # span (child, same response id) that adds token ids
    tid, root, outer, inner, server = new_trace_id(), new_span_id(), new_span_id(), new_span_id(), new_span_id()
    traces["twice"] = tid
    lines.append(trace_line([
        span("agent", tid, root, attrs={"openinference.span.kind": "AGENT"}),
        span("ChatCompletion", tid, outer, parent=root, start=T0 + 1, attrs={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-x",
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi",
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "hello",
            "output.value": json.dumps({"id": "resp-1"}), "output.mime_type": "application/json"}),
        span("chat gpt-x", tid, inner, parent=outer, kind=3, start=T0 + 2, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x", "gen_ai.response.id": "resp-1",
            "gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1, "gen_ai.request.temperature": 0.0}),
    ], service="client"))
    lines.append(trace_line([span("chat gpt-x", tid, server, parent=inner, kind=2, start=T0 + 3, attrs={
        "gen_ai.operation.name": "chat", "gen_ai.response.id": "resp-1", "gen_ai.request.temperature": 0.9,
        "spanrl.prompt_token_ids": [1, 2, 3],
        "spanrl.response_token_ids": [4, 5], "spanrl.response_logprobs": [-0.5, -0.25]})], service="engine"))
    # a traceloop agent and a tool span without a call id (linked to its call by order)
    tid2, agent, call, tool = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    traces["traceloop_agent"] = tid2
    lines.append(trace_line([
        span("researcher.agent", tid2, agent, attrs={"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"}),
        span("openai.chat", tid2, call, parent=agent, start=T0 + 1, attrs={
            "llm.request.type": "chat", "gen_ai.request.model": "m", "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "look up", "gen_ai.completion.0.tool_calls.0.name": "search",
            "gen_ai.completion.0.tool_calls.0.arguments": "{}"}),
        span("search.tool", tid2, tool, parent=agent, start=T0 + 2_000_000, status=2, attrs={
            "traceloop.span.kind": "tool", "traceloop.entity.name": "search", "traceloop.entity.input": "{}",
            "traceloop.entity.output": "nothing"}),
    ], service="tl"))
    # Agent Lightning's plain token-id attributes on a span no other convention claims
    tid3 = new_trace_id()
    traces["agent_lightning"] = tid3
    lines.append(trace_line([span("vllm.completion", tid3, new_span_id(), attrs={
        "prompt_token_ids": [7, 8], "response_token_ids": [9], "gen_ai.response.id": "al-1"})], service="al"))
    write_lines(data / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", lines)
    assert ingest(data).rejects == 0
    con = connect(data)
    cols = [d[0] for d in con.execute("SELECT * FROM llm_calls LIMIT 0").description]
    rows = {}
    for r in con.execute("SELECT * FROM llm_calls").fetchall():
        row = dict(zip(cols, r, strict=True))
        rows.setdefault(row["trace_id"], []).append(row)
    return con, rows, traces


@pytest.mark.parametrize("conv", ["openllmetry", "langsmith", "vercel_ai", "logfire", "genai_semconv_span_events"])
def test_convention_is_normalised_to_openai_chat(lake, conv: str) -> None:
    _, rows, traces = lake
    (row,) = rows[traces[conv]]
    assert row["convention"] == conv
    got = json.loads(row["input_messages"])
    for m in got:  # arguments: same JSON, whatever the spacing
        for tc in m.get("tool_calls", []):
            tc["function"]["arguments"] = json.loads(tc["function"]["arguments"])
    expected = json.loads(json.dumps(EXPECTED_INPUT))
    expected[2]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    for m in got:
        m["content"] = m.get("content") or None
    assert got == expected
    assert json.loads(row["output_message"]) == EXPECTED_OUTPUT
    assert row["agent_name"] == "planner" and row["model"] == "gpt-x"
    if conv in ("openllmetry", "vercel_ai", "logfire"):
        assert json.loads(row["tools"])[0]["function"]["name"] == "get_weather"
        assert row["input_tokens"] == 30
    if conv == "logfire":
        assert row["temperature"] == pytest.approx(0.2) and row["output_tokens"] == 4


def test_a_call_recorded_twice_is_one_row_with_engine_token_ids(lake) -> None:
    _, rows, traces = lake
    (row,) = rows[traces["twice"]]
    assert row["convention"] == "openinference" and row["response_id"] == "resp-1"
    assert json.loads(row["input_messages"]) == [{"role": "user", "content": "hi"}]
    assert row["prompt_token_ids"] == [1, 2, 3] and row["response_token_ids"] == [4, 5]
    assert row["response_logprobs"] == pytest.approx([-0.5, -0.25])
    assert row["agent_name"] == "agent" and row["input_tokens"] == 1
    assert row["temperature"] == pytest.approx(0.9)  # the engine sampled at 0.9 (a forced temperature), not 0


def test_traceloop_agent_and_tool_linked_by_order(lake) -> None:
    con, rows, traces = lake
    (row,) = rows[traces["traceloop_agent"]]
    assert row["agent_name"] == "researcher"
    tools = con.execute("SELECT span_id, llm_span_id, tool_name, result, status_code FROM tool_calls WHERE trace_id = ?",
                        [traces["traceloop_agent"]]).fetchall()
    assert len(tools) == 1 and tools[0][1:] == (row["span_id"], "search", "nothing", "ERROR")


def test_agent_lightning_token_ids_alone_are_a_call(lake) -> None:
    _, rows, traces = lake
    (row,) = rows[traces["agent_lightning"]]
    assert row["convention"] == "token_ids" and row["input_messages"] is None
    assert (row["prompt_token_ids"], row["response_token_ids"], row["response_id"]) == ([7, 8], [9], "al-1")


def test_openllmetry_list_content_is_text_but_a_bracketed_message_stays(tmp_path) -> None:
    """OpenLLMetry writes list content (multimodal parts, Anthropic blocks) as JSON text of typed
    blocks; the message content is their text. A user message that merely looks like JSON stays."""
    blocks = json.dumps([{"type": "text", "text": "Weather in "}, {"type": "image_url", "image_url": {"url": "x"}},
                         {"type": "text", "text": "Paris?"}])
    tid, sid = new_trace_id(), new_span_id()
    write_lines(tmp_path / "otel" / "traces.jsonl", [trace_line([span("openai.chat", tid, sid, kind=3, attrs={
        "gen_ai.system": "openai", "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": blocks,
        "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": "[1, 2, 3]",
        "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": '[{"a": 1}]',
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": json.dumps([{"type": "text", "text": "Rainy."}])})])])
    ingest(tmp_path)
    (row,) = connect(tmp_path).execute("SELECT input_messages, output_message FROM llm_calls").fetchall()
    assert [m["content"] for m in json.loads(row[0])] == ["Weather in Paris?", "[1, 2, 3]", '[{"a": 1}]']
    assert json.loads(row[1]) == {"role": "assistant", "content": "Rainy."}
