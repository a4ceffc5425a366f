"""OTLP/gRPC front door, in-process: the real opentelemetry-proto client stubs against our services."""

from __future__ import annotations

import asyncio
import errno
import gzip
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from spanrl.collector.otlpjson import traces_to_json
from spanrl.collector.writer import RotatingFile
from tests.helpers.collector import inprocess_collector, make_traces


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def lines(tmp_path: Path, signal: str = "traces") -> list[bytes]:
    path = tmp_path / "otel" / f"{signal}.jsonl"
    return path.read_bytes().splitlines() if path.exists() else []


async def call(target: str, request: Any, stub: Any = trace_service_pb2_grpc.TraceServiceStub,
               metadata: tuple[tuple[str, str], ...] = (), **kw: Any) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(target) as channel:
        try:
            await stub(channel).Export(request, metadata=metadata, timeout=10, **kw)
            return grpc.StatusCode.OK
        except grpc.aio.AioRpcError as exc:
            return exc.code()


def test_traces_logs_metrics_and_compression(tmp_path: Path) -> None:
    reqs = [make_traces(2, name=f"g{i}") for i in range(2)]
    logs = logs_service_pb2.ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add(severity_text="INFO")
    metrics = metrics_service_pb2.ExportMetricsServiceRequest()
    metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="m")

    async def go() -> list[grpc.StatusCode]:
        async with inprocess_collector(tmp_path) as (_, _h, target):
            return [await call(target, reqs[0]),
                    await call(target, reqs[1], compression=grpc.Compression.Gzip),
                    await call(target, logs, logs_service_pb2_grpc.LogsServiceStub),
                    await call(target, metrics, metrics_service_pb2_grpc.MetricsServiceStub)]

    assert run(go()) == [grpc.StatusCode.OK] * 4
    assert lines(tmp_path) == [traces_to_json(r) for r in reqs]
    assert lines(tmp_path, "logs") == [b'{"resourceLogs":[{"resource":{},"scopeLogs":[{"scope":{},'
                                       b'"logRecords":[{"severityText":"INFO","body":{}}]}]}]}']


async def raw_call(target: str, body: bytes) -> tuple[grpc.StatusCode, str]:
    """Sends arbitrary bytes as the request (what a broken or hostile client could send)."""
    async with grpc.aio.insecure_channel(target) as channel:
        method = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        try:
            await method(body, timeout=10)
            return grpc.StatusCode.OK, ""
        except grpc.aio.AioRpcError as exc:
            return exc.code(), exc.details() or ""


def test_malformed_and_oversized_messages(tmp_path: Path) -> None:
    bad_id = make_traces(1)
    bad_id.resource_spans[0].scope_spans[0].spans[0].span_id = b"123"
    big = make_traces(1, attrs={"blob": "x" * (2 * 1024 * 1024)}).SerializeToString()

    async def go() -> list[tuple[grpc.StatusCode, str]]:
        async with inprocess_collector(tmp_path, max_body_mib=1) as (_, _h, target):
            return [await raw_call(target, b"\xff\xff\xff"), await raw_call(target, bad_id.SerializeToString()),
                    await raw_call(target, big), await raw_call(target, gzip.compress(b"x"))]

    answers = run(go())
    assert answers[0][0] == grpc.StatusCode.INVALID_ARGUMENT and "malformed protobuf" in answers[0][1]
    assert answers[1][0] == grpc.StatusCode.INVALID_ARGUMENT and "span id" in answers[1][1]
    assert answers[2][0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert answers[3][0] == grpc.StatusCode.INVALID_ARGUMENT
    assert lines(tmp_path) == []


def test_authorization_metadata(tmp_path: Path) -> None:
    req = make_traces(1)

    async def go() -> list[grpc.StatusCode]:
        async with inprocess_collector(tmp_path, token="tok") as (_, _h, target):
            return [await call(target, req), await call(target, req, metadata=(("authorization", "Bearer no"),)),
                    await call(target, req, metadata=(("authorization", "Bearer tok"),))]

    assert run(go()) == [grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.OK]
    assert len(lines(tmp_path)) == 1


def test_disk_full_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def enospc(self: RotatingFile, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RotatingFile, "_write_all", enospc)

    async def go() -> grpc.StatusCode:
        async with inprocess_collector(tmp_path) as (_, _h, target):
            return await call(target, make_traces(1))

    assert run(go()) == grpc.StatusCode.UNAVAILABLE


def test_big_message_over_the_default_4_mib_grpc_limit(tmp_path: Path) -> None:
    big = make_traces(6, attrs={"gen_ai.input.messages": "z" * (1024 * 1024)})  # ~6 MB

    async def go() -> grpc.StatusCode:
        async with inprocess_collector(tmp_path) as (_, _h, target):
            return await call(target, big)

    assert run(go()) == grpc.StatusCode.OK
    assert lines(tmp_path) == [traces_to_json(big)]
