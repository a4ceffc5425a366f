"""Wires receiver, HTTP and gRPC into one process with an OTel-style lifecycle.

``start`` binds both ports and returns quickly; ``stop`` stops accepting, lets in-flight requests
finish (their batches are written and acknowledged), drains the writer queue and closes the files.
``stop`` is safe to call twice and without ``start``.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from aiohttp import web

from spanrl.collector.config import CollectorConfig
from spanrl.collector.lock import CollectorLock, connect_host
from spanrl.collector.otlpgrpc import build_server
from spanrl.collector.otlphttp import build_app
from spanrl.collector.receiver import Receiver
from spanrl.errors import InputError

SHUTDOWN_GRACE_S = 10.0
LINGER_S = 2.0  # after an early answer (408, 413, 429), unread body bytes are discarded this long, then close


@dataclass
class Endpoints:
    http_port: int
    grpc_port: int


class EmbeddedCollector:
    """The embedded receiver as an object, so tests can run it in-process on free ports."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.receiver: Receiver | None = None
        self._runner: web.AppRunner | None = None
        self._grpc: grpc.aio.Server | None = None
        self._lock = CollectorLock(config.data_root)

    async def start(self) -> Endpoints:
        if not self.config.discard:  # the data root's one writer (a second collector is refused)
            self._lock.acquire()
        try:
            self.receiver = Receiver(self.config)
        except BaseException:
            self._lock.release()
            raise
        host = self.config.host
        self._grpc = build_server(self.receiver)
        try:
            grpc_port = self._grpc.add_insecure_port(f"{_grpc_host(host)}:{self.config.grpc_port}")
        except RuntimeError:
            grpc_port = 0
        if not grpc_port:
            await self.stop()
            raise InputError(f"cannot bind gRPC {host}:{self.config.grpc_port} (in use?); pick another --grpc-port")
        await self._grpc.start()
        self._runner = web.AppRunner(build_app(self.receiver), access_log=None, handle_signals=False,
                                     shutdown_timeout=SHUTDOWN_GRACE_S, lingering_time=LINGER_S,
                                     auto_decompress=False)  # we decompress, bounded (zip bombs)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, self.config.http_port, reuse_port=False)
        try:
            await site.start()
        except OSError as exc:
            await self.stop()
            raise InputError(f"cannot bind HTTP {host}:{self.config.http_port} ({exc.strerror}); "
                             "pick another --http-port") from None
        http_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._lock.advertise(f"http://{connect_host(host)}:{http_port}")  # where a rollout beside it sends
        return Endpoints(http_port, grpc_port)

    async def stop(self) -> None:
        # both doors stop accepting at once; in-flight requests finish (their batches are written and acked)
        grpc_server, runner = self._grpc, self._runner
        self._grpc = self._runner = None
        await asyncio.gather(grpc_server.stop(SHUTDOWN_GRACE_S) if grpc_server else asyncio.sleep(0),
                             runner.cleanup() if runner else asyncio.sleep(0))
        if self.receiver is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.receiver.close)
        self._lock.release()


def _grpc_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def run_until_signal(config: CollectorConfig, on_ready: Callable[[Endpoints], None],
                           on_report: Callable[[str], None] = print) -> dict[str, int]:
    """Runs until SIGTERM/SIGINT, then shuts down gracefully; returns the counters.

    Every ``config.report_s`` seconds in which a request was refused, ``on_report`` gets one line with
    the refusals of that interval and since start, so an operator sees back-pressure (429/503), bad
    senders (400/401/413) and stalled ones (408) without a line per request.
    """
    collector = EmbeddedCollector(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    endpoints = await collector.start()
    assert collector.receiver is not None
    on_ready(endpoints)
    reports = asyncio.create_task(_report_refusals(collector.receiver, config.report_s, stop, on_report))
    await stop.wait()
    await reports
    await collector.stop()
    return dict(collector.receiver.stats)


async def _report_refusals(receiver: Receiver, every_s: float, stop: asyncio.Event,
                           on_report: Callable[[str], None]) -> None:
    if every_s <= 0:
        return
    last: dict[str, int] = {}
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except TimeoutError:
            pass
        now = receiver.refusals()
        line = format_refusals(now, last, every_s)
        if line:
            on_report(line)
        last = now


def format_refusals(now: dict[str, int], last: dict[str, int], every_s: float) -> str:
    """``refused in the last 60s: http_429=3 grpc_unavailable=1 (since start: ...)``, or "" if none."""
    delta = {k: v - last.get(k, 0) for k, v in now.items() if v > last.get(k, 0)}
    if not delta:
        return ""
    fmt = lambda counts: " ".join(f"{k}={v}" for k, v in sorted(counts.items()))  # noqa: E731
    return f"spanrl collector: refused in the last {every_s:g}s: {fmt(delta)} (since start: {fmt(now)})"
