"""The gateway records the behaviour policy (issue 41): it asks the upstream for the sampled tokens'
log-probs on the agent's behalf, records them in its span beside the engine ids, and takes them out
of the answer again, so an agent that did not ask sees exactly what it would have seen; an upstream
that refuses the field never fails the agent's call. The agent is the real ``openai`` client.
"""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.gateway.chat import CompletionsCall
from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.gateway.logprob_upstream import LogprobUpstream, logprob_values

HI = [{"role": "user", "content": "hello there gateway"}]
REFUSAL = "logprobs is not supported with this model"


@pytest.fixture
def gateway(request):
    """(gateway, exporter, upstream) for ``request.param``: (upstream refusal message, logprobs mode)."""
    refuse, mode = getattr(request, "param", (None, "auto"))
    exporter = InMemorySpanExporter()
    with LogprobUpstream(refuse=refuse) as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0, upstream_logprobs=mode),
                                   span_exporter=exporter)
        try:
            yield gw, exporter, upstream
        finally:
            gw.stop()


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0, timeout=30)


def _span(exporter: InMemorySpanExporter, n: int = 1):
    """The n-th finished span (a streamed call's ends after the client is done: wait for it)."""
    deadline = time.monotonic() + 20
    while len(exporter.get_finished_spans()) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return exporter.get_finished_spans()[n - 1]


def test_an_agent_that_did_not_ask_gets_no_logprobs_and_the_span_has_them(gateway) -> None:
    gw, exporter, upstream = gateway
    reply = _client(gw).chat.completions.create(model="policy", messages=HI)
    assert reply.choices[0].message.content == "Echo: hello there gateway"
    assert reply.choices[0].logprobs is None
    assert "token_ids" not in (reply.choices[0].model_extra or {})
    sent = upstream.exchanges[-1][0]
    assert sent["logprobs"] is True and sent["return_token_ids"] is True
    span = _span(exporter)
    ids = list(span.attributes["spanrl.response_token_ids"])
    assert list(span.attributes["spanrl.response_logprobs"]) == logprob_values(len(ids)) and ids
    assert httpx.get(gw.url + "/spanrl/gateway").json()["asks_logprobs"] is True


def test_an_agent_that_asks_gets_them(gateway) -> None:
    gw, exporter, upstream = gateway
    reply = _client(gw).chat.completions.create(model="policy", messages=HI, logprobs=True)
    values = [c.logprob for c in reply.choices[0].logprobs.content]
    assert values == logprob_values(len(values)) and values
    assert list(_span(exporter).attributes["spanrl.response_logprobs"]) == values


@pytest.mark.parametrize("asks", [False, True])
def test_streaming_strips_or_passes_the_logprobs_of_every_chunk(gateway, asks: bool) -> None:
    gw, exporter, upstream = gateway
    kwargs = {"logprobs": True} if asks else {}
    chunks = list(_client(gw).chat.completions.create(model="policy", messages=HI, stream=True, **kwargs))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Echo: hello there gateway"
    got = [lp.logprob for c in chunks for ch in c.choices if ch.logprobs for lp in ch.logprobs.content or []]
    span = _span(exporter)
    recorded = list(span.attributes["spanrl.response_logprobs"])
    assert recorded == logprob_values(len(span.attributes["spanrl.response_token_ids"]))
    assert got == (recorded if asks else [])
    assert upstream.exchanges[-1][0]["logprobs"] is True


@pytest.mark.parametrize("gateway", [(REFUSAL, "auto")], indirect=True)
def test_an_upstream_that_refuses_logprobs_is_asked_once_and_the_agent_never_notices(gateway) -> None:
    gw, exporter, upstream = gateway
    client = _client(gw)
    for _ in range(2):
        assert client.chat.completions.create(model="policy", messages=HI).choices[0].message.content
    chunks = list(client.chat.completions.create(model="policy", messages=HI, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hello there gateway"
    assert ["logprobs" in req for req in upstream.requests] == [True, False, False, False]
    assert all(req.get("return_token_ids") for req in upstream.requests)  # the ids are still asked
    span = _span(exporter, 3)
    assert "spanrl.response_logprobs" not in span.attributes and span.attributes["spanrl.response_token_ids"]
    info = httpx.get(gw.url + "/spanrl/gateway").json()
    assert info["asks_logprobs"] is False and info["asks_token_ids"] is True
    assert gw.gateway.counts["failed"] == 0


@pytest.mark.parametrize("gateway", [("Invalid request", "auto"), (REFUSAL, "always")], indirect=True)
def test_a_refusal_that_does_not_name_the_field_or_always_mode_retries_without_it(gateway) -> None:
    gw, _, upstream = gateway
    client = _client(gw)
    for _ in range(2):
        assert client.chat.completions.create(model="policy", messages=HI).choices[0].message.content
    asked = ["logprobs" in req for req in upstream.requests]
    always = gw.gateway.config.upstream_logprobs == "always"
    assert asked == ([True, False, True, False] if always else [True, False, False])


@pytest.mark.parametrize("gateway", [(None, "never")], indirect=True)
def test_never_passes_on_only_what_the_agent_asked(gateway) -> None:
    gw, exporter, upstream = gateway
    client = _client(gw)
    assert client.chat.completions.create(model="policy", messages=HI).choices[0].logprobs is None
    assert "logprobs" not in upstream.requests[-1]
    assert "spanrl.response_logprobs" not in _span(exporter).attributes
    assert client.chat.completions.create(model="policy", messages=HI, logprobs=True).choices[0].logprobs.content


def test_a_text_completions_log_probs_are_read_and_stripped() -> None:
    call = CompletionsCall({"model": "m", "prompt": "2+2="}, capture=True)
    call.added = {"logprobs"}
    answer = {"id": "cmpl-1", "model": "m", "prompt_token_ids": [1, 2],
              "choices": [{"index": 0, "text": " 4", "finish_reason": "stop", "token_ids": [5, 6],
                           "logprobs": {"tokens": [" ", "4"], "token_logprobs": [-0.5, -0.25]}}]}
    attrs = call.response_attributes(answer)
    assert list(attrs["spanrl.response_logprobs"]) == [-0.5, -0.25]
    assert call.for_agent(answer)["choices"][0] == {"index": 0, "text": " 4", "finish_reason": "stop",
                                                    "logprobs": None}
    assert CompletionsCall({"logprobs": 0}, capture=True).asked_logprobs()
