"""Lake retention (``spanrl lake prune``, ``spanrl ingest --keep-days`` / ``keep_days``): old date
partitions go by data time, journalled; snapshots already written keep their rows; a kill -9 at
every step is finished by the next run (SPANRL_TEST_CRASH_AT, test-only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.ingest.housekeeping import prune_lake
from spanrl.transitions import read_snapshot
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import write_lines
from tests.ingest.small_lakes import build_lake, copy_lake, journal, parquet_files, rollout_line, rows

ROOT = Path(__file__).resolve().parents[2]
OLD = "date=2026-01-01"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Spans and logs on 2026-01-01, 01-02 and 01-05 (newest), one file per partition."""
    return build_lake(tmp_path_factory.mktemp("prune") / "data", days=[0, 1, 4], files=1)


@pytest.fixture
def data(base: Path, tmp_path: Path) -> Path:
    return copy_lake(base, tmp_path / "data")


def test_prune_by_data_time_is_journalled_and_deterministic(data: Path) -> None:
    kept = {t: rows(data, t, where="\"date\" > '2026-01-01'") for t in ("spans", "logs")}
    # the wall clock is months past these dates: measured from the newest partition, nothing is old
    assert prune_lake(data, keep_days=30).partitions == []
    dry = prune_lake(data, keep_days=3, dry_run=True)
    assert dry.partitions == [f"spans/{OLD}", f"logs/{OLD}"] and (data / "lake" / "spans" / OLD).is_dir()
    old_files = sorted(f"{t}/{OLD}/{f}" for t in ("spans", "logs") for f in parquet_files(data, t)[OLD])

    summary = prune_lake(data, keep_days=3)  # newest 2026-01-05 - 3 days: older than 2026-01-02 goes
    assert str(summary.newest) == "2026-01-05" and str(summary.older_than) == "2026-01-02"
    assert list(parquet_files(data)) == list(parquet_files(data, "logs")) == ["date=2026-01-02", "date=2026-01-05"]
    (line,) = journal(data, "_pruned.jsonl")
    assert sorted(line["dropped"]) == old_files and line["older_than"] == "2026-01-02" and line["at"]
    assert {t: rows(data, t) for t in ("spans", "logs")} == kept and len(kept["spans"]) == 2
    assert not (data / "lake" / "_trash").exists() and not (data / "lake" / "_pruning.json").exists()
    again = prune_lake(data, keep_days=3)  # same newest partition, same cut-off: nothing more
    assert again.partitions == [] and len(journal(data, "_pruned.jsonl")) == 1


@pytest.mark.parametrize("point", ["prune_intent", "prune_moved", "prune_recorded"])
def test_kill_at_every_step_is_finished_by_the_next_run(data: Path, point: str) -> None:
    env = {**os.environ, "SPANRL_TEST_CRASH_AT": point}
    crashed = subprocess.run([sys.executable, "-m", "spanrl", "lake", "prune", "--data", str(data), "--keep-days", "3"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert crashed.returncode == 137, crashed.stderr[-2000:]
    assert (data / "lake" / "_pruning.json").exists()
    s = ingest(data)  # stage 1 finishes the prune before it reads anything
    assert any("finished an interrupted prune" in w for w in s.warnings)
    assert OLD not in parquet_files(data) and OLD not in parquet_files(data, "logs")
    assert len(journal(data, "_pruned.jsonl")) == 1 and len(rows(data)) == 2
    assert not (data / "lake" / "_trash").exists() and not (data / "lake" / "_pruning.json").exists()


def test_ingest_keep_days_prunes_before_the_snapshot_and_old_snapshots_keep_their_rows(tmp_path: Path) -> None:
    write_lines(tmp_path / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", [rollout_line("r-old", 0), rollout_line("r-new", 4)])
    runner = CliRunner()
    first = runner.invoke(cli, ["ingest", "--data", str(tmp_path), "--settle", "0s"])
    assert first.exit_code == 0, first.output
    table, old = read_snapshot(tmp_path)
    assert sorted(table["rollout_id"].to_pylist()) == ["r-new", "r-old"]
    (tmp_path / "spanrl.toml").write_text("[ingest]\nkeep_days = 2\n")  # the spanrl.toml key
    second = runner.invoke(cli, ["ingest", "--data", str(tmp_path), "--settle", "0s"])
    assert second.exit_code == 0, second.output
    assert f"spans/{OLD}" in second.output and list(parquet_files(tmp_path)) == ["date=2026-01-05"]
    table, new = read_snapshot(tmp_path)
    assert table["rollout_id"].to_pylist() == ["r-new"]  # stage 2 read the pruned lake
    assert new["stats"]["config_changed"] == []  # a retention setting is not a stage-2 config change
    # the snapshot written before the prune is untouched: same rows, its content hash still checks
    table, again = read_snapshot(tmp_path, old["snapshot_id"])
    assert sorted(table["rollout_id"].to_pylist()) == ["r-new", "r-old"] and again["content_hash"] == old["content_hash"]


def test_bad_retention_input_exits_2(data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["lake", "prune", "--data", str(data), "--keep-days", "0"],
                 ["ingest", "--data", str(data), "--keep-days", "-1"],
                 ["ingest", "--data", str(data), "--keep-snapshots", "0"],
                 ["lake", "prune", "--data", str(tmp_path / "none"), "--keep-days", "3"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
    (data / "spanrl.toml").write_text('[ingest]\nkeep_days = "week"\n')
    result = runner.invoke(cli, ["ingest", "--data", str(data)])
    assert result.exit_code == 2 and "--keep-days 'week'" in result.output
    assert len(rows(data)) == 3  # nothing was dropped by a refused run
