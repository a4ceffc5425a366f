"""What the runner starts when the user did not point it elsewhere: an embedded collector writing
into the data root (holding its collector lock) and a ``spanrl serve`` on the latest adapter.

Both are stopped gracefully when the run ends: the collector drains every acknowledged batch into
its files; the server flushes its own spans.

The embedded collector also counts, per ``spanrl.rollout_id``, the spans it wrote (``SpanCounts``),
so the runner can say which attempts sent no span at all: an agent that is not instrumented, exports
to another endpoint or protocol, or uses a console exporter would otherwise be an "ok" rollout that
never reaches the lake.
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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.layout import adapters_dir, latest_adapter_id, otel_dir
from spanrl.processes import stop_group
from spanrl.rollout.process import otlp_env
from spanrl.rollout.spans import SCOPE as RUNNER_SCOPE

SERVE_START_TIMEOUT_S = 600.0  # a first `--model demo` converts the GGUF once (minutes on 2 cores)
_SERVE_READY = re.compile(r"spanrl serve: .* on (http://\S+/v1)")


ROLLOUT_KEY = "spanrl.rollout_id"
SERVE_SCOPE = "spanrl.serve"  # the tracer of the `spanrl serve` the runner may start (serve/server.py)
BASE = "base"  # started_server(adapter=BASE): the base model, no adapter


class SpanCounts:
    """Spans written per ``spanrl.rollout_id`` (resource attribute, as the runner hands it out in
    ``OTEL_RESOURCE_ATTRIBUTES``, else span attribute), the runner's own ``spanrl.rollout`` spans left
    out. Fed by the collector's writer thread once a request is on disk and before it is acknowledged,
    so when an agent's process has exited (its SDK flushed on the way out) its count is final."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self.unkeyed = 0  # agent spans with no rollout id at all (an SDK that ignores OTEL_RESOURCE_ATTRIBUTES)

    def observe(self, signal: str, request: Any) -> None:
        """One request of the collector (an ``ExportTraceServiceRequest`` for traces)."""
        if signal != "traces":
            return
        found: Counter[str] = Counter()
        unkeyed = 0
        for rs in request.resource_spans:
            key = _string_attr(rs.resource.attributes, ROLLOUT_KEY)
            for ss in rs.scope_spans:
                if ss.scope.name in (RUNNER_SCOPE, SERVE_SCOPE):  # the runner's and its server's own
                    continue
                if key is not None:
                    found[key] += len(ss.spans)
                    continue
                for span in ss.spans:  # no key on the resource: an agent that sets it per span
                    own = _string_attr(span.attributes, ROLLOUT_KEY)
                    if own is not None:
                        found[own] += 1
                    else:
                        unkeyed += 1
        if found or unkeyed:
            with self._lock:
                self._counts.update(found)
                self.unkeyed += unkeyed

    def get(self, rollout_id: str) -> int:
        with self._lock:
            return self._counts[rollout_id]


def _string_attr(attributes: Any, key: str) -> str | None:
    for kv in attributes:
        if kv.key == key and kv.value.HasField("string_value"):
            return kv.value.string_value
    return None


@dataclass
class Otlp:
    """Where the agents send their spans, over which protocol, and the span counts when the runner
    can see them (its embedded collector; None for a user's ``--otlp``)."""

    endpoint: str
    protocol: str = "http/protobuf"
    counts: SpanCounts | None = field(default=None)


@contextlib.contextmanager
def embedded_collector(data: Path) -> Iterator[Otlp]:
    """The embedded receiver on a free loopback port, in a thread of this process; yields its
    OTLP/HTTP endpoint with the span counts. A collector already writing ``data`` makes this an
    InputError."""
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
    counts = SpanCounts()
    assert collector.receiver is not None  # set by start()
    collector.receiver.observers.append(counts.observe)
    try:
        yield Otlp(f"http://127.0.0.1:{ep.http_port}", "http/protobuf", counts)
    finally:
        asyncio.run_coroutine_threadsafe(collector.stop(), loop).result(120)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def running_collector(data: Path) -> Otlp | None:
    """The collector already writing ``data`` (a ``spanrl gateway``'s, a ``spanrl collector``, another
    rollout's), found by its lock (collector/lock.py), as where this run's spans go; None when no
    process holds the root. Its spans are not counted per attempt (another process receives them)."""
    from spanrl.collector.lock import running_endpoint

    held = running_endpoint(data)
    if held is None:
        return None
    pid, url = held
    if url is None:
        raise InputError(f"a collector (pid {pid}) is already writing {otel_dir(data)} and does not say where it "
                         "listens (an older spanrl); pass its OTLP/HTTP URL with --otlp (e.g. http://127.0.0.1:4318), "
                         "or stop it, or use another --data")
    return Otlp(url)


@contextlib.contextmanager
def started_server(data: Path, model: Path, otlp: Otlp, temperature: float | None, served_names: list[str],
                   log_path: Path, adapter: str | None = None, threads: int | None = None) -> Iterator[str]:
    """``spanrl serve --model M --adapter LATEST`` (when there is one) on a free port; yields its /v1 URL.
    ``served_names``: the names it answers to (``--served-model-name``, e.g. what an agent hard-codes).
    ``adapter`` (``spanrl eval`` pins a policy): ``base`` serves the base model alone, an adapter id
    that folder of DATA/adapters; None or ``LATEST`` follows LATEST. Its own spans (exact token ids)
    go to the run's collector. ``threads``: its ``--threads`` (torch CPU threads)."""
    cmd = [sys.executable, "-m", "spanrl", "serve", "--model", str(model), "--data", str(data), "--port", "0"]
    if adapter not in (None, "LATEST", BASE):
        cmd += ["--adapter", str(adapters_dir(data) / adapter)]
    elif adapter != BASE and latest_adapter_id(data):
        cmd += ["--adapter", "LATEST"]
    if temperature is not None:
        cmd += ["--temperature", str(temperature)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    for name in served_names:
        cmd += ["--served-model-name", name]
    env = dict(os.environ, **otlp_env(otlp.endpoint, otlp.protocol))
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


def gateway_info(url: str) -> dict[str, object] | None:
    """What a ``spanrl gateway`` at this policy URL says of itself (``GET /spanrl/gateway``: its
    collector, data root), or None for any other server."""
    info = _get_json(url.rstrip("/").removesuffix("/v1") + "/spanrl/gateway")
    return info if isinstance(info, dict) and info.get("gateway") == "spanrl" else None


def is_spanrl_serve(url: str) -> bool:
    """Is the policy a ``spanrl serve`` (its ``/health`` names a model path and an adapter)? It then takes the
    gateway's per-attempt base URL too."""
    health = _get_json(url.rstrip("/").removesuffix("/v1") + "/health")
    return isinstance(health, dict) and "model_path" in health and "adapter" in health


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
