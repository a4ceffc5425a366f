"""Issue 44: who may call the gateway, and what it does with an upstream answer that is no completion.

A web page the operator visits can send a ``text/plain`` POST (no CORS preflight) to
127.0.0.1:8400, or re-point its own name at it (DNS rebinding): before the fix that was answered 200,
forwarded on the ``--upstream-key`` and recorded as training data. Each request here is one a browser
really sends (its Host / Origin / Sec-Fetch-Site); nothing may reach the upstream nor the spans. An
agent (an SDK: no Origin, Host = the address it was given) still passes, and so does a name given
with ``--allow-host``. An upstream's 200 that is HTML, a JSON list or broken JSON was a 500 with a
traceback, not counted, its span a success.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.gateway.canned_upstream import CANNED, CannedUpstream

BODY = {"model": "policy", "messages": [{"role": "user", "content": "hello"}]}


def _send(url: str, body: bytes, headers: dict[str, str], path: str = "/v1/chat/completions",
          method: str = "POST") -> tuple[int, dict]:
    """One request with exactly these headers (http.client sends Host as given)."""
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        conn.request(method, path, body=body if method == "POST" else None, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw.startswith(b"{") else {"raw": raw.decode(errors="replace")}
    finally:
        conn.close()


@pytest.fixture()
def gateway():
    """A gateway (in-memory spans) in front of the canned upstream; ``start(**config)`` starts it."""
    exporter = InMemorySpanExporter()
    running = []
    with CannedUpstream() as upstream:
        def start(**config):
            gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0, **config), span_exporter=exporter)
            running.append(gw)
            return gw

        try:
            yield start, exporter, upstream
        finally:
            for gw in running:
                gw.stop()


def test_browser_requests_are_refused_before_anything_is_forwarded_or_recorded(gateway) -> None:
    start, exporter, upstream = gateway
    gw = start(upstream_key="sk-operator")
    own = urlparse(gw.url).netloc
    body = json.dumps(BODY).encode()
    page = {"Content-Type": "text/plain", "Origin": "http://evil.example"}
    assert _send(gw.url, body, {**page, "Host": "evil.example"})[0] == 421  # rebinding: the request
    status, answer = _send(gw.url, body, {**page, "Host": own})  # a page's no-preflight POST to 127.0.0.1
    assert status == 403 and "cross-origin" in answer["error"]["message"]
    assert _send(gw.url, body, {"Host": own, "Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"})[0] == 403
    assert _send(gw.url, b"", {"Host": own, "Origin": "http://evil.example"}, "/v1/models", "GET")[0] == 403
    status, answer = _send(gw.url, b"", {"Host": "evil.example:80"}, "/spanrl/gateway", "GET")
    assert status == 421 and "--allow-host" in answer["error"]["message"]
    assert upstream.exchanges == [] and exporter.get_finished_spans() == ()
    assert gw.gateway.counts["calls"] == 0 and gw.gateway.counts["refused"] == 5
    # an agent: no Origin, the Host it was given; it is answered and recorded
    assert _send(gw.url, body, {"Host": own, "Content-Type": "application/json"})[0] == 200
    assert len(upstream.exchanges) == 1 and len(exporter.get_finished_spans()) == 1
    status, info = _send(gw.url, b"", {"Host": own}, "/spanrl/gateway", "GET")
    assert status == 200 and {k: info["counts"][k] for k in ("calls", "refused", "spans_written", "spans_dropped")} \
        == {"calls": 1, "refused": 5, "spans_written": 1, "spans_dropped": 0}


def test_allow_host_adds_a_name_and_a_token_is_required_when_set(gateway) -> None:
    start, exporter, upstream = gateway
    gw = start(allow_hosts=("gateway.internal",), token="s3cret")
    body = json.dumps(BODY).encode()
    named = {"Host": f"gateway.internal:{urlparse(gw.url).port}", "Content-Type": "application/json"}
    assert _send(gw.url, body, named)[0] == 401
    assert _send(gw.url, body, {**named, "Authorization": "Bearer wrong"})[0] == 401
    assert _send(gw.url, body, {**named, "Authorization": "Bearer s3cret"})[0] == 200
    assert _send(gw.url, body, {**named, "Host": "other.internal", "Authorization": "Bearer s3cret"})[0] == 421
    assert len(upstream.exchanges) == 1 and len(exporter.get_finished_spans()) == 1


@pytest.mark.parametrize("model", sorted(CANNED))
def test_an_upstream_200_that_is_not_a_completion_is_a_502_counted_failed(gateway, model, caplog) -> None:
    start, exporter, _ = gateway
    gw = start()
    status, answer = _send(gw.url, json.dumps({**BODY, "model": model}).encode(),
                           {"Host": urlparse(gw.url).netloc, "Content-Type": "application/json"})
    assert status == 502, answer
    message = answer["error"]["message"]
    assert "answered HTTP 200 with" in message and "not a chat completion" in message and "--upstream" in message
    assert CANNED[model][0] in message  # names what came (text/html, application/json)
    assert gw.gateway.counts["failed"] == 1 and gw.gateway.counts["spans"] == 1
    span = exporter.get_finished_spans()[-1]
    assert span.status.status_code == StatusCode.ERROR and span.attributes["error.type"] == "upstream_error"
    assert "Traceback" not in caplog.text


def test_a_request_over_the_body_limit_is_a_413_counted_not_recorded(gateway) -> None:
    start, exporter, upstream = gateway
    gw = start(max_request_mib=1 / 16)
    big = json.dumps({**BODY, "messages": [{"role": "user", "content": "x" * 200_000}]}).encode()
    status, answer = _send(gw.url, big, {"Host": urlparse(gw.url).netloc, "Content-Type": "application/json"})
    assert status == 413 and "over 65536 bytes" in answer["error"]["message"]
    counts = gw.gateway.counts
    assert (counts["calls"], counts["failed"], counts["not_recorded"], counts["spans"]) == (1, 1, 1, 0)
    assert upstream.exchanges == [] and exporter.get_finished_spans() == ()
