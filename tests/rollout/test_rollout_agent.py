"""``spanrl rollout`` drives a real agent program (plain openai SDK + openai-v2 instrumentation, no
spanrl import) through the embedded collector; the lake holds N rollouts per task, in their groups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.fake_openai import FakeOpenAI
from tests.rollout.lake import ingest, query_spans, snapshot_rollouts

HERE = Path(__file__).parent
AGENT = [sys.executable, str(HERE / "agent.py")]
SCORER = f"{sys.executable} {HERE / 'scorer.py'}"
TASKS = [{"task_id": "paris", "input": "capital of France", "expected": "France"},
         {"task_id": "oslo, norway", "input": "weather in Oslo", "expected": "Rome"},
         {"input": "no id given", "scorer_fails": True}]


def rollout(data: Path, tasks: Path, url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--policy-url", url,
           "--concurrency", "4", "--timeout", "90s", "--score", SCORER, *extra, "--", *AGENT]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env or dict(os.environ))


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("rollout") / "data"
    tasks = data.parent / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci")
    with FakeOpenAI() as fake:
        proc = rollout(data, tasks, fake.url, "--n", "2", env=env)
        if proc.returncode == 0:  # here, not in a test: each test reads the snapshot, whichever runs alone
            ingest(data, "--missing-reward", "zero")
        yield data, tasks, fake, proc


def test_n_rollouts_per_task_with_ids_and_groups(first_run) -> None:
    data, _, fake, proc = first_run
    assert proc.returncode == 0, proc.stderr
    assert len(fake.requests) == 3 * 2 * 2  # tool call + answer per sample
    by_task: dict[str, list[str]] = {}
    for rollout_id, r in sorted(snapshot_rollouts(data).items()):
        assert r["n_steps"] == 2
        by_task.setdefault(r["task_id"], []).append(rollout_id)
    assert set(by_task) == {"paris", "oslo, norway", "input:" + _sha("no id given")}
    run_id = by_task["paris"][0].split(".")[0]
    assert by_task["paris"] == [f"{run_id}.paris.0", f"{run_id}.paris.1"]
    assert by_task["oslo, norway"] == [f"{run_id}.oslo, norway.0", f"{run_id}.oslo, norway.1"]
    # the agent set nothing: ids came through OTEL_RESOURCE_ATTRIBUTES, appended to the user's value
    (res,) = query_spans(data, "SELECT DISTINCT resource->>'deployment.environment' AS env FROM spans "
                         "WHERE service_name = 'plain-agent'")
    assert res["env"] == "ci"


def test_scores_become_feedback_rewards_and_failures_are_recorded(first_run) -> None:
    data, _, _, proc = first_run
    rewarded = [r for r in snapshot_rollouts(data).values() if r["final_reward"] is not None]
    assert sorted((r["task_id"], r["final_reward"]) for r in rewarded) == [
        ("oslo, norway", 0.0), ("oslo, norway", 0.0), ("paris", 1.0), ("paris", 1.0)]
    # the scorer printed text for the third task: no feedback row, never a guess
    assert "2 scorer failure(s)" in proc.stdout
    ends = [json.loads(x) for x in next((data / "runs").iterdir()).joinpath("attempts.jsonl").read_text().splitlines()]
    failed = [e for e in ends if e.get("score_error")]
    assert len(failed) == 2 and "not a finite number" in failed[0]["score_error"]


def test_identical_group_warning(first_run) -> None:
    _, _, _, proc = first_run  # the fake server is deterministic: every sample of a task is the same
    assert "identical responses in every sample" in proc.stdout


def test_resumed_run_adds_only_the_missing_rollouts(first_run) -> None:
    data, tasks, fake, _ = first_run
    before = len(fake.requests)
    proc = rollout(data, tasks, fake.url, "--n", "3")  # same tasks, same policy: same default run id
    assert proc.returncode == 0, proc.stderr
    assert len(fake.requests) - before == 3 * 2  # one new sample per task
    log = next((data / "runs").iterdir()) / "attempts.jsonl"
    assert sum('"event": "start"' in line for line in log.read_text().splitlines()) == 6 + 3
    again = rollout(data, tasks, fake.url, "--n", "3")
    assert again.returncode == 0 and len(fake.requests) - before == 6  # nothing left to do
    ingest(data, "--missing-reward", "zero")
    counts: dict[str, int] = {}
    for r in snapshot_rollouts(data).values():
        counts[r["task_id"]] = counts.get(r["task_id"], 0) + 1
    assert sorted(counts.values()) == [3, 3, 3]


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]
