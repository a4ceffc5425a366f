"""``spanrl serve`` answers the Responses API and Anthropic's Messages API from the same pipeline as
chat completions, driven by the real SDKs (openai, anthropic, the OpenAI Agents SDK) on the tiny
random chat model. The random model never writes the tool format, so the tool tests force the
engine's output tokens (everything after the engine - parsing, the API shape, the SDK - is real).
One in-process server for the module; its spans go to an InMemorySpanExporter. Before these routes
existed both APIs were a 404.
"""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model

NAME = "tiny-chat"
TOOL_REPLY = 'Let me look.\n<tool_call>\n{"name": "lookup", "arguments": {"query": "Paris"}}\n</tool_call>'
RESPONSES_TOOL = {"type": "function", "name": "lookup", "description": "Look something up.",
                  "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
ANTHROPIC_TOOL = {"name": "lookup", "description": "Look something up.", "input_schema": RESPONSES_TOOL["parameters"]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    exporter = InMemorySpanExporter()
    model = make_tiny_model(tmp_path_factory.mktemp("model") / NAME)
    config = ServeConfig(model=model, data=tmp_path_factory.mktemp("data"), port=0, max_tokens=12, device="cpu")
    running = serve_in_background(config, span_exporter=exporter)
    yield running, exporter
    running.stop()


@pytest.fixture
def forced(served, monkeypatch: pytest.MonkeyPatch):
    """Make the engine 'sample' TOOL_REPLY; returns its token ids."""
    return _force(served, monkeypatch, TOOL_REPLY)


def _force(served, monkeypatch: pytest.MonkeyPatch, text: str) -> list[int]:
    engine = served[0].server.engine
    ids = engine.tokenizer(text, add_special_tokens=False)["input_ids"] + [engine.tokenizer.eos_token_id]

    def decode(seqs, *_callbacks) -> None:
        for s in seqs:
            s.output_ids, s.logprobs, s.raw_logprobs = list(ids), [0.0] * len(ids), [0.0] * len(ids)
            s.finish_reason = "stop"

    monkeypatch.setattr(engine, "_decode", decode)
    return ids


def _span(exporter: InMemorySpanExporter, response_id: str):
    (span,) = [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.response.id") == response_id]
    return span


def test_responses_api_with_a_tool_call_and_token_ids(served, forced) -> None:
    running, exporter = served
    client = openai.OpenAI(base_url=running.url + "/v1", api_key="x", max_retries=0)
    resp = client.responses.create(model=NAME, instructions="Be brief.", input="Where is Paris?", tools=[RESPONSES_TOOL],
                                   extra_body={"enable_response_messages": True})
    assert resp.status == "completed" and [o.type for o in resp.output] == ["message", "function_call"]
    assert resp.output[0].content[0].text == "Let me look."
    call = resp.output[1]
    assert call.name == "lookup" and json.loads(call.arguments) == {"query": "Paris"}
    span = _span(exporter, resp.id)  # one span, its id the Response's: a gateway in front joins it
    assert resp.model_extra["output_messages"][0]["tokens"] == forced == list(span.attributes["spanrl.response_token_ids"])
    assert resp.model_extra["input_messages"][0]["tokens"] == list(span.attributes["spanrl.prompt_token_ids"])
    assert resp.usage.input_tokens == len(span.attributes["spanrl.prompt_token_ids"])
    messages = json.loads(span.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["system", "user"]
    follow = client.responses.create(model=NAME, tools=[RESPONSES_TOOL], input=[
        {"role": "user", "content": "Where is Paris?"},
        {"type": "function_call", "call_id": call.call_id, "name": "lookup", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "in France"}])
    prompt = served[0].server.engine.tokenizer.decode(list(_span(exporter, follow.id).attributes["spanrl.prompt_token_ids"]))
    assert '"name": "lookup", "arguments": {"query": "Paris"}' in prompt and "in France" in prompt
    assert "input_messages" not in (follow.model_extra or {})  # not asked: not sent


def test_responses_api_streamed(served, forced) -> None:
    client = openai.OpenAI(base_url=served[0].url + "/v1", api_key="x", max_retries=0)
    events = list(client.responses.create(model=NAME, input="Where is Paris?", tools=[RESPONSES_TOOL], stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert text == final.output[0].content[0].text == "Let me look."
    assert json.loads(final.output[1].arguments) == {"query": "Paris"}


def test_agents_sdk_default_model_runs_on_serve(served, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Agents SDK's default model class (Responses API, streamed under the hood) against spanrl
    serve, no tools: the engine's text is the final output, one server span per run."""
    import asyncio

    _force(served, monkeypatch, "Hello back.")

    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    model = OpenAIResponsesModel(model=NAME, openai_client=openai.AsyncOpenAI(base_url=served[0].url + "/v1",
                                                                                api_key="x", max_retries=0))
    result = asyncio.run(Runner.run(Agent(name="solo", instructions="Be brief.", model=model), "Hello there"))
    span = _span(served[1], result.raw_responses[0].response_id)
    assert result.final_output == "Hello back."
    assert json.loads(span.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Hello back."


def test_anthropic_messages_with_a_tool_streamed_and_not(served, forced) -> None:
    running, exporter = served
    client = anthropic.Anthropic(base_url=running.url, api_key="x", max_retries=0)
    ask = {"model": NAME, "max_tokens": 64, "system": "Be brief.", "tools": [ANTHROPIC_TOOL],
           "messages": [{"role": "user", "content": "Where is Paris?"}]}
    message = client.messages.create(**ask)
    assert message.stop_reason == "tool_use" and [b.type for b in message.content] == ["text", "tool_use"]
    use = message.content[1]
    assert use.name == "lookup" and use.input == {"query": "Paris"}
    span = _span(exporter, message.id)
    assert list(span.attributes["spanrl.response_token_ids"]) == forced  # the server's span has the ids
    assert message.usage.input_tokens == len(span.attributes["spanrl.prompt_token_ids"])
    with client.messages.stream(**ask) as stream:
        streamed = stream.get_final_message()
    assert [b.model_dump() for b in streamed.content][1] | {"id": ""} == use.model_dump() | {"id": ""}
    assert streamed.content[0].text == "Let me look." and streamed.stop_reason == "tool_use"
    follow = client.messages.create(**{**ask, "messages": [
        *ask["messages"], {"role": "assistant", "content": [b.model_dump() for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "in France"}]}]})
    prompt = running.server.engine.tokenizer.decode(list(_span(exporter, follow.id).attributes["spanrl.prompt_token_ids"]))
    assert '"name": "lookup", "arguments": {"query": "Paris"}' in prompt and "in France" in prompt


def test_bad_requests_name_what_to_fix(served) -> None:
    client = openai.OpenAI(base_url=served[0].url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        client.responses.create(model=NAME, input="hi", previous_response_id="resp_1")
    with pytest.raises(anthropic.BadRequestError, match="role of user or assistant"):
        anthropic.Anthropic(base_url=served[0].url, api_key="x", max_retries=0).messages.create(
            model=NAME, max_tokens=8, messages=[{"role": "system", "content": "no"}])
