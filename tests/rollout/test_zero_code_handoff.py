"""Issue 42's reproduction, end to end: the OpenAI Agents SDK (a triage agent handing off to a math
agent with one tool, ``handoff_agent.py``, unmodified) run by ``spanrl rollout`` under the standard
zero-code path with every installed instrumentor (OpenInference OpenAI Agents, OpenInference OpenAI,
OpenLLMetry, the official GenAI OpenAI instrumentation with the latest semantic conventions and content
on spans and events), then one ``spanrl ingest``.

Before the fix, the handoff's ``{}`` arguments (left out by OpenInference, ``{}`` in the GenAI record)
stopped stage 2 with a DuckDB ``Malformed JSON`` traceback, and ``spanrl sql`` failed on ``llm_calls``,
``tool_calls`` and ``coverage`` for the whole lake. Once that was read, the same request still became
two rows (their fingerprints differed on ``{}`` against no arguments) and the handoff two tool calls.
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

HERE = Path(__file__).parent
INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
AGENT = [sys.executable, str(HERE / "handoff_agent.py")]
SCRIPT = [[{"name": "transfer_to_math_agent", "arguments": {}}], [{"name": "add", "arguments": {"a": 2, "b": 3}}],
          "The answer is 5."]
TASKS = [{"task_id": f"add-{i}", "input": f"what is 2+3 (#{i})? fake-script:{json.dumps(SCRIPT)}", "expected": "5"}
         for i in range(2)]
USER_ENV = {"OTEL_SERVICE_NAME": "handoff-agent", "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"}



def query(data: Path, sql: str) -> list[dict]:
    """A query as ``spanrl sql`` runs it (stage 1's views and the stage-2 tables)."""
    from spanrl.query import connect, run_query

    return run_query(Path(data), sql, connect(Path(data))).to_pylist()


pytestmark = pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-distro not installed (dev extra)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = tmp_path_factory.mktemp("handoff") / "data"
    tasks = data.parent / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    cmd = [sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--n", "1",
           "--policy-url", "", "--timeout", "120s", "--score", f"{sys.executable} {HERE / 'scorer.py'}",
           "--", INSTRUMENT, *AGENT]
    with FakeOpenAI() as fake:
        cmd[cmd.index("--policy-url") + 1] = fake.url
        rollout = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env={**os.environ, **USER_ENV})
        response_ids = sorted(resp["id"] for _, resp in fake.exchanges)
    ingest = CliRunner().invoke(cli, ["ingest", "--data", str(data)])
    yield data, rollout, response_ids, ingest


def test_the_night_runs_and_every_model_request_is_one_row(run) -> None:
    data, rollout, response_ids, ingest = run
    assert rollout.returncode == 0, rollout.stdout + rollout.stderr
    assert ingest.exit_code == 0, ingest.output
    assert len(response_ids) == len(SCRIPT) * len(TASKS)
    rows = query(data, "SELECT response_id, agent_name FROM llm_calls ORDER BY 1")
    assert [r["response_id"] for r in rows] == response_ids
    assert {r["agent_name"] for r in rows} == {"triage_agent", "math_agent"}
    for table in ("tool_calls", "coverage", "rollouts", "rewards"):  # every table answers
        query(data, f"SELECT count(*) AS n FROM {table}")


def test_tool_calls_keep_their_arguments_once_each(run) -> None:
    data, *_ = run
    calls = query(data, "SELECT tool_name, arguments FROM tool_calls ORDER BY tool_name, trace_id")
    assert [(c["tool_name"], json.loads(c["arguments"])) for c in calls] == (
        [("add", {"a": 2, "b": 3})] * len(TASKS) + [("transfer_to_math_agent", {})] * len(TASKS))


def test_every_attempt_is_a_rollout_of_the_snapshot_with_no_air_hit(run) -> None:
    from spanrl.transitions import read_snapshot

    data, *_ = run
    table, manifest = read_snapshot(data)
    attempts = {json.loads(x)["rollout_id"] for p in (data / "runs").iterdir()
                for x in (p / "attempts.jsonl").read_text().splitlines()}
    assert {r["rollout_id"] for r in table.select(["rollout_id"]).to_pylist()} == attempts
    assert table.num_rows == len(SCRIPT) * len(TASKS)
    hits = query(data, "SELECT count(*) AS n FROM rewards WHERE source = 'air'")
    assert hits == [{"n": 0}], hits
