"""``spanrl rollout --model``: the ``spanrl serve`` the runner starts takes the gateway's per-attempt base URL
(``/r/<rollout_id>/<traceparent>/v1``), so the server's own span of every call joins its attempt with no help
from the agent: no telemetry in the agent, no ``traceparent`` header, no spanrl import (issues 41, 43).

Two unmodified agents with no telemetry at all, on the tiny random model: the OpenAI Agents SDK with its
default model (the Responses API) and Anthropic's SDK (Messages API). Both fail on the random model's
answers (the SDK stops at a reply cut by max tokens; the Anthropic agent wants a tool call), after their
first request, which is still recorded: what is checked is the capture, not the agents' luck. After one ``spanrl ingest`` every request
the server answered is one ``llm_calls`` row inside its attempt's rollout, with the engine's token ids, and
the Agents SDK's rollouts are transitions with ``token_source = engine``. Before, each call was a trace of
its own, in no rollout: no transition.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.tiny_model import make_tiny_model

AGENTS = Path(__file__).resolve().parents[1] / "gateway"


def _rollout(data: Path, tasks: Path, model: Path) -> subprocess.CompletedProcess:
    """One run, one server: each task names the agent script it runs ({task_id} in the command)."""
    cmd = [sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--n", "1",
           "--model", str(model), "--served-model-name", "gpt-4.1-mini", "--served-model-name", "claude-sonnet-4-5",
           "--retries", "0", "--timeout", "120s", "--", sys.executable, f"{AGENTS}/{{task_id}}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    from spanrl.query import connect

    root = tmp_path_factory.mktemp("attempt-urls")
    model = make_tiny_model(root / "tiny")
    data = root / "data"
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": agent, "input": "capital of France"}) + "\n"
                             for agent in ("agents_sdk_agent.py", "anthropic_agent.py")))
    runs = _rollout(data, tasks, model)
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", "--missing-reward", "zero"])
    assert result.exit_code == 0, result.output
    con = connect(data)
    yield data, runs, con
    con.close()


def _rows(con, sql: str) -> list[dict]:
    rel = con.execute(sql)
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]


def _attempts(data: Path) -> dict[str, str]:
    """rollout id -> the agent script (the task id) of every attempt the run made."""
    (run,) = (data / "runs").iterdir()
    return {e["rollout_id"]: e["task_id"] for e in map(json.loads, (run / "attempts.jsonl").read_text().splitlines())}


def test_every_server_call_is_a_row_of_its_attempt_with_engine_ids(lake) -> None:
    data, _, con = lake
    attempts = _attempts(data)
    calls = _rows(con, """SELECT c.span_id, c.convention, r.rollout_id, c.prompt_token_ids IS NOT NULL
                                 AND c.response_token_ids IS NOT NULL AS ids
                          FROM llm_calls AS c LEFT JOIN (SELECT unnest(trace_ids) AS trace_id, rollout_id FROM rollouts)
                               AS r USING (trace_id)""")
    served = _rows(con, "SELECT count(*) AS n FROM spans WHERE scope_name = 'spanrl.serve'")[0]["n"]
    assert len(calls) == served >= 2  # every call the server answered is one row (each attempt has one: below)
    assert all(c["ids"] for c in calls), calls
    assert {c["rollout_id"] for c in calls} == set(attempts), (calls, attempts)


def test_the_agents_sdk_rollout_trains_on_the_engines_ids(lake) -> None:
    from spanrl.transitions import read_snapshot

    data, _, _ = lake
    table, _ = read_snapshot(data)
    sdk = {r for r, script in _attempts(data).items() if script == "agents_sdk_agent.py"}
    rows = [r for r in table.select(["rollout_id", "token_source"]).to_pylist() if r["rollout_id"] in sdk]
    assert rows and all(r["token_source"] == "engine" for r in rows)
