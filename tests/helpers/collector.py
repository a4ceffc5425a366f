"""Start the embedded collector as a real subprocess for a test (the ingest tests and the demo use it).

    with running_collector(tmp_path) as ep:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": ep.http}      # or ep.grpc for gRPC exporters
        ...
    # on exit: SIGTERM (graceful: every acknowledged batch is in tmp_path/otel/*.jsonl), then kill

It asks for port 0 on both transports and reads the ports back from the ready line, so two tests
never race for a port; then it polls the HTTP port until it answers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY = re.compile(r"spanrl collector ready.* http=(\S+):(\d+) grpc=(\S+):(\d+)")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


@dataclass
class CollectorEndpoints:
    http: str  # "http://127.0.0.1:PORT" (OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf)
    grpc: str  # "127.0.0.1:PORT" (prefix http:// for OTEL_EXPORTER_OTLP_ENDPOINT with protocol grpc)
    proc: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path  # the collector's stdout+stderr: DATA/collector.log (appended across restarts)

    @property
    def otel_dir(self) -> Path:
        return self.data_dir / "otel"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def running_collector(data_dir: Path, token: str | None = None,
                      extra_args: Sequence[str] = ()) -> Iterator[CollectorEndpoints]:
    """Runs ``python -m spanrl collector --embedded`` on free ports for the duration of the block.

    ``extra_args`` go after the defaults, so they override them (``["--http-port", "14318"]`` for a
    restart on the same port, ``["--rotate-mb", "0.1"]``, ``["--fsync"]``). The collector's output goes to
    ``DATA/collector.log`` (``ep.log()``).
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / "collector.log"
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    log_start = os.fstat(log_fd).st_size  # a restart appends: look for the ready line after this
    args = [sys.executable, "-m", "spanrl", "collector", "--embedded", "--data", str(data_dir),
            "--http-port", "0", "--grpc-port", "0", *extra_args]
    env = dict(os.environ)
    env.pop("SPANRL_COLLECTOR_TOKEN", None)
    if token is not None:
        args += ["--token", token]
    proc = subprocess.Popen(args, stdout=log_fd, stderr=subprocess.STDOUT, env=env)
    os.close(log_fd)
    try:
        endpoints = _wait_ready(proc, log_path, log_start, data_dir)
        yield endpoints
    finally:
        stop_collector(proc)


def stop_collector(proc: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM, wait for the graceful drain, then SIGKILL; returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _wait_ready(proc: subprocess.Popen[bytes], log_path: Path, log_start: int, data_dir: Path) -> CollectorEndpoints:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log_path.read_bytes()[log_start:].decode(errors="replace")
        match = READY.search(text)
        if match:
            http = f"http://{match.group(1)}:{match.group(2)}"
            ep = CollectorEndpoints(http, f"{match.group(3)}:{match.group(4)}", proc, data_dir, log_path)
            _poll_http(ep.http, deadline)
            return ep
        if proc.poll() is not None:
            raise RuntimeError(f"collector exited with {proc.returncode} before it was ready:\n{text}")
        time.sleep(0.05)
    raise RuntimeError(f"collector not ready after {START_TIMEOUT_S}s:\n{log_path.read_text(errors='replace')}")


def _poll_http(base: str, deadline: float) -> None:
    """Any HTTP answer (even 404/405) means the port accepts requests."""
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/v1/traces", timeout=1).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"collector HTTP port {base} did not answer")


def wait_until(check: Any, what: str, timeout_s: float = 20.0) -> None:
    """Poll ``check()`` until it is true: tests wait on state, not on a guessed sleep."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.02)


async def await_until(check: Any, what: str, timeout_s: float = 20.0) -> None:
    """``wait_until`` inside an event loop (the collector under test runs on the same loop)."""
    import asyncio

    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(0.01)


def port_accepts(port: int, host: str = "127.0.0.1") -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


@asynccontextmanager
async def inprocess_collector(data_dir: Path, **config: Any) -> AsyncIterator[tuple[Any, str, str]]:
    """The embedded collector in this process and event loop, on free ports: (collector, http, grpc).

    For fast tests (fuzzing, status codes, injected faults); ``config`` overrides CollectorConfig fields.
    """
    from spanrl.collector.config import CollectorConfig
    from spanrl.collector.server import EmbeddedCollector

    collector = EmbeddedCollector(CollectorConfig(data_root=Path(data_dir), http_port=0, grpc_port=0, **config))
    ep = await collector.start()
    try:
        yield collector, f"http://127.0.0.1:{ep.http_port}", f"127.0.0.1:{ep.grpc_port}"
    finally:
        await collector.stop()


def make_traces(n_spans: int, name: str = "span", service: str = "test", attrs: dict[str, str] | None = None) -> Any:
    """An ExportTraceServiceRequest with ``n_spans`` spans of one new trace (ids are random)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = service
    ss = rs.scope_spans.add()
    ss.scope.name = "tests"
    trace_id = os.urandom(16)
    for i in range(n_spans):
        span = ss.spans.add(trace_id=trace_id, span_id=os.urandom(8), name=f"{name}-{i}", kind=1,
                            start_time_unix_nano=1_700_000_000_000_000_000 + i,
                            end_time_unix_nano=1_700_000_000_000_000_100 + i)
        for key, value in (attrs or {}).items():
            span.attributes.add(key=key).value.string_value = value
    return req
