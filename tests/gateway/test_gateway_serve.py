"""The gateway in front of ``spanrl serve`` (tiny random model), one server for the module.

- serve implements vLLM's ``return_token_ids`` fields, streaming included, so the gateway's span
  carries exactly the ids serve's own span records, the agent's reply carries none, and serve's span
  is the gateway span's child (one trace, one call);
- ``spanrl serve --agent-adapter`` (issue 29): each agent's requests get its own chain's LATEST
  (DATA/adapters/agents/<agent>/, what ``spanrl train --agent`` writes), by model name or by the
  ``x-spanrl-agent`` header, which the gateway forwards; a moved LATEST is loaded by the next request.
"""

from __future__ import annotations

import shutil
import time

import httpx
import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.gateway.server import GatewayConfig, gateway_in_background
from spanrl.layout import agent_adapters_dir
from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model
from tests.serve.test_server import _point_latest, _write_adapter

HELLO = [{"role": "user", "content": "What is the weather in Paris today?"}]


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory):
    model = make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-chat")
    data = tmp_path_factory.mktemp("data")
    adapter = _write_adapter(model, data / "one-adapter", 0)  # the routes, not the weights, are under test
    for agent in ("router", "solver"):
        shutil.copytree(adapter, agent_adapters_dir(data, agent) / "c1")
        _point_latest(agent_adapters_dir(data, agent), "c1")
    serve_spans, gw_spans = InMemorySpanExporter(), InMemorySpanExporter()
    served = serve_in_background(ServeConfig(model=model, data=data, port=0, max_tokens=8, device="cpu",
                                             agent_adapters=("solver", "gpt-4o-mini=router")), span_exporter=serve_spans)
    gw = gateway_in_background(GatewayConfig(upstream=served.url + "/v1", port=0), span_exporter=gw_spans)
    yield {"gw": gw, "served": served, "data": data, "serve_spans": serve_spans, "gw_spans": gw_spans}
    gw.stop()
    served.stop()


@pytest.mark.parametrize("stream", [False, True])
def test_gateway_span_has_serves_exact_ids(chain, stream: bool) -> None:
    client = openai.OpenAI(base_url=chain["gw"].url + "/v1", api_key="unused", max_retries=0, timeout=60)
    chain["gw_spans"].clear()
    chain["serve_spans"].clear()
    if stream:
        chunks = list(client.chat.completions.create(model="tiny-chat", messages=HELLO, stream=True))
        assert not any("token_ids" in (c.model_extra or {}) for ch in chunks for c in ch.choices)
        assert not any("prompt_token_ids" in (ch.model_extra or {}) for ch in chunks)
    else:
        reply = client.chat.completions.create(model="tiny-chat", messages=HELLO)
        assert "prompt_token_ids" not in (reply.model_extra or {})
        assert "token_ids" not in (reply.choices[0].model_extra or {})
        assert reply.choices[0].logprobs is None  # asked on the agent's behalf (issue 41), taken out again
    if stream:
        assert all(c.logprobs is None for ch in chunks for c in ch.choices)
    ours, theirs = _call_spans(chain)
    for key in ("spanrl.prompt_token_ids", "spanrl.response_token_ids", "spanrl.response_logprobs"):
        assert list(ours.attributes[key]) == list(theirs.attributes[key]) and len(ours.attributes[key]) > 0
    assert ours.attributes["gen_ai.response.id"] == theirs.attributes["gen_ai.response.id"]
    assert theirs.parent.span_id == ours.context.span_id and theirs.context.trace_id == ours.context.trace_id


def _call_spans(chain, timeout_s: float = 60.0):
    """This call's gateway span and serve's span under it. A streamed call's spans end after the last
    chunk went out, so the client can be done first: wait for them (a safety net, not a sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for ours in chain["gw_spans"].get_finished_spans():
            for theirs in chain["serve_spans"].get_finished_spans():
                if theirs.parent is not None and theirs.parent.span_id == ours.context.span_id:
                    return ours, theirs
        time.sleep(0.05)
    raise AssertionError("no serve span under a gateway span of this call")


def _ask(url: str, model: str, headers: dict | None = None) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", json={"model": model, "messages": HELLO, "max_tokens": 4},
                      headers=headers or {}, timeout=60)


def test_requests_are_routed_to_their_agents_adapter(chain) -> None:
    url = chain["served"].url
    used = {m: _ask(url, m).headers["x-spanrl-adapter"] for m in ("solver", "gpt-4o-mini", "tiny-chat")}
    assert used == {"solver": "agent:solver", "gpt-4o-mini": "agent:router", "tiny-chat": "base"}
    refused = _ask(url, "tiny-chat", {"x-spanrl-agent": "nobody"})
    assert refused.status_code == 404 and "--agent-adapter" in refused.json()["error"]["message"]
    chain["gw_spans"].clear()
    chain["serve_spans"].clear()
    _ask(chain["gw"].url, "tiny-chat", {"x-spanrl-agent": "router"})  # through the gateway: header forwarded
    assert _call_spans(chain)[1].attributes["spanrl.adapter"] == "agent:router"


def test_a_moved_latest_is_loaded_by_the_next_request(chain) -> None:
    _ask(chain["served"].url, "solver")
    root = agent_adapters_dir(chain["data"], "solver")
    shutil.copytree(root / "c1", root / "c2")
    _point_latest(root, "c2")
    assert _ask(chain["served"].url, "solver").status_code == 200
    assert chain["served"].server.agent_cycles["solver"] == "c2"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_and_messages_through_the_gateway_to_serve(chain, stream: bool) -> None:
    """Issue 43: the Responses API gets serve's exact ids into the gateway's span (vLLM's
    enable_response_messages fields, which the agent does not see); Anthropic Messages has no id field,
    so the gateway's span is text, while serve's span under it has the ids: both spans carry the
    answer's id (one call, one row in the lake)."""
    import anthropic

    for api in ("responses", "messages"):
        chain["gw_spans"].clear()
        chain["serve_spans"].clear()
        if api == "responses":
            client = openai.OpenAI(base_url=chain["gw"].url + "/v1", api_key="unused", max_retries=0, timeout=60)
            if stream:
                answer_id = list(client.responses.create(model="tiny-chat", input="Hello", stream=True))[-1].response.id
            else:
                reply = client.responses.create(model="tiny-chat", input="Hello")
                assert "input_messages" not in (reply.model_extra or {})
                answer_id = reply.id
        else:
            claude = anthropic.Anthropic(base_url=chain["gw"].url, api_key="unused", max_retries=0, timeout=60)
            ask = {"model": "tiny-chat", "max_tokens": 8, "messages": [{"role": "user", "content": "Hello"}]}
            if stream:
                with claude.messages.stream(**ask) as events:
                    answer_id = events.get_final_message().id
            else:
                answer_id = claude.messages.create(**ask).id
        ours, theirs = _call_spans(chain)
        assert ours.attributes["gen_ai.response.id"] == theirs.attributes["gen_ai.response.id"] == answer_id
        assert theirs.parent.span_id == ours.context.span_id
        if api == "responses":
            for key in ("spanrl.prompt_token_ids", "spanrl.response_token_ids"):
                assert list(ours.attributes[key]) == list(theirs.attributes[key]) and len(ours.attributes[key]) > 0
        else:
            assert ours.attributes["spanrl.token_source"] == "text" and len(theirs.attributes["spanrl.prompt_token_ids"]) > 0
