"""spanrl/workers.py: the split of work into groups, and --workers without Ray says how to get it."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.workers import split_evenly


def test_split_evenly_balances_and_keeps_every_index_once() -> None:
    sizes = [10, 1, 1, 1, 7, 3, 3]
    groups = split_evenly(sizes, 2)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    totals = sorted(sum(sizes[i] for i in g) for g in groups)
    assert totals == [13, 13]
    assert split_evenly([5], 4) == [[0]]  # fewer items than groups: no empty group
    assert split_evenly([], 3) == []


def test_workers_without_ray_say_how_to_install_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / "traces.jsonl").write_text('{"resourceSpans":[]}\n')
    res = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--workers", "2"])
    assert res.exit_code == 2
    assert "pip install 'spanrl[scale]'" in res.output
