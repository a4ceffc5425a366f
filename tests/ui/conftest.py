"""A data root for the UI tests, built once per session from real instrumentation runs.

The real ``openai`` client under a real instrumentation library (``tests/transitions/rl_agent.py``)
talks to the fake OpenAI server and exports OTLP to the embedded collector; ``spanrl ingest`` builds
the lake and a snapshot (rewards, an AIR tool_error hit, group advantages, engine token ids). A cycle
log (``spanrl.trainer.adapter.append_cycle_line``, what ``spanrl train`` calls) and the demo's
held-out/training result files give the cycles page two cycles to draw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
PLAN = [
    {"scenario": "tools", "task_id": "weather", "tool_error": True, "reward": 0.2, "rollout_id": "ui-tool-error"},
    {"scenario": "tools", "task_id": "weather", "reward": 1.0, "rollout_id": "ui-tools-ok"},
    {"scenario": "two_agents", "agent": "team", "task_id": "team", "reward": 0.6, "rollout_id": "ui-team"},
    {"scenario": "single", "task_id": "greet", "reward": 0.0, "rollout_id": "ui-single-0",
     "question": "Say hello to the penguin"},
    {"scenario": "single", "task_id": "greet", "reward": 1.0, "rollout_id": "ui-single-1"},
    {"scenario": "engine", "task_id": "exact", "reward": 0.5, "rollout_id": "ui-engine", "question": "exact tokens"},
]


def _run_agent(data: Path) -> None:
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    plan_file = data.parent / "plan.json"
    plan_file.write_text(json.dumps(PLAN))
    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ep.http}
        proc = subprocess.run([sys.executable, "-m", "tests.transitions.rl_agent", "--base-url", fake.url,
                               "--plan", str(plan_file), "--instrumentation", "openai-v2-latest"],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]


def _write_cycles(data: Path, snapshot_id: str) -> None:
    from spanrl.trainer.adapter import adapters_dir, append_cycle_line

    adapters_dir(data).mkdir(parents=True, exist_ok=True)
    for cycle, loss in ((1, 0.42), (2, 0.31)):
        append_cycle_line(adapters_dir(data), {
            "cycle": cycle, "cycle_id": f"{cycle:04d}-test", "snapshot_id": snapshot_id, "loss": "pg",
            "mean_final_reward": 0.55, "rollouts": 6, "transitions": 10, "train_loss": loss,
            "response_tokens": 120 * cycle, "time_s": 3.0})
    for folder, rewards in (("eval", [[0.2, 0.4], [0.5, 0.7], [0.8, 0.9]]),
                            ("demo/rollouts", [[0.1, 0.5], [0.6, 0.6], [0.9, 1.0]])):
        (data / folder).mkdir(parents=True, exist_ok=True)
        for n, values in enumerate(rewards):
            (data / folder / f"cycle-{n}.jsonl").write_text(
                "".join(json.dumps({"reward": v, "correct": v > 0.5, "tool_errors": 1 - n // 2}) + "\n" for v in values))
    # the demo's record: the validation gate of each trained cycle (one promoted, one kept), as spanrl demo writes it
    (data / "demo" / "cycles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"cycle": 0, "policy": "base", "candidate": "0001-test", "val_reward": 0.4, "candidate_val_reward": 0.6,
         "promoted": True, "gate": "better"},
        {"cycle": 1, "policy": "0001-test", "candidate": "0002-test", "val_reward": 0.6, "candidate_val_reward": 0.55,
         "promoted": False, "gate": "no detectable difference"})))


@pytest.fixture(scope="session")
def ui_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DATA: lake + snapshot from real runs, plus cycles.jsonl and the demo's per-cycle result files."""
    from spanrl.cli import cli
    from spanrl.transitions.snapshot import latest_manifest

    data = tmp_path_factory.mktemp("ui") / "data"
    _run_agent(data)
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    _write_cycles(data, latest_manifest(data)["snapshot_id"])
    return data
