"""OTLP/HTTP front door, in-process on a free port: formats, encodings, status codes, faults."""

from __future__ import annotations

import asyncio
import errno
import gzip
import json
import threading
import zlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from spanrl.collector.otlpjson import traces_to_json
from spanrl.collector.writer import RotatingFile, SignalWriter
from tests.helpers.collector import await_until, inprocess_collector, make_traces, port_accepts

PB = "application/x-protobuf"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def post(session: aiohttp.ClientSession, url: str, body: bytes, ctype: str = PB,
               **headers: str) -> tuple[int, bytes, aiohttp.typedefs.LooseHeaders]:
    async with session.post(url, data=body, headers={"Content-Type": ctype, **headers}) as resp:
        return resp.status, await resp.read(), resp.headers


def lines(tmp_path: Path, signal: str = "traces") -> list[bytes]:
    path = tmp_path / "otel" / f"{signal}.jsonl"
    return path.read_bytes().splitlines() if path.exists() else []


def test_protobuf_json_gzip_deflate_all_land_byte_identical(tmp_path: Path) -> None:
    reqs = [make_traces(3, name=f"r{i}") for i in range(5)]

    async def go() -> list[tuple[int, bytes, str]]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            url = http + "/v1/traces"
            pb = [r.SerializeToString() for r in reqs]
            answers = [
                await post(s, url, pb[0]),
                await post(s, url, gzip.compress(pb[1]), **{"Content-Encoding": "gzip"}),
                await post(s, url, zlib.compress(pb[2]), **{"Content-Encoding": "deflate"}),
                await post(s, url, traces_to_json(reqs[3]), "application/json"),
                await post(s, url, gzip.compress(traces_to_json(reqs[4])), "application/json",
                           **{"Content-Encoding": "gzip"}),
            ]
            return [(st, body, h["Content-Type"]) for st, body, h in answers]

    answers = run(go())
    assert [a[0] for a in answers] == [200] * 5
    assert answers[0][1] == b"" and answers[0][2] == PB  # empty ExportTraceServiceResponse in protobuf
    ExportTraceServiceResponse.FromString(answers[1][1])
    assert answers[3][1] == b"{}" and answers[3][2] == "application/json"
    assert lines(tmp_path) == [traces_to_json(r) for r in reqs]


def test_logs_and_metrics(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    logs = ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add(event_name="gen_ai.choice").body.string_value = "x"
    metrics = ExportMetricsServiceRequest()
    metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="m")

    async def go() -> list[int]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            a = await post(s, http + "/v1/logs", logs.SerializeToString())
            b = await post(s, http + "/v1/metrics", metrics.SerializeToString())
            return [a[0], b[0]]

    assert run(go()) == [200, 200]
    assert lines(tmp_path, "logs") == [
        b'{"resourceLogs":[{"resource":{},"scopeLogs":[{"scope":{},"logRecords":[{"body":{"stringValue":"x"},'
        b'"eventName":"gen_ai.choice"}]}]}]}']
    assert lines(tmp_path) == []  # metrics are accepted and dropped


def test_js_style_json_with_numbers_and_camel_case(tmp_path: Path) -> None:
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "js-agent"}}]}, "scopeSpans": [{"scope": {"name": "ai"},
        "spans": [{"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "eee19b7ec3c1b174", "parentSpanId": "",
                   "name": "ai.generateText", "kind": 1, "startTimeUnixNano": 1700000000000000000,
                   "endTimeUnixNano": "1700000000500000000", "unknownField": 1,
                   "attributes": [{"key": "ai.usage.promptTokens", "value": {"intValue": 12}}],
                   "status": {"code": 0}}]}]}]}).encode()

    async def go() -> int:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            return (await post(s, http + "/v1/traces", body, "application/json; charset=utf-8"))[0]

    assert run(go()) == 200
    assert lines(tmp_path) == [
        b'{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"js-agent"}}]},'
        b'"scopeSpans":[{"scope":{"name":"ai"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
        b'"spanId":"eee19b7ec3c1b174","name":"ai.generateText","kind":1,"startTimeUnixNano":"1700000000000000000",'
        b'"endTimeUnixNano":"1700000000500000000","attributes":[{"key":"ai.usage.promptTokens",'
        b'"value":{"intValue":"12"}}],"status":{}}]}]}]}']


@pytest.mark.parametrize(("body", "ctype", "headers", "status", "fragment"), [
    (b"\xff\xff\xff", PB, {}, 400, "malformed protobuf"),
    (b"{not json", "application/json", {}, 400, "malformed JSON"),
    (b"[1,2]", "application/json", {}, 400, "expected an object"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}', "application/json", {}, 400, "not hex"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abcd"}]}]}]}', "application/json", {}, 400,
     "32 hex digits"),
    (b'{"resourceSpans":"nope"}', "application/json", {}, 400, "malformed OTLP/JSON"),
    (b"not gzip", PB, {"Content-Encoding": "gzip"}, 400, "malformed gzip"),
    (gzip.compress(b"x" * 100, mtime=0)[:-10], PB, {"Content-Encoding": "gzip"}, 400, "truncated"),
    (b"x", "text/plain", {}, 415, "unsupported Content-Type"),
    (b"x", PB, {"Content-Encoding": "br"}, 415, "unsupported Content-Encoding"),
])
def test_bad_requests_get_a_clear_4xx(tmp_path: Path, body: bytes, ctype: str, headers: dict[str, str],
                                      status: int, fragment: str) -> None:
    async def go() -> tuple[int, bytes, Any]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            return await post(s, http + "/v1/traces", body, ctype, **headers)

    got, reply, _ = run(go())
    assert got == status
    if ctype != PB:  # replies come in the request's type; JSON when that type is unsupported
        assert fragment in json.loads(reply)["message"]
    else:
        assert fragment.encode() in reply  # google.rpc.Status in protobuf
    assert lines(tmp_path) == []


def test_paths_methods_and_id_lengths(tmp_path: Path) -> None:
    bad_id = make_traces(1)
    bad_id.resource_spans[0].scope_spans[0].spans[0].trace_id = b"short"

    async def go() -> list[int]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            out = [(await post(s, http + "/v1/nope", b""))[0]]
            async with s.get(http + "/v1/traces") as r:
                out.append(r.status)
            out.append((await post(s, http + "/v1/traces", bad_id.SerializeToString()))[0])
            out.append((await post(s, http + "/v1/traces", b""))[0])  # empty request: accepted, nothing written
            return out

    assert run(go()) == [404, 405, 400, 200]
    assert lines(tmp_path) == []


def test_size_limit_and_zip_bomb(tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))  # 8 MiB of zeros in ~8 KiB
    big = make_traces(1, attrs={"blob": "x" * (2 * 1024 * 1024)}).SerializeToString()

    async def go() -> list[int]:
        async with inprocess_collector(tmp_path, max_body_mib=1) as (_, http, _g), aiohttp.ClientSession() as s:
            return [(await post(s, http + "/v1/traces", bomb, **{"Content-Encoding": "gzip"}))[0],
                    (await post(s, http + "/v1/traces", big))[0]]

    assert run(go()) == [413, 413]


def test_bearer_token(tmp_path: Path) -> None:
    body = make_traces(1).SerializeToString()

    async def go() -> list[int]:
        async with inprocess_collector(tmp_path, token="s3cret") as (_, http, _g), aiohttp.ClientSession() as s:
            url = http + "/v1/traces"
            return [(await post(s, url, body))[0],
                    (await post(s, url, body, Authorization="Bearer wrong"))[0],
                    (await post(s, url, body, Authorization="Bearer s3cret"))[0]]

    assert run(go()) == [401, 401, 200]
    assert len(lines(tmp_path)) == 1


def hold_writes(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make the writer thread wait until the returned event is set (a slow disk)."""
    gate = threading.Event()
    real = SignalWriter._write

    def slow_write(self: SignalWriter, items: list[Any]) -> None:
        gate.wait(10)
        real(self, items)

    monkeypatch.setattr(SignalWriter, "_write", slow_write)
    return gate


def test_full_queue_gets_429_with_retry_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = hold_writes(monkeypatch)
    body = make_traces(1).SerializeToString()

    async def go() -> tuple[int, int, str | None]:
        async with inprocess_collector(tmp_path, queue_items=1) as (col, http, _g), aiohttp.ClientSession() as s:
            first = asyncio.ensure_future(post(s, http + "/v1/traces", body))
            await await_until(lambda: col.receiver.budget.queued == 1, "the first request to be queued")
            second = await post(s, http + "/v1/traces", body)
            gate.set()
            return (await first)[0], second[0], second[2].get("Retry-After")

    first, second, retry_after = run(go())
    assert (first, second, retry_after) == (200, 429, "1")
    assert len(lines(tmp_path)) == 1


def test_disk_full_gets_503_and_the_receiver_keeps_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = RotatingFile._write_all
    full = {"on": True}

    def maybe_enospc(self: RotatingFile, data: bytes) -> None:
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, data)

    monkeypatch.setattr(RotatingFile, "_write_all", maybe_enospc)
    body = make_traces(2).SerializeToString()

    async def go() -> list[tuple[int, str | None]]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            a = await post(s, http + "/v1/traces", body)
            full["on"] = False
            b = await post(s, http + "/v1/traces", body)
            return [(a[0], a[2].get("Retry-After")), (b[0], b[2].get("Retry-After"))]

    assert run(go()) == [(503, "1"), (200, None)]
    assert len(lines(tmp_path)) == 1


def test_stop_drains_in_flight_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shutdown stops accepting but every request already in flight is written and acknowledged."""
    gate = hold_writes(monkeypatch)
    from spanrl.collector.config import CollectorConfig
    from spanrl.collector.server import EmbeddedCollector

    async def go() -> tuple[list[int], bool]:
        collector = EmbeddedCollector(CollectorConfig(data_root=tmp_path, http_port=0, grpc_port=0))
        ep = await collector.start()
        url = f"http://127.0.0.1:{ep.http_port}/v1/traces"
        async with aiohttp.ClientSession() as s:
            sends = [asyncio.ensure_future(post(s, url, make_traces(2, name=f"d{i}").SerializeToString()))
                     for i in range(20)]
            await await_until(lambda: collector.receiver.budget.queued == 20, "all 20 requests to be queued")
            stopping = asyncio.ensure_future(collector.stop())
            await await_until(lambda: not port_accepts(ep.http_port), "the HTTP port to stop accepting")
            gate.set()
            statuses = [(await f)[0] for f in sends]
            await stopping
            try:
                await post(s, url, b"")
                refused = False
            except aiohttp.ClientConnectionError:
                refused = True
        return statuses, refused

    statuses, refused = run(go())
    assert statuses == [200] * 20 and refused
    assert len(lines(tmp_path)) == 20


def test_big_batch_is_decoded_off_the_event_loop_and_written(tmp_path: Path) -> None:
    big = make_traces(4, attrs={"gen_ai.input.messages": "y" * (600 * 1024)})  # ~2.4 MB: over OFFLOAD_BYTES

    async def go() -> list[int]:
        async with inprocess_collector(tmp_path) as (_, http, _g), aiohttp.ClientSession() as s:
            return [(await post(s, http + "/v1/traces", big.SerializeToString()))[0],
                    (await post(s, http + "/v1/traces", gzip.compress(traces_to_json(big)), "application/json",
                                **{"Content-Encoding": "gzip"}))[0]]

    assert run(go()) == [200, 200]
    assert lines(tmp_path) == [traces_to_json(big)] * 2
