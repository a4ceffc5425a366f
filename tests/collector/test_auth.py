"""The token check is cheap and total (issue 9 item 12): a non-ASCII Authorization header is a 401,
not a 500, and gRPC refuses a wrong token from the call's metadata, before the message is received
and decompressed (a 60 MiB gzip message used to be inflated first)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import grpc
import psutil
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.helpers.collector import inprocess_collector, make_traces, running_collector


def raw_http(port: int, header: bytes) -> bytes:
    body = make_traces(1).SerializeToString()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     b"Authorization: " + header + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                     % len(body) + body)
        return sock.recv(65536)


def test_non_ascii_authorization_header_is_401(tmp_path: Path) -> None:
    async def go() -> list[bytes]:
        async with inprocess_collector(tmp_path, token="s3cret") as (collector, http, _g):
            port = int(http.rsplit(":", 1)[1])
            headers = [b"Bearer \xc3\xa9t\xc3\xa9", b"Bearer \xff\xfe", "Bearer s3cr\u00e9t".encode("latin-1"),
                       b"Bearer s3cret"]
            return [await asyncio.to_thread(raw_http, port, h) for h in headers]

    answers = asyncio.run(go())
    assert [a.split(b" ", 2)[1] for a in answers] == [b"401", b"401", b"401", b"200"], answers


def test_grpc_wrong_token_is_refused_before_the_message_is_inflated(tmp_path: Path) -> None:
    bomb = make_traces(1, attrs={"pad": "z" * (60 * 1024 * 1024)})  # 60 MiB, gzip makes it ~60 kB

    async def send(target: str, token: str) -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(target, options=[("grpc.max_send_message_length", -1)]) as ch:
            try:
                await trace_service_pb2_grpc.TraceServiceStub(ch).Export(
                    bomb, metadata=(("authorization", f"Bearer {token}"),), timeout=60,
                    compression=grpc.Compression.Gzip)
                return grpc.StatusCode.OK
            except grpc.aio.AioRpcError as exc:
                return exc.code()

    async def flood(target: str) -> list[grpc.StatusCode]:
        return await asyncio.gather(*(send(target, "wrong") for _ in range(6)))

    with running_collector(tmp_path, token="right") as ep:
        proc = psutil.Process(ep.proc.pid)
        baseline = proc.memory_info().rss
        peak = [baseline]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], proc.memory_info().rss)
                time.sleep(0.005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            codes = asyncio.run(flood(ep.grpc))
        finally:
            done.set()
            sampler.join()
    assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 6
    grown = (peak[0] - baseline) / 2**20
    assert grown < 40, f"the collector grew by {grown:.0f} MiB answering wrong tokens"
