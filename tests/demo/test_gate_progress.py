"""The demo's gate (the --if-better evidence), its progress lines off a terminal, the summary table's
width and the closing sentences (issue 31). Pure functions and a console on a string: no demo run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from spanrl.demo.gate import gate_decision, task_rewards
from spanrl.demo.progress import LineProgress
from spanrl.demo.report import COLUMNS, interpret, print_table
from spanrl.errors import InputError
from spanrl.trainer.evidence import check_better


def _rows(rewards: list[float], samples: int = 1) -> list[dict]:
    return [{"task_id": f"val-{i:03d}", "reward": r} for i, r in enumerate(rewards) for _ in range(samples)]


def test_equal_rewards_are_kept_with_no_difference(tmp_path: Path) -> None:
    out = tmp_path / "gate-0.json"
    decision = gate_decision(_rows([0.0] * 4), _rows([0.0] * 4), "base", "cand", out)
    assert (decision.promote, decision.verdict) == (False, "no detectable difference")
    assert decision.message.startswith("kept (no difference")
    with pytest.raises(InputError, match="no detectable difference"):  # what --if-better says of the same file
        check_better(out, "cand")


def test_a_clearly_better_candidate_is_promoted_and_passes_if_better(tmp_path: Path) -> None:
    out = tmp_path / "gate-1.json"
    decision = gate_decision(_rows([0.0] * 8), _rows([1.0] * 8), "base", "cand", out)
    assert decision.promote and decision.message.startswith("promoted (better: +1.000")
    assert check_better(out, "cand")["verdict"] == "better"
    assert json.loads(out.read_text())["comparisons"][0]["tasks"] == 8


def test_worse_is_kept_and_margin_mode_promotes_only_within_the_margin(tmp_path: Path) -> None:
    worse = gate_decision(_rows([1.0] * 8), _rows([0.0] * 8), "base", "cand", tmp_path / "w.json", "margin")
    assert (worse.promote, worse.verdict) == (False, "worse") and worse.message.startswith("kept as a candidate (worse")
    mixed = [1.0, 0.0, 1.0, 0.0, 0.5, 0.5]  # undecided: the interval spans 0
    near = gate_decision(_rows(mixed), _rows(mixed[::-1]), "base", "cand", tmp_path / "n.json", "margin", 0.1)
    assert near.verdict == "no detectable difference" and near.promote and "margin" in near.message
    strict = gate_decision(_rows(mixed), _rows(mixed[::-1]), "base", "cand", tmp_path / "s.json", "better")
    assert not strict.promote and strict.message.startswith("kept (no difference")


def test_no_baseline_promotes_and_no_shared_task_keeps(tmp_path: Path) -> None:
    assert gate_decision([], _rows([0.0]), "base", "c", tmp_path / "a.json").promote
    other = [{"task_id": "val-999", "reward": 1.0}]
    assert not gate_decision(_rows([0.0]), other, "base", "c", tmp_path / "b.json").promote
    assert task_rewards([{"task_id": "t", "reward": None}, {"task_id": "t", "reward": 0.5}]) == {"t": [0.5]}


def test_line_progress_prints_start_quarters_and_end_with_counts() -> None:
    buf = io.StringIO()
    progress = LineProgress(Console(file=buf, width=100))
    assert not Console(file=buf).is_terminal  # what the demo checks before choosing this class
    with progress:
        bar = progress.add_task("c0: eval rollouts", total=None)
        progress.update(bar, total=8)
        for _ in range(8):
            progress.advance(bar)
        step = progress.add_task("cycle 0: ingest", total=1)
        progress.advance(step)
    lines = buf.getvalue().splitlines()
    assert lines[:2] == ["c0: eval rollouts: started", "c0: eval rollouts: 8 to do"]
    assert [ln.split(": ", 2)[-1].split(" ")[0] for ln in lines[2:6]] == ["2/8", "4/8", "6/8", "done,"]
    assert "done, 8/8 in " in lines[5] and lines[6] == "cycle 0: ingest: started (1 to do)"
    assert lines[7].startswith("cycle 0: ingest: done, 1/1 in ") and len(lines) == 8


def _history() -> list[dict]:
    base = {"cycle": 0, "policy": "base", "train_reward": 0.25, "eval_reward": 0.25, "eval_accuracy": 0.25,
            "eval_n": 4, "eval_subset_reward": 0.25, "val_reward": 0.0, "candidate_val_reward": 0.0,
            "gate": "kept (no difference)", "train_loss": 0.1234, "response_tokens": 1200, "tool_error_rate": 0.5,
            "air_hits": 3, "train_time_s": 42.0}
    return [base, {"cycle": 1, "policy": "base", "eval_reward": 0.5, "eval_n": 4}]


@pytest.mark.parametrize("width", [60, 80, 200])
def test_summary_table_fits_the_console_width_without_cut_headers(width: int, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    buf = io.StringIO()
    console = Console(file=buf)  # not a terminal: the width comes from $COLUMNS
    assert console.width == width
    print_table(_history(), console)
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text and "kept (no" in text
    for _, header, _ in COLUMNS:  # every header word is printed whole somewhere
        assert all(word in text for word in header.split()), header
    assert ("(continued)" in text) == (width < 150)


def test_interpretation_is_two_sentences_with_the_numbers() -> None:
    same = interpret(_history())  # nothing promoted: the same policy evaluated twice
    assert same.count(". ") == 1 and same.endswith(".")
    assert "did not change (base)" in same and "0.250 to 0.500" in same and "50%" in same
    assert "promoted 0 of 1" in same and "noise" in same
    rows = _history()
    rows[0]["gate"], rows[1]["policy"] = "promoted", "0001-x"
    moved = interpret(rows)
    assert "from 0.250 (policy base) to 0.500 (policy 0001-x, +0.250)" in moved and "promoted 1 of 1" in moved
    assert "nothing to compare" in interpret([{"cycle": 0}])


def test_the_demo_picks_lines_off_a_terminal_and_bars_in_one(tmp_path: Path) -> None:
    from rich.progress import Progress

    from spanrl.demo.config import DemoConfig
    from spanrl.demo.loop import Demo

    piped = Demo(DemoConfig(data=tmp_path), Console(file=io.StringIO()))
    assert isinstance(piped._progress(), LineProgress)
    terminal = Demo(DemoConfig(data=tmp_path), Console(file=io.StringIO(), force_terminal=True))
    assert isinstance(terminal._progress(), Progress)
