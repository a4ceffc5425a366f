"""``spanrl gateway`` records the Responses API and Anthropic's Messages API, passes every other route
through: ``spanrl rollout --policy-url <gateway>`` runs an OpenAI Agents SDK agent with its default
model (Responses API; a handoff and a tool) and an Anthropic SDK agent with a tool, each solving its
task non-streamed, then streamed, in front of a local upstream speaking those APIs
(tests/helpers/fake_apis.py); then direct calls (a ``previous_response_id`` chain, a text completion,
an embedding) and one ``spanrl ingest``. Before these routes existed every call of both agents was a
404 of the gateway's own and the agents failed.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import openai
import pytest

from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.gateway.test_gateway import _ends, _rollout
from tests.helpers.fake_apis import FakeApis
from tests.rollout.lake import ingest, query_spans

HERE = Path(__file__).parent
AGENTS_SDK = [sys.executable, str(HERE / "agents_sdk_agent.py")]
ANTHROPIC = [sys.executable, str(HERE / "anthropic_agent.py")]
TASKS = [{"task_id": "paris", "input": "capital of France"}]
QUESTIONS = ["capital of France", "stream capital of France"]  # each agent asks both, the second streamed
ROWS = """
    SELECT c.response_id, c.input_messages, c.output_message, c.tools, c.prompt_token_ids, c.response_token_ids,
           c.input_tokens, c.output_tokens, s.attributes->>'spanrl.rollout_id' AS rid,
           s.attributes->>'spanrl.gateway.api' AS api, s.attributes->>'spanrl.token_source' AS source,
           s.attributes->>'spanrl.gateway.prompt_unknown' AS unknown
    FROM llm_calls c JOIN spans s USING (trace_id, span_id) WHERE s.scope_name = 'spanrl.gateway'"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("gateway_apis") / "data"
    data.mkdir()
    tasks = data.parent / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    with FakeApis() as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, data=data, port=0))
        other = None
        try:
            runs = {"agents": _rollout(data, tasks, gw.url + "/v1", AGENTS_SDK)}
            n_responses = len(upstream.calls["responses"])
            runs["anthropic"] = _rollout(data, tasks, gw.url + "/v1", ANTHROPIC)
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
            first = client.responses.create(model="policy", instructions="Be brief.", input="first question")
            second = client.responses.create(model="policy", previous_response_id=first.id, input="second question")
            # a gateway that did not serve the chain (as after a restart): the upstream knows it, the gateway not
            other = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0, otlp=gw.gateway.otlp_url))
            third = openai.OpenAI(base_url=other.url + "/v1", api_key="x", max_retries=0).responses.create(
                model="policy", previous_response_id=second.id, input="third question")
            completion = client.completions.create(model="policy", prompt="complete this")
            streamed = list(client.completions.create(model="policy", prompt="stream this", stream=True))
            embedding = client.embeddings.create(model="embed", input="a sentence to embed")
        finally:
            if other is not None:
                other.stop()
            gw.stop()
    ingest(data, "--missing-reward", "zero")
    rows = query_spans(data, ROWS)
    for row in rows:
        for key in ("input_messages", "output_message", "tools"):
            row[key] = json.loads(row[key]) if row[key] else None
    yield {"data": data, "runs": runs, "rows": {r["response_id"]: r for r in rows}, "n_rows": len(rows),
           "up": upstream, "n_responses": n_responses, "gateway": gw.gateway, "other": other.gateway,
           "chain": (first, second, third), "completion": completion, "streamed": streamed, "embedding": embedding}


def _mine(lake, command: list[str], api: str) -> tuple[set[str], list[dict]]:
    assert lake["runs"][api if api == "anthropic" else "agents"].exit_code == 0
    ends = _ends(lake["data"], command)
    assert [e["status"] for e in ends] == ["ok"], ends
    mine = {e["rollout_id"] for e in ends}
    return mine, [r for r in lake["rows"].values() if r["rid"] in mine]


def _calls(row: dict) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in (row["output_message"] or {}).get("tool_calls") or []]


def test_agents_sdk_default_model_calls_are_rows_of_the_runners_rollouts(lake) -> None:
    mine, rows = _mine(lake, AGENTS_SDK, "agents")
    sent = lake["up"].calls["responses"][:lake["n_responses"]]
    assert len(sent) == 6 and sum(1 for req, _ in sent if req.get("stream")) == 3
    assert len(rows) == len(sent) and {r["api"] for r in rows} == {"responses"}  # one row per upstream request
    assert {r["response_id"] for r in rows} == {resp["id"] for _, resp in sent}
    assert {rid: sum(r["rid"] == rid for r in rows) for rid in mine} == {rid: 6 for rid in mine}
    for req, resp in sent:
        row = lake["rows"][resp["id"]]
        assert row["input_messages"][0] == {"role": "system", "content": req["instructions"]}
        assert row["output_message"]["role"] == "assistant"
        # engine ids: the upstream's (vLLM's enable_response_messages fields), streamed calls too
        assert list(row["prompt_token_ids"]) == resp["input_messages"][0]["tokens"] and row["source"] == "engine"
        assert list(row["response_token_ids"]) == resp["output_messages"][0]["tokens"]
        assert (row["input_tokens"], row["output_tokens"]) == (resp["usage"]["input_tokens"], resp["usage"]["output_tokens"])
    for question in QUESTIONS:
        task_rows = [r for r in rows if {"role": "user", "content": question} in r["input_messages"]]
        calls = [c for r in task_rows for c in _calls(r)]
        assert calls == [("transfer_to_solver", {}), ("lookup", {"query": question})]
        last = max(task_rows, key=lambda r: len(r["input_messages"]))
        assert last["input_messages"][-1]["role"] == "tool" and last["input_messages"][-1]["content"] == f"found {question}"
        assert last["output_message"]["content"] == f"Tool said: found {question}"
        assert any(t["function"]["name"] == "lookup" for t in last["tools"])


def test_anthropic_sdk_calls_are_rows_of_the_runners_rollouts(lake) -> None:
    mine, rows = _mine(lake, ANTHROPIC, "anthropic")
    sent = lake["up"].calls["messages"]
    assert len(sent) == 4 and sum(1 for req, _ in sent if req.get("stream")) == 2
    assert len(rows) == len(sent) and {r["api"] for r in rows} == {"messages"}
    assert {rid: sum(r["rid"] == rid for r in rows) for rid in mine} == {rid: 4 for rid in mine}
    for req, resp in sent:
        row = lake["rows"][resp["id"]]
        assert row["input_messages"][0] == {"role": "system", "content": req["system"]}
        assert row["source"] == "text" and row["prompt_token_ids"] is None  # the Messages API returns no ids
        assert (row["input_tokens"], row["output_tokens"]) == (resp["usage"]["input_tokens"], resp["usage"]["output_tokens"])
        assert [t["function"]["name"] for t in row["tools"]] == ["lookup"]
    for question in QUESTIONS:
        first, second = sorted((r for r in rows if r["input_messages"][1]["content"] == question),
                               key=lambda r: len(r["input_messages"]))
        assert _calls(first) == [("lookup", {"query": question})]
        call_id = first["output_message"]["tool_calls"][0]["id"]
        assert second["input_messages"][-2]["tool_calls"][0]["id"] == call_id
        assert second["input_messages"][-1] == {"role": "tool", "content": f"found {question}", "tool_call_id": call_id}
        assert second["output_message"]["content"] == f"Tool said: found {question}"


def test_a_previous_response_id_chain_is_recorded_whole_or_marked(lake) -> None:
    first, second, third = lake["chain"]
    row = lake["rows"][second.id]  # the first step's instructions are not carried over (the API's rule)
    assert [(m["role"], m["content"]) for m in row["input_messages"]] == [
        ("user", "first question"), ("assistant", "Echo: first question"), ("user", "second question")]
    unknown = lake["rows"][third.id]  # the other gateway never saw the chain: no prompt, never a partial one
    assert unknown["input_messages"] is None and second.id in unknown["unknown"]
    assert unknown["output_message"]["content"] == "Echo: third question"
    assert lake["other"].counts["prompt_unknown"] == 1 and lake["gateway"].counts["prompt_unknown"] == 0


@pytest.mark.parametrize("k", [0, 1])
def test_a_text_completion_is_recorded_with_engine_ids(lake, k: int) -> None:
    req, resp = lake["up"].calls["completions"][k]
    prompt = ("complete this", "stream this")[k]
    answer = lake["completion"].choices[0] if k == 0 else lake["streamed"][0].choices[0]
    assert req["return_token_ids"] is True and answer.text == f"Echo: {prompt}" and bool(req.get("stream")) == (k == 1)
    assert not {"token_ids", "prompt_token_ids"} & set(answer.model_extra or {})  # not asked for: not shown
    row = lake["rows"][resp["id"]]
    assert row["input_messages"] == [{"role": "user", "content": prompt}]
    assert row["output_message"]["content"] == f"Echo: {prompt}"
    assert list(row["prompt_token_ids"]) == resp["choices"][0]["prompt_token_ids"]
    assert list(row["response_token_ids"]) == resp["choices"][0]["token_ids"]


def test_an_embedding_passes_through_counted_and_unrecorded(lake) -> None:
    req, resp = lake["up"].calls["embeddings"][0]
    assert req["input"] == "a sentence to embed" and req["model"] == "embed"
    assert lake["embedding"].data[0].embedding == pytest.approx(resp["data"][0]["embedding"])
    # the runner's GET /v1/models probe (once per spanrl rollout) passes through too
    assert lake["gateway"].routes == {"POST /v1/embeddings": 1, "GET /v1/models": 2}
    assert lake["gateway"].counts["passed_through"] == 3
    n_recorded = 6 + 4 + 2 + 2  # agents, anthropic, the chain's two, the completions
    assert lake["gateway"].counts["calls"] == n_recorded and lake["n_rows"] == n_recorded + 1  # + the other gateway's


def test_a_streamed_route_passes_through_as_a_stream() -> None:
    """The upstream sends its second chunk only once the test has read the first through the gateway:
    a gateway that buffered the answer would get ``TIMEOUT`` after 10 s instead."""
    import httpx

    with FakeApis() as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0), span_exporter=_memory())
        try:
            with httpx.stream("POST", gw.url + "/r/rollout-1/-/v1/audio/speech", json={"input": "hi"}, timeout=30) as r:
                chunks = r.iter_raw()
                first = next(chunks)
                upstream.release.set()
                body = first + b"".join(chunks)
            unknown = httpx.get(gw.url + "/v1/no/such/route", timeout=30)
        finally:
            gw.stop()
    assert (r.status_code, first, body) == (200, b"chunk-1;", b"chunk-1;chunk-2")
    assert unknown.status_code == 404 and "Not Found" in unknown.text  # the upstream's own 404, passed on
    assert gw.gateway.counts["passed_through"] == 2 and gw.gateway.counts["spans"] == 0


def test_a_gateway_token_is_taken_as_x_api_key_and_each_api_gets_the_upstream_key() -> None:
    """With --token the Anthropic SDK's x-api-key header is the gateway's token (401 when wrong,
    nothing forwarded); the upstream gets --upstream-key as a bearer token, on /v1/messages also as
    Anthropic's x-api-key (with the SDK's anthropic-version), passed-through routes too."""
    import anthropic

    ask = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    with FakeApis() as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0, token="T", upstream_key="K"),
                                   span_exporter=_memory())
        try:
            reply = anthropic.Anthropic(base_url=gw.url, api_key="T", max_retries=0).messages.create(**ask)
            with pytest.raises(anthropic.AuthenticationError):
                anthropic.Anthropic(base_url=gw.url, api_key="wrong", max_retries=0).messages.create(**ask)
            openai.OpenAI(base_url=gw.url + "/v1", api_key="T", max_retries=0).embeddings.create(model="e", input="x")
        finally:
            gw.stop()
    assert reply.content[0].text == "Echo: hi" and len(upstream.calls["messages"]) == 1
    (sent,) = upstream.headers["messages"]
    assert sent.get("x-api-key") == "K" and sent["Authorization"] == "Bearer K" and sent.get("anthropic-version")
    assert upstream.headers["embeddings"][0]["Authorization"] == "Bearer K"


def test_an_upstream_that_rejects_the_responses_id_field_is_asked_without_it() -> None:
    """A hosted Responses API refuses vLLM's enable_response_messages (400 naming it): asked once,
    then never again; the calls are recorded as text, the agent never sees the 400."""
    with FakeApis(strict=True) as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0), span_exporter=(spans := _memory()))
        try:
            client = openai.OpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0)
            answers = [client.responses.create(model="m", input=f"question {i}").output_text for i in range(2)]
            info = json.loads(urllib.request.urlopen(gw.url + "/spanrl/gateway", timeout=30).read())
        finally:
            gw.stop()
    assert answers == ["Echo: question 0", "Echo: question 1"]
    assert ["enable_response_messages" in req for req, _ in upstream.calls["responses"]] == [True, False, False]
    assert info["token_id_fields_rejected"] == ["enable_response_messages"] and info["asks_token_ids"] is True
    assert [s.attributes["spanrl.token_source"] for s in spans.get_finished_spans()] == ["text", "text"]


def test_the_conversation_memory_is_bounded_and_a_forgotten_link_is_unknown() -> None:
    from spanrl.gateway.conversations import Conversations

    memory = Conversations(max_bytes=600)
    step = [{"role": "user", "parts": [{"type": "text", "content": "x" * 100}]}]
    memory.remember("r1", None, step)
    memory.remember("r2", "r1", step)
    assert memory.recall("r2") == step + step and memory.forgotten == 0
    for i in range(3, 8):
        memory.remember(f"r{i}", f"r{i - 1}", step)
    assert memory.size <= 600 and memory.forgotten > 0 and memory.recall("r1") is None
    assert memory.recall("r7") is None  # its chain reaches a forgotten step: unknown, never a shorter prompt


def test_rollout_hands_out_the_base_urls_the_common_sdks_read() -> None:
    from spanrl.rollout.process import base_url_env

    attempt = "http://127.0.0.1:8400/r/rollout-1/-/v1"
    assert base_url_env(attempt) == {"OPENAI_BASE_URL": attempt, "OPENAI_API_BASE": attempt,
                                     "ANTHROPIC_BASE_URL": "http://127.0.0.1:8400/r/rollout-1/-",
                                     "ANTHROPIC_API_BASE": "http://127.0.0.1:8400/r/rollout-1/-"}
    assert base_url_env("http://host/openai") == {"OPENAI_BASE_URL": "http://host/openai",
                                                  "OPENAI_API_BASE": "http://host/openai"}  # no /v1: root unknown


def _memory():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    return InMemorySpanExporter()
