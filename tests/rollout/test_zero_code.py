"""The standard Python zero-code path, end to end: an UNMODIFIED agent script (no OTel code,
``zero_code_agent.py``) run as ``opentelemetry-instrument python zero_code_agent.py`` (opentelemetry-distro
with every installed instrumentor) by ``spanrl rollout`` against the local fake OpenAI server, in an
environment a user might have left a gRPC setting in; then one ``spanrl ingest`` with its defaults.

Before issue 24 every agent span was lost (the distro's gRPC default spoke to the runner's HTTP port),
the run still said "ok", and the first ingest wrote no snapshot (each rollout waited for --settle).
One live run for the module; a second, uninstrumented command on the same tasks must run (its own run
id) and be reported as sending no span.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.fake_openai import FakeOpenAI
from tests.rollout.lake import query_spans

HERE = Path(__file__).parent
INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
AGENT = [sys.executable, str(HERE / "zero_code_agent.py")]
TASKS = [{"task_id": "paris", "input": "capital of France"}, {"task_id": "oslo", "input": "weather in Oslo"}]
# what a user sets for the zero-code path, plus a stale gRPC protocol the runner must override
USER_ENV = {"OTEL_SERVICE_NAME": "zero-code-agent", "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}

pytestmark = pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-distro not installed (dev extra)")


def _rollout(data: Path, tasks: Path, url: str, command: list[str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--n", "1",
           "--policy-url", url, "--timeout", "90s", "--", *command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **USER_ENV})


def _run_dir(data: Path, command: list[str]) -> Path:
    return next(p for p in (data / "runs").iterdir() if json.loads((p / "run.json").read_text())["command"] == command)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    data = tmp_path_factory.mktemp("zero-code") / "data"
    tasks = data.parent / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    with FakeOpenAI() as fake:
        traced = _rollout(data, tasks, fake.url, [INSTRUMENT, *AGENT])
        response_ids = sorted(resp["id"] for _, resp in fake.exchanges)
        plain = _rollout(data, tasks, fake.url, AGENT)  # same tasks, another command: not "already done"
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--missing-reward", "zero"])  # --settle 10m
    yield data, traced, plain, response_ids, result


def test_every_model_request_is_one_llm_call_of_its_attempts_rollout(runs) -> None:
    data, traced, _, response_ids, ingest = runs
    assert traced.returncode == 0, traced.stdout + traced.stderr
    assert ingest.exit_code == 0, ingest.output
    assert len(response_ids) == 2 * len(TASKS)  # tool call + answer per attempt
    run = _run_dir(data, [INSTRUMENT, *AGENT])
    ends = [json.loads(x) for x in (run / "attempts.jsonl").read_text().splitlines() if '"end"' in x]
    assert all(e["status"] == "ok" and e["agent_spans"] > 0 for e in ends), ends
    rows = query_spans(data, """
        WITH owner AS (SELECT DISTINCT trace_id, coalesce(attributes->>'spanrl.rollout_id',
                                                          resource->>'spanrl.rollout_id') AS rollout_id
                       FROM spans WHERE service_name = 'zero-code-agent')
        SELECT c.response_id, o.rollout_id FROM llm_calls c JOIN owner o USING (trace_id) ORDER BY 1""")
    assert sorted(r["response_id"] for r in rows) == response_ids  # each request exactly once
    per_rollout: dict[str, int] = {}
    for r in rows:
        per_rollout[r["rollout_id"]] = per_rollout.get(r["rollout_id"], 0) + 1
    assert per_rollout == {e["rollout_id"]: 2 for e in ends}


def test_the_first_ingest_writes_a_snapshot_without_waiting(runs) -> None:
    from spanrl.transitions import read_snapshot

    data, _, _, response_ids, ingest = runs
    assert "snapshot: written" in ingest.output, ingest.output
    table, _ = read_snapshot(data)
    rollouts = {r["rollout_id"] for r in table.select(["rollout_id"]).to_pylist()}
    run = _run_dir(data, [INSTRUMENT, *AGENT])
    assert rollouts == {json.loads(x)["rollout_id"] for x in (run / "attempts.jsonl").read_text().splitlines()}
    assert table.num_rows == len(response_ids)


def test_an_uninstrumented_command_runs_and_is_reported_without_spans(runs) -> None:
    data, traced, plain, _, _ = runs
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "0 ok, 0 failed" in plain.stdout  # already done (skipped): nothing; it ran as its own run
    assert _run_dir(data, AGENT) != _run_dir(data, [INSTRUMENT, *AGENT])
    out = " ".join(plain.stdout.split())
    assert f"{len(TASKS)} attempt(s) ({len(TASKS)} of them ok) sent no span of their own" in out
    last = json.loads((_run_dir(data, AGENT) / "run.json").read_text())["last_invocation"]
    assert last["attempts_without_agent_spans"] == len(TASKS)
    assert "sent no span" not in traced.stdout
