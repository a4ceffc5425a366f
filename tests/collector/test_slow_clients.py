"""Slow clients cannot starve the receiver (issue 9 item 9): 32 connections that send half a body and
then go quiet, on each transport, while a real OTel SDK exporter sends; its export must succeed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.helpers.collector import inprocess_collector, make_traces

SLOW_CLIENTS = 32
EXPORT_TIMEOUT_S = 6


def finished_spans(n: int, tag: str) -> list[Any]:
    tracer = TracerProvider().get_tracer("slow-clients-test")
    spans = []
    for i in range(n):
        span = tracer.start_span(f"{tag}-{i}")
        span.end()
        spans.append(span)
    return spans


async def half_body_http(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Headers announce 200 kB; half of them arrive, then nothing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = make_traces(1, attrs={"pad": "p" * 200_000}).SerializeToString()
    writer.write(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
    await writer.drain()
    return reader, writer


async def silent_grpc_call(channel: grpc.aio.Channel) -> Any:
    """A call whose request message never comes (a client stuck mid-send)."""
    method = channel.stream_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")

    async def never() -> Any:
        await asyncio.sleep(3600)
        yield b""

    return method(never())


def test_half_body_http_connections_do_not_starve_an_sdk_exporter(tmp_path: Path) -> None:
    async def go() -> tuple[SpanExportResult, float, list[bytes]]:
        async with inprocess_collector(tmp_path, idle_timeout_s=2.0) as (_, http, _g):
            port = int(http.rsplit(":", 1)[1])
            slow = [await half_body_http(port) for _ in range(SLOW_CLIENTS)]
            await asyncio.sleep(0.2)
            exporter = HttpSpanExporter(endpoint=http + "/v1/traces", timeout=EXPORT_TIMEOUT_S)
            start = time.monotonic()
            result = await asyncio.to_thread(exporter.export, finished_spans(5, "h"))
            took = time.monotonic() - start
            # the idle slow clients are answered 408 and disconnected
            answers = [await asyncio.wait_for(r.read(), 10) for r, _ in slow]
            for _, w in slow:
                w.close()
            return result, took, answers

    result, took, answers = asyncio.run(go())
    assert result is SpanExportResult.SUCCESS, "the exporter was starved by the slow clients"
    assert took < 3
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[:2]
    assert b'"h-4"' in (tmp_path / "otel" / "traces.jsonl").read_bytes()


def test_silent_grpc_calls_do_not_starve_an_sdk_exporter(tmp_path: Path) -> None:
    async def go() -> tuple[SpanExportResult, list[grpc.StatusCode]]:
        async with inprocess_collector(tmp_path, idle_timeout_s=2.0) as (_, _h, target):
            async with grpc.aio.insecure_channel(target) as channel:
                calls = [await silent_grpc_call(channel) for _ in range(SLOW_CLIENTS)]
                await asyncio.sleep(0.2)
                exporter = GrpcSpanExporter(endpoint=target, insecure=True, timeout=EXPORT_TIMEOUT_S)
                result = await asyncio.to_thread(exporter.export, finished_spans(5, "g"))
                codes = []
                for call in calls:
                    try:
                        await asyncio.wait_for(call, 10)
                        codes.append(grpc.StatusCode.OK)
                    except grpc.aio.AioRpcError as exc:
                        codes.append(exc.code())
                return result, codes

    result, codes = asyncio.run(go())
    assert result is SpanExportResult.SUCCESS, "the exporter was starved by the silent calls"
    assert set(codes) == {grpc.StatusCode.DEADLINE_EXCEEDED}, codes
    assert b'"g-4"' in (tmp_path / "otel" / "traces.jsonl").read_bytes()
