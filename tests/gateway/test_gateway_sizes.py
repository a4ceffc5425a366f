"""Issue 44: one call's size never drops another call's span, and every call is in the lake or
counted. Small calls, calls over ``max_span_bytes`` and one 50 MB call go at once through the gateway
to a collector whose request limit (1 MiB here, 64 MiB by default, 20 MiB in the OpenTelemetry
Collector) the big ones pass many times over; then ``spanrl ingest``. Before the fix each big call's
span went out whole, the collector answered 413 and the batch was lost (with it any small call that
shared it), while the gateway counted every call as recorded.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from spanrl.gateway.delivery import MIB
from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.gateway.canned_upstream import CannedUpstream
from tests.rollout.lake import ingest, query_spans

BUDGET = 64 * 1024
CALLS = {**{f"small{i}": 2_000 for i in range(4)}, **{f"big{i}": 600_000 for i in range(3)}, "huge": 50_000_000}


@contextmanager
def collector(data: Path, max_body_mib: float) -> Iterator[str]:
    """The embedded collector with a lower request limit, on its own loop thread: its OTLP/HTTP URL."""
    from spanrl.collector.config import CollectorConfig
    from spanrl.collector.server import EmbeddedCollector

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    col = EmbeddedCollector(CollectorConfig(data_root=data, http_port=0, grpc_port=0, max_body_mib=max_body_mib))
    try:
        ep = asyncio.run_coroutine_threadsafe(col.start(), loop).result(60)
        yield f"http://127.0.0.1:{ep.http_port}"
    finally:
        asyncio.run_coroutine_threadsafe(col.stop(), loop).result(120)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def _call(url: str, name: str, size: int) -> str:
    """One chat completion whose user message is ``size`` bytes; the response id the agent got."""
    body = {"model": "policy", "messages": [{"role": "user", "content": f"call-{name} " + "x" * size}]}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert resp.status == 200
        return json.loads(resp.read())["id"]


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    data = tmp_path_factory.mktemp("gateway-sizes") / "data"
    data.mkdir()
    with CannedUpstream() as upstream, collector(data, max_body_mib=1) as otlp:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, data=data, port=0, otlp=otlp,
                                                 max_span_mib=BUDGET / MIB))
        try:
            with ThreadPoolExecutor(len(CALLS)) as pool:  # at once: one export batch, as in the issue
                ids = dict(zip(CALLS, pool.map(lambda kv: _call(gw.url, *kv), CALLS.items()), strict=True))
        finally:
            gw.stop()
        over = gateway_in_background(GatewayConfig(upstream=upstream.url, data=data, port=0, otlp=otlp,
                                                   max_span_mib=4.0))
        try:
            _call(over.url, "refused", 2_000_000)  # 2.6 MB of span: under its budget, over the collector's limit
        finally:
            over.stop()
    ingest(data, "--missing-reward", "zero")
    rows = query_spans(data, """
        SELECT s.attributes->>'gen_ai.response.id' AS id, s.attributes->>'spanrl.token_source' AS source,
               s.attributes->>'spanrl.gateway.truncated' AS truncated,
               s.attributes->>'spanrl.gateway.original_bytes' AS original,
               s.attributes->>'gen_ai.input.messages' AS input, c.input_messages AS call_input,
               c.prompt_token_ids AS call_ids
        FROM spans s LEFT JOIN llm_calls c USING (trace_id, span_id) WHERE s.scope_name = 'spanrl.gateway'""")
    yield {"ids": ids, "rows": {r["id"]: r for r in rows}, "gateway": gw.gateway, "over": over.gateway}


def test_every_call_reaches_the_lake_small_ones_whole(sized) -> None:
    rows, ids = sized["rows"], sized["ids"]
    assert set(rows) == set(ids.values()), "a call's span is missing from the lake"
    for name, size in CALLS.items():
        row = rows[ids[name]]
        if name.startswith("small"):
            assert row["truncated"] is None and row["source"] == "engine", row
            assert f"call-{name} " + "x" * size in row["input"] and json.loads(row["call_input"])
            prompt = list(row["call_ids"])  # the canned upstream's ids, all of them: one per 4 request bytes
            assert prompt == list(range(1000, 1000 + len(prompt))) and len(prompt) > size // 4
        else:  # cut to the budget with a marker, its original size said, its ids dropped (text only now)
            assert "gen_ai.input.messages" in row["truncated"] and "spanrl.prompt_token_ids" in row["truncated"]
            assert row["source"] == "text" and int(row["original"]) > size
            assert row["input"].startswith('[{"role": "user", "parts": [{"type": "text", "content": "call-' + name)
            assert "cut by spanrl gateway" in row["input"] and len(row["input"]) < BUDGET
            assert row["call_input"] is None and row["call_ids"] is None  # missing content, not a shorter prompt


def test_the_counters_say_written_truncated_and_none_dropped(sized) -> None:
    gw = sized["gateway"]
    counts = {**gw.counts, **gw.span_counts()}
    assert counts["calls"] == counts["spans"] == counts["spans_written"] == len(CALLS)
    assert counts["spans_dropped"] == counts["spans_pending"] == counts["failed"] == 0
    assert counts["truncated"] == sum(1 for name in CALLS if not name.startswith("small"))
    assert counts["engine_ids"] == sum(1 for name in CALLS if name.startswith("small"))
    assert "8 written, 0 dropped, 0 pending, 4 with content cut" in gw.summary()


def test_a_span_the_collector_refuses_is_counted_dropped_not_written(sized) -> None:
    """--max-span-mib above the collector's limit: the collector's 413 is counted, not only logged."""
    over = sized["over"]
    assert over.span_counts() == {"spans": 1, "spans_written": 0, "spans_dropped": 1, "spans_pending": 0}
    assert "0 written, 1 dropped" in over.summary()


def test_fit_keeps_the_engine_ids_whole_or_drops_them_together() -> None:
    """Ids cut short would train on ids the engine never used: they stay whole when they fit beside
    the text cut to markers (then they are what trains), else all go, token_source with them."""
    from spanrl.gateway.delivery import fit, value_bytes

    ids = {"spanrl.prompt_token_ids": list(range(1000, 3000)), "spanrl.response_token_ids": [7, 8, 9],
           "spanrl.token_source": "engine"}
    text = {"gen_ai.input.messages": json.dumps([{"role": "user", "content": "y" * 200_000}]),
            "gen_ai.request.model": "policy"}
    kept = fit({**text, **ids}, BUDGET)
    assert kept.truncated == ["gen_ai.input.messages"] and kept.original_bytes > 200_000
    assert {k: kept.attributes[k] for k in ids} == ids and kept.attributes["gen_ai.request.model"] == "policy"
    assert sum(value_bytes(v) + len(k) + 16 for k, v in kept.attributes.items()) <= BUDGET
    assert kept.attributes["gen_ai.input.messages"].endswith("bytes kept, see --max-span-mib]")

    many = {**ids, "spanrl.prompt_token_ids": list(range(1000, 100_000))}
    dropped = fit({**text, **many}, BUDGET)
    assert dropped.truncated == sorted(["gen_ai.input.messages", *ids])
    assert not set(ids) & set(dropped.attributes)
    assert fit({**text, **ids}, 1024 * 1024).truncated == []  # under the budget: untouched
