"""What the runner starts when the user did not point it elsewhere: an embedded collector writing
into the data root (holding its collector lock) and a ``spanrl serve`` on the latest adapter.

Both are stopped gracefully when the run ends: the collector drains every acknowledged batch into
its files; the server flushes its own spans.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from spanrl.errors import InputError
from spanrl.processes import stop_group
from spanrl.publish import read_pointer

SERVE_START_TIMEOUT_S = 600.0  # a first `--model demo` converts the GGUF once (minutes on 2 cores)
_SERVE_READY = re.compile(r"spanrl serve: .* on (http://\S+/v1)")


@contextlib.contextmanager
def embedded_collector(data: Path) -> Iterator[str]:
    """The embedded receiver on a free loopback port, in a thread of this process; yields its
    OTLP/HTTP endpoint. A collector already writing ``data`` makes this an InputError."""
    from spanrl.collector import CollectorConfig, EmbeddedCollector

    collector = EmbeddedCollector(CollectorConfig(data_root=Path(data), http_port=0, grpc_port=0))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="spanrl-rollout-collector", daemon=True)
    thread.start()
    try:
        ep = asyncio.run_coroutine_threadsafe(collector.start(), loop).result(60)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        raise
    try:
        yield f"http://127.0.0.1:{ep.http_port}"
    finally:
        asyncio.run_coroutine_threadsafe(collector.stop(), loop).result(120)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def latest_adapter(data: Path) -> str | None:
    """The id in ``DATA/adapters/LATEST`` (DESIGN §1), or None before the first training cycle."""
    return read_pointer(Path(data) / "adapters")


@contextlib.contextmanager
def started_server(data: Path, model: Path, otlp: str, temperature: float | None, log_path: Path) -> Iterator[str]:
    """``spanrl serve --model M --adapter LATEST`` (when there is one) on a free port; yields its /v1 URL.
    Its own spans (exact token ids) go to the run's collector."""
    cmd = [sys.executable, "-m", "spanrl", "serve", "--model", str(model), "--data", str(data), "--port", "0"]
    if latest_adapter(data):
        cmd += ["--adapter", "LATEST"]
    if temperature is not None:
        cmd += ["--temperature", str(temperature)]
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=otlp)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        start = log.tell()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield _wait_for_server(proc, log_path, start)
    finally:
        stop_group(proc, grace_s=20.0)


def _wait_for_server(proc: subprocess.Popen, log_path: Path, start: int) -> str:
    deadline = time.monotonic() + SERVE_START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log_path.read_bytes()[start:].decode(errors="replace")
        match = _SERVE_READY.search(text)
        if match:
            return match.group(1)
        if proc.poll() is not None:
            raise InputError(f"`spanrl serve` exited with {proc.returncode} before it was ready "
                             f"(log: {log_path}):\n{text[-1500:]}")
        time.sleep(0.2)
    raise InputError(f"`spanrl serve` not ready after {SERVE_START_TIMEOUT_S:g}s (log: {log_path})")


def policy_id(url: str) -> str:
    """The adapter a policy server answers with, for the default run id: ``spanrl serve``'s
    ``/health`` names it; otherwise (vLLM, any OpenAI-compatible server) the sorted ``/models`` ids,
    which list the loaded LoRA adapters. Unreachable: InputError naming the URL."""
    root = url.rstrip("/").removesuffix("/v1")
    health = _get_json(root + "/health")
    if isinstance(health, dict) and isinstance(health.get("adapter"), str):
        return f"{health.get('model', '')}:{health['adapter']}"
    models = _get_json(url.rstrip("/") + "/models")
    if isinstance(models, dict) and isinstance(models.get("data"), list):
        return ",".join(sorted(str(m.get("id")) for m in models["data"] if isinstance(m, dict)))
    raise InputError(f"--policy-url {url}: no answer from {root}/health nor {url.rstrip('/')}/models; check the "
                     "server is up (the URL ends in /v1), or name the policy with --adapter-id / the run with --run-id")


def _get_json(url: str) -> object:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError, urllib.error.HTTPError):
        return None
