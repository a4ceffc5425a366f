"""10,000+ random and mutated payloads at both transports (in-process): no crash, every answer a
defined status, every line written parses, and the receiver still works afterwards."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import zlib
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from spanrl.collector.otlpjson import traces_to_json
from tests.helpers.collector import inprocess_collector, make_traces

HTTP_OK = {200, 400, 413, 415, 429}
GRPC_OK = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
           grpc.StatusCode.UNAVAILABLE}
N_HTTP = 6000
N_GRPC = 4000


def seeds() -> list[bytes]:
    rich = make_traces(3, attrs={"k": "v<&>\u2028\x01"})
    span = rich.resource_spans[0].scope_spans[0].spans[0]
    span.events.add(name="e", time_unix_nano=5).attributes.add(key="d").value.double_value = 1e-9
    span.links.add(trace_id=bytes(16), span_id=bytes(range(8)))
    span.status.code, span.status.message = 2, "err"
    kv = span.attributes.add(key="kv").value.kvlist_value.values.add(key="a")
    kv.value.array_value.values.add().bytes_value = b"\x00\x01"
    logs = ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add(severity_number=9).body.string_value = "b"
    return [rich.SerializeToString(), make_traces(1).SerializeToString(), logs.SerializeToString()]


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            del b[rng.randrange(len(b)):]
        elif op == 2:
            pos = rng.randrange(len(b) + 1)
            b[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 3 and len(b) > 4:
            i, j = sorted(rng.sample(range(len(b)), 2))
            b[i:i] = b[i:j]
        elif b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def http_case(rng: random.Random, pb_seeds: list[bytes], json_seeds: list[bytes]) -> tuple[str, bytes, dict[str, str]]:
    kind = rng.randrange(6)
    path = rng.choice(["/v1/traces", "/v1/traces", "/v1/logs", "/v1/metrics"])
    ctype = "application/x-protobuf"
    if kind == 0:
        body = rng.randbytes(rng.randint(0, 300))
    elif kind == 1:
        body = mutate(rng, rng.choice(pb_seeds))
    elif kind == 2:
        body, ctype = mutate(rng, rng.choice(json_seeds)), "application/json"
    elif kind == 3:
        body, ctype = rng.choice(json_seeds), "application/json"
    elif kind == 4:
        body = rng.choice(pb_seeds)
    else:
        body = rng.randbytes(50)
    headers = {"Content-Type": rng.choice([ctype] * 6 + ["text/plain", "application/json; charset=utf-8"])}
    enc = rng.randrange(6)
    if enc == 0:
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    elif enc == 1:
        body, headers["Content-Encoding"] = zlib.compress(body), "deflate"
    elif enc == 2:
        body, headers["Content-Encoding"] = mutate(rng, gzip.compress(body)), "gzip"
    elif enc == 3 and rng.random() < 0.1:
        headers["Content-Encoding"] = rng.choice(["br", "zstd", "gzip, deflate"])
    return path, body, headers


async def fuzz_http(base: str, rng: random.Random, pb: list[bytes], js: list[bytes]) -> dict[int, int]:
    seen: dict[int, int] = {}
    async with aiohttp.ClientSession() as s:
        async def one() -> None:
            path, body, headers = http_case(rng, pb, js)
            async with s.post(base + path, data=body, headers=headers) as resp:
                await resp.read()
                seen[resp.status] = seen.get(resp.status, 0) + 1

        for _ in range(N_HTTP // 50):
            await asyncio.gather(*(one() for _ in range(50)))
    return seen


async def fuzz_grpc(target: str, rng: random.Random, pb: list[bytes]) -> dict[Any, int]:
    seen: dict[Any, int] = {}
    async with grpc.aio.insecure_channel(target) as channel:
        methods = [channel.unary_unary(f"/opentelemetry.proto.collector.{svc}/Export")
                   for svc in ("trace.v1.TraceService", "logs.v1.LogsService", "metrics.v1.MetricsService")]

        async def one() -> None:
            body = mutate(rng, rng.choice(pb)) if rng.random() < 0.8 else rng.randbytes(rng.randint(0, 200))
            try:
                await rng.choice(methods)(body, timeout=20)
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
            seen[code] = seen.get(code, 0) + 1

        for _ in range(N_GRPC // 50):
            await asyncio.gather(*(one() for _ in range(50)))
    return seen


def test_fuzz_both_transports(tmp_path: Path) -> None:
    rng = random.Random(20260122)
    pb = seeds()
    js = [traces_to_json(make_traces(2)), b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":'
                                          b'"0af7651916cd43dd8448eb211c80319c","name":"x","kind":1}]}]}]}']

    async def go() -> tuple[dict[int, int], dict[Any, int], int, Any]:
        async with inprocess_collector(tmp_path, max_body_mib=1) as (collector, http, target):
            http_seen = await fuzz_http(http, rng, pb, js)
            grpc_seen = await fuzz_grpc(target, rng, pb)
            async with aiohttp.ClientSession() as s, s.post(
                    http + "/v1/traces", data=pb[1], headers={"Content-Type": "application/x-protobuf"}) as r:
                after = r.status
            return http_seen, grpc_seen, after, collector.receiver.writer.errors

    http_seen, grpc_seen, after, errors = asyncio.run(go())
    print(http_seen, grpc_seen)
    assert sum(http_seen.values()) == N_HTTP and set(http_seen) <= HTTP_OK, http_seen
    assert sum(grpc_seen.values()) == N_GRPC and set(grpc_seen) <= GRPC_OK, grpc_seen
    assert http_seen.get(200, 0) > 500 and http_seen.get(400, 0) > 500  # both paths were exercised
    assert after == 200 and errors["internal"] == 0
    n_lines = 0
    for path in (tmp_path / "otel").glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            json.loads(line)
            n_lines += 1
    assert n_lines > 500
