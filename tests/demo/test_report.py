"""``spanrl report`` on a synthetic history: the files a demo leaves, no model, no server."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.demo.report import load_history, write_report
from spanrl.errors import InputError
from spanrl.transitions.schema import TRANSITION_SCHEMA
from spanrl.transitions.snapshot import write_snapshot


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _snapshot(data: Path, step_rewards: list[float | None]) -> str:
    n = len(step_rewards)
    cols = {f.name: pa.nulls(n, f.type) for f in TRANSITION_SCHEMA}
    cols["snapshot_id"] = pa.array(["x"] * n)
    cols["rollout_id"] = pa.array([f"r{i}" for i in range(n)])
    cols["step"] = pa.array([0] * n, pa.int32())
    cols["n_steps"] = pa.array([1] * n, pa.int32())
    cols["step_reward"] = pa.array(step_rewards, pa.float64())
    return write_snapshot(data, pa.table(cols, schema=TRANSITION_SCHEMA)).name


def _history(data: Path) -> None:
    """Two trained cycles: policy 0 (base) and 1 have eval + rollouts, policy 2 only its eval."""
    snaps = [_snapshot(data, [0.0, -0.2, None, -0.5]), _snapshot(data, [0.0, 0.0, -0.2])]
    cycles = [
        {"cycle": 1, "cycle_id": "0001-a", "snapshot_id": snaps[0], "mean_final_reward": 0.15, "train_loss": 0.5,
         "response_tokens": 1200, "time_s": 80.0, "rollouts": 8, "transitions": 4, "loss": "pg"},
        {"cycle": 2, "cycle_id": "0002-b", "snapshot_id": snaps[1], "mean_final_reward": 0.35, "train_loss": 0.25,
         "response_tokens": 1100, "time_s": 75.0, "rollouts": 8, "transitions": 3, "loss": "pg"},
    ]
    _jsonl(data / "adapters" / "cycles.jsonl", cycles)
    evals = {0: [0.0, 0.2, 1.0, 0.0], 1: [1.0, 0.2, 1.0, 0.0], 2: [1.0, 1.0, 1.0, 0.2]}
    for n, rewards in evals.items():
        _jsonl(data / "eval" / f"cycle-{n}.jsonl",
               [{"rollout_id": f"e{n}{i}", "reward": r, "correct": r == 1.0} for i, r in enumerate(rewards)])
    for n, rewards in {0: [0.2, 0.0], 1: [1.0, 0.2]}.items():
        _jsonl(data / "demo" / "rollouts" / f"cycle-{n}.jsonl",
               [{"rollout_id": f"t{n}{i}", "reward": r, "correct": r == 1.0, "tool_errors": 1} for i, r in enumerate(rewards)])


def test_history_merges_cycles_eval_and_snapshots(tmp_path: Path) -> None:
    _history(tmp_path)
    rows = load_history(tmp_path)
    assert [r["cycle"] for r in rows] == [0, 1, 2]
    assert [r["policy"] for r in rows] == ["base", "0001-a", "0002-b"]
    assert rows[0]["eval_reward"] == pytest.approx(0.3)
    assert rows[1]["eval_accuracy"] == pytest.approx(0.5)
    assert rows[2]["eval_reward"] == pytest.approx(0.8)
    assert rows[0]["train_reward"] == pytest.approx(0.1)
    # row N carries the cycle that trained on policy N's rollouts (adapter N+1)
    assert rows[0]["adapter"] == "0001-a" and rows[0]["train_loss"] == 0.5 and rows[0]["response_tokens"] == 1200
    assert rows[0]["air_hits"] == 2 and rows[1]["air_hits"] == 1
    assert rows[2]["adapter"] is None and rows[2]["train_reward"] is None
    assert rows[0]["tool_errors"] == 2


def test_report_command_writes_png_html_and_prints_the_table(tmp_path: Path) -> None:
    _history(tmp_path)
    result = CliRunner().invoke(cli, ["report", "--data", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "0002-b" in result.output and "0.800" in result.output
    png = tmp_path / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "report.html").read_text()
    assert "0001-a" in page and "report.png" in page and "0.300" in page


def test_train_only_history_uses_the_snapshot_reward(tmp_path: Path) -> None:
    """Without a demo (plain `spanrl train` cycles) the train reward comes from cycles.jsonl."""
    _jsonl(tmp_path / "adapters" / "cycles.jsonl",
           [{"cycle": 1, "cycle_id": "0001-a", "snapshot_id": "gone", "mean_final_reward": 0.4, "train_loss": 1.0}])
    rows, png, page = write_report(tmp_path)
    assert rows[0]["train_reward"] == 0.4 and rows[0]["air_hits"] is None and rows[0]["eval_reward"] is None
    assert png.is_file() and page.is_file()


def test_nothing_to_report_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing to report"):
        write_report(tmp_path)
    result = CliRunner().invoke(cli, ["report", "--data", str(tmp_path)])
    assert result.exit_code == 2 and "spanrl demo" in result.output


def test_a_broken_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "cycle-0.jsonl").write_text('{"reward": 1}\n{oops\n')
    with pytest.raises(InputError, match=r"cycle-0\.jsonl:2"):
        load_history(tmp_path)


def test_demo_record_gives_validation_gate_subset_and_tool_error_rate(tmp_path: Path) -> None:
    """A demo with a rejected candidate: cycle 1's candidate was worse on validation, so policy 2 is
    still adapter 0001-a and the report says the candidate was kept; the candidate's own training
    line (not the adapter numbered 2) is what row 1 shows."""
    _history(tmp_path)
    _jsonl(tmp_path / "adapters" / "cycles.jsonl", [
        {"cycle": 1, "cycle_id": "0001-a", "train_loss": 0.5, "promoted": True},
        {"cycle": 2, "cycle_id": "0002-b", "train_loss": 0.25, "promoted": False},
    ])
    _jsonl(tmp_path / "demo" / "cycles.jsonl", [
        {"cycle": 0, "policy": "base", "val_reward": 0.3, "candidate": "0001-a", "candidate_val_reward": 0.4, "promoted": True},
        {"cycle": 1, "policy": "0001-a", "val_reward": 0.4, "candidate": "0002-b", "candidate_val_reward": 0.1,
         "promoted": False},
        {"cycle": 2, "policy": "0001-a", "val_reward": 0.4, "candidate": None, "promoted": None},
    ])
    _jsonl(tmp_path / "eval" / "cycle-0.jsonl", [{"task_id": f"eval-{k:03d}", "reward": 1.0 if k < 16 else 0.0}
                                                 for k in range(64)])
    _jsonl(tmp_path / "demo" / "rollouts" / "cycle-1.jsonl",
           [{"reward": 0.2, "tool_ok": 1, "tool_errors": 3}, {"reward": 0.0, "tool_ok": 0, "tool_errors": 0}])
    rows = load_history(tmp_path)
    assert [r["policy"] for r in rows] == ["base", "0001-a", "0001-a"]
    assert rows[0]["gate"] == "promoted" and rows[1]["gate"] == "kept 0002-b as candidate" and rows[2]["gate"] is None
    assert rows[1]["train_loss"] == 0.25 and rows[2]["train_loss"] is None
    assert rows[0]["eval_n"] == 64 and rows[0]["eval_reward"] == pytest.approx(0.25)
    assert rows[0]["eval_subset_reward"] == 1.0  # the fixed first 16, comparable with the cycles between
    assert rows[1]["tool_error_rate"] == pytest.approx(0.75)
    rows, png, page = write_report(tmp_path)
    assert "kept 0002-b as candidate" in page.read_text()
