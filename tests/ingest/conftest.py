"""Shared fixtures for the ingest tests: a lake loader, and (once per session) a lake built from
real instrumented agents talking to the fake OpenAI server through the embedded collector."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spanrl.ingest.load import LakeSummary, load_lake
from spanrl.transitions.config import IngestConfig

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "helpers" / "instrumented_agent.py"
# (instrumentation, scenario, extra flags): each runs as its own process, all at once
REAL_RUNS = [
    ("openai-v2", "tools", ["--tool-spans"]),
    ("openai-v2-latest", "tools", []),         # util-genai SPAN_ONLY
    ("openai-v2-event", "tools", []),          # util-genai EVENT_ONLY: the operation.details log record
    ("openai-v2-span-and-event", "tools", []),  # util-genai SPAN_AND_EVENT: one call, two carriers
    ("openinference", "multi", []),
    ("traceloop", "tools", ["--tool-spans", "--tool-error"]),
    ("openinference,openai-v2-latest", "single", []),  # one call, recorded by two libraries
]


def fresh_root(real_lake, root: Path) -> Path:
    """A new data root ``root/data`` holding only the real runs' span files (``real_lake``'s otel/)."""
    data = root / "data"
    shutil.copytree(real_lake[0] / "otel", data / "otel")
    return data


def content_hash(data: Path) -> str:
    """The content hash of the snapshot LATEST points at."""
    from spanrl.transitions.snapshot import latest_manifest

    return latest_manifest(data)["content_hash"]


def ingest(data: Path, **kw) -> LakeSummary:
    """Stage 1 only, on DATA/otel (or kw input=...)."""
    return load_lake(IngestConfig(data=data, no_transitions=True, threads=2, **kw))


def run_agent_lake(data: Path, script: str, *args: str) -> tuple[dict, list]:
    """One agent script of tests/helpers (``--base-url`` is added) against the fake OpenAI server,
    through the embedded collector into ``data``, then stage 1; returns the script's last JSON line
    and the exchanges the server saw."""
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, str(ROOT / "tests" / "helpers" / script), *args, "--base-url", fake.url],
                             env=env, capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        exchanges = list(fake.exchanges)
    assert ingest(data).rejects == 0
    return json.loads(out.stdout.strip().splitlines()[-1]), exchanges


def ingest_captured(folder: Path, data: Path) -> tuple[LakeSummary, list]:
    """Stage 1 over a recorded real-instrumentation folder (tests/data/ingest/captured*/: span files
    and exchanges.json, what the fake server saw); returns the summary and the exchanges."""
    (data / "otel").mkdir(parents=True)
    for f in folder.glob("*.jsonl"):
        shutil.copy(f, data / "otel" / f.name)
    return ingest(data), json.loads((folder / "exchanges.json").read_text())


def stage2_connection(data: Path):
    """Stage 2 as the snapshot builder creates it (stage 1 materialised once, then the stage-2 SQL):
    a rollouts query over plain views of views spends tens of seconds binding."""
    from spanrl.transitions.build import open_lake
    from spanrl.transitions.config import make_ingest_config
    from spanrl.transitions.rollouts import register_stage2

    cfg = make_ingest_config(data=data, threads=2)
    con = open_lake(cfg)
    register_stage2(con, cfg, materialize=True)
    return con


def rows_of(con, sql: str) -> list[dict]:
    """A query's rows as dicts."""
    rel = con.execute(sql)
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]


@pytest.fixture(scope="session")
def real_lake(tmp_path_factory):
    """DATA with a lake ingested from real instrumentation runs; yields (data, exchanges, runs).

    ``exchanges``: what the fake server saw, [(request, response)]; ``runs``: {instrumentation:
    {"trace_id", "calls", "scenario"}}.
    """
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    data = tmp_path_factory.mktemp("real") / "data"
    runs: dict[str, dict] = {}
    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT))
        procs = []
        for inst, scenario, flags in REAL_RUNS:
            cmd = [sys.executable, str(AGENT), "--base-url", fake.url, "--instrumentation", inst,
                   "--scenario", scenario, "--rollout-id", f"r-{inst}", "--task-id", "weather",
                   "--reward", "1.0", "--service", inst, "--agent-name", f"agent-{inst}", *flags]
            procs.append((inst, scenario, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                                           stderr=subprocess.PIPE, text=True)))
        for inst, scenario, proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"{inst} failed:\n{err[-3000:]}"
            runs[inst] = {**json.loads(out.strip().splitlines()[-1]), "scenario": scenario}
        exchanges = list(fake.exchanges)
    summary = ingest(data)
    assert summary.rejects == 0
    yield data, exchanges, runs
