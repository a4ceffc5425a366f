"""docs/production.md's recipe, end to end, on a lake the nightly job left (stage 2 built): production
traffic without rewards -> ``spanrl tasks`` -> ``spanrl rollout`` -> ``spanrl transitions build
--missing-reward zero`` -> ``spanrl judge`` -> ``spanrl ingest``. The replays join the original
traffic's task groups and every rollout of a judged group ends in the snapshot with the judge's reward.

The agent is a real program (plain ``openai`` SDK + the official openai-v2 instrumentation) that knows
nothing of spanrl; the traffic reaches the lake through the embedded collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.collector import running_collector
from tests.helpers.fake_openai import FakeOpenAI
from tests.judge.fake_judge import FakeJudge
from tests.rollout.lake import ingest, snapshot_rollouts

AGENT = [sys.executable, str(Path(__file__).parent / "agent.py")]
TRAFFIC = ["capital of France", "weather in Oslo", "capital of France"]  # one request seen twice


def _invoke(*args: str, env: dict | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_replay_and_judge_yesterdays_traffic(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with FakeOpenAI() as policy:
        with running_collector(data) as ep:  # production: the agent as deployed, spans to a collector
            env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ep.http, "OPENAI_BASE_URL": policy.url,
                   "OPENAI_API_KEY": "sk-prod"}
            for question in TRAFFIC:
                proc = subprocess.run(AGENT, input=question, env=env, capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, proc.stderr[-2000:]
        ingest(data)  # the nightly job: lake + stage-2 tables (no reward yet, so no rollout in the snapshot)
        assert (data / "transitions" / "_tables").is_dir()

        # 1. the requests, deduplicated, each under its rollouts' own task id
        tasks = tmp_path / "tasks.jsonl"
        _invoke("tasks", "--data", str(data), "--out", str(tasks),
                "--sql", "select rollout_id from rollouts where list_contains(agent_names, 'plain')")
        exported = [json.loads(line) for line in tasks.read_text().splitlines()]
        assert [(t["input"], t["rollouts"]) for t in exported] == [("capital of France", 2), ("weather in Oslo", 1)]

        # 2. each request twice against the policy
        proc = subprocess.run([sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks),
                               "--policy-url", policy.url, "--n", "2", "--concurrency", "4", "--timeout", "90s",
                               "--", *AGENT], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    # 3. a snapshot that keeps the rollouts without reward; 4. the judge scores each task group
    ingest(data, "--missing-reward", "zero")
    with FakeJudge(good_word="France") as judge:
        _invoke("judge", "--data", str(data), "--judge-url", judge.url, "--judge-model", "judge-m",
                env={"OPENAI_API_KEY": "sk-judge"})
    # 5. the judge's rows become rewards in the snapshot training reads
    ingest(data)
    snap = snapshot_rollouts(data)
    by_task: dict[str, list[dict]] = {}
    for rollout_id, row in snap.items():
        by_task.setdefault(row["task_id"], []).append({"id": rollout_id, **row})
    task_of = {t["input"]: t["task_id"] for t in exported}
    assert set(by_task) == set(task_of.values())
    france, oslo = by_task[task_of["capital of France"]], by_task[task_of["weather in Oslo"]]
    assert len(france) == 2 + 2 and len(oslo) == 1 + 2  # the original traffic and the replays, one group
    for group in (france, oslo):  # the replays' ids are <run>.<task id>.<sample>, the originals' are not
        tid = group[0]["task_id"]
        assert sorted(r["id"].rsplit(".", 1)[1] for r in group if r["id"].endswith((f".{tid}.0", f".{tid}.1"))) == ["0", "1"]
    assert {r["final_reward"] for r in france} == {1.0} and {r["final_reward"] for r in oslo} == {0.2}
