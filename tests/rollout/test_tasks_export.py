"""``spanrl tasks``: user inputs of past rollouts, selected by SQL, deduplicated, as a tasks file that
``spanrl rollout`` reads back (the task ids are the rollouts' own, so replays join their groups)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.rollout.tasks import read_tasks
from tests.judge.lake import write_rollouts
from tests.rollout.lake import ingest

ROLLOUTS = [("a0", "add", "What is 40 + 2?", "42"), ("a1", "add", "What is 40 + 2?", "41"),
            ("p0", "prod-7f", "What is 40 + 2?", "40"),  # the same request seen under another task id
            ("m0", "mul", "What is 6 * 7?", "42"), ("s0", "sub", "What is 50 - 8?", "42")]


def test_export_selects_by_sql_dedupes_and_round_trips(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS)
    ingest(data, "--no-transitions")
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(cli, ["tasks", "--data", str(data), "--out", str(out), "--sql",
                                      "select rollout_id from _rollout_tasks where task_id <> 'sub'"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["input"], r["rollouts"]) for r in rows] == [
        ("add", "What is 40 + 2?", 3), ("mul", "What is 6 * 7?", 1)]
    assert [t.task_id for t in read_tasks(out)] == ["add", "mul"]  # `spanrl rollout` reads it back


def test_export_reads_a_built_lake_as_the_nightly_job_leaves_it(tmp_path: Path) -> None:
    """The production path: `spanrl ingest` ran stage 2, so `spanrl sql` serves the materialised
    tables (no `_rollout_*` helpers); the default export and a `--sql` over `rollouts` both work."""
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS)
    ingest(data, "--missing-reward", "zero")
    assert (data / "transitions" / "_tables").is_dir()
    for sql, expected in ((None, [("add", 3), ("mul", 1), ("sub", 1)]),
                          ("select rollout_id from rollouts where task_id <> 'sub'", [("add", 3), ("mul", 1)])):
        out = tmp_path / "tasks.jsonl"
        result = CliRunner().invoke(cli, ["tasks", "--data", str(data), "--out", str(out),
                                          *(("--sql", sql) if sql else ())])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [(r["task_id"], r["rollouts"]) for r in rows] == expected
        assert {r["input"] for r in rows} <= {q for _, _, q, _ in ROLLOUTS}


def test_the_input_is_the_request_not_a_worked_example(tmp_path: Path) -> None:
    """An agent that keeps a worked example before the task in its conversation: each rollout's input is
    its own request (the last user message of its first call), not the example every rollout shares."""
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS, history=(("What is 1 + 1?", "2"),))
    ingest(data, "--no-transitions")
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(cli, ["tasks", "--data", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["input"] for r in rows} == {q for _, _, q, _ in ROLLOUTS}


def test_empty_lake_says_to_ingest(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["tasks", "--data", str(tmp_path)])
    assert result.exit_code == 2 and "spanrl ingest" in result.output
