"""``spanrl lake compact``: same rows and schema in one file per partition, journalled, a no-op when
re-run, and a kill -9 at every step loses no row (SPANRL_TEST_CRASH_AT, test-only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.ingest.housekeeping import compact_lake
from spanrl.ingest.load import lake_lock
from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest
from tests.ingest.small_lakes import build_lake, copy_lake, journal, parquet_files, rows, write_days

ROOT = Path(__file__).resolve().parents[2]
CRASH_POINTS = ["compact_written", "compact_intent", "compact_renamed", "compact_recorded", "compact_deleting"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Two days, three ingested files each: every partition (spans and logs) holds 3 Parquet files."""
    return build_lake(tmp_path_factory.mktemp("compact") / "data", days=[0, 1], files=3)


@pytest.fixture
def data(base: Path, tmp_path: Path) -> Path:
    return copy_lake(base, tmp_path / "data")


def test_compact_keeps_every_row_and_the_schema(data: Path) -> None:
    before = {t: rows(data, t) for t in ("spans", "logs")}
    old = {t: parquet_files(data, t) for t in ("spans", "logs")}
    schema = pq.read_schema(next((data / "lake" / "spans").glob("*/*.parquet")))
    assert all(len(files) == 3 for t in old for files in old[t].values())

    summary = compact_lake(data)
    assert len(summary.done) == 4 and summary.files_before == 12 and summary.rows == 12
    for table in ("spans", "logs"):
        assert rows(data, table) == before[table]  # same rows, column for column, date included
        assert all(len(files) == 1 for files in parquet_files(data, table).values())
    new = next((data / "lake" / "spans").glob("*/*.parquet"))
    assert new.name.startswith("part-") and pq.read_schema(new).equals(schema, check_metadata=False)
    assert pq.ParquetFile(new).metadata.row_group(0).column(0).compression == "ZSTD"
    # the journal: one line per new file, naming exactly the files it replaced
    lines = journal(data, "_compacted.jsonl")
    assert len(lines) == 4
    for line in lines:
        table, part, name = line["into"].split("/")
        assert (data / "lake" / line["into"]).is_file() and line["rows"] == 3
        assert sorted(line["from"]) == [f"{table}/{part}/{f}" for f in old[table][part]]
    # the views read the same lake
    assert connect(data).execute("SELECT count(*) FROM spans").fetchone()[0] == 6


def test_rerun_is_a_no_op_and_min_files_is_respected(data: Path) -> None:
    assert compact_lake(data, min_files=4).done == []  # 3 files per partition: below the threshold
    assert journal(data, "_compacted.jsonl") == []
    compact_lake(data)
    after = {t: parquet_files(data, t) for t in ("spans", "logs")}
    again = compact_lake(data)
    assert again.done == [] and {t: parquet_files(data, t) for t in ("spans", "logs")} == after
    assert len(journal(data, "_compacted.jsonl")) == 4
    # a later night adds one file to a partition: 2 files -> compacted again, the other day untouched
    write_days(data, [1], files=1, batch=1)
    ingest(data)
    third = compact_lake(data)
    assert [c.partition.name for c in third.done] == ["spans/date=2026-01-02", "logs/date=2026-01-02"]
    assert parquet_files(data)["date=2026-01-01"] == after["spans"]["date=2026-01-01"]


def test_dry_run_changes_nothing(data: Path) -> None:
    before = {t: parquet_files(data, t) for t in ("spans", "logs")}
    summary = compact_lake(data, dry_run=True)
    assert len(summary.done) == 4 and all(c.into is None for c in summary.done)
    assert {t: parquet_files(data, t) for t in ("spans", "logs")} == before
    assert not (data / "lake" / "_compacted.jsonl").exists()


def test_files_of_different_schemas_are_left_alone(data: Path) -> None:
    folder = data / "lake" / "spans" / "date=2026-01-01"
    pq.write_table(pa.table({"trace_id": ["t"], "span_id": ["s"]}), folder / "part-other.parquet")
    summary = compact_lake(data)
    assert [c.partition.name for c in summary.done] == ["spans/date=2026-01-02", "logs/date=2026-01-01",
                                                         "logs/date=2026-01-02"]
    assert len(summary.skipped) == 1 and "spans/date=2026-01-01" in summary.skipped[0]
    assert len(list(folder.glob("*.parquet"))) == 4


def _crash(data: Path, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPANRL_TEST_CRASH_AT": point}
    return subprocess.run([sys.executable, "-m", "spanrl", "lake", "compact", "--data", str(data)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_kill_at_every_step_loses_nothing_and_a_rerun_completes(data: Path, point: str) -> None:
    before = rows(data)
    keys = {r[:2] for r in before}
    crashed = _crash(data, point)
    assert crashed.returncode == 137, crashed.stderr[-2000:]
    assert {r[:2] for r in rows(data)} == keys  # no span lost (some may be visible twice for now)
    summary = compact_lake(data)
    assert rows(data) == before  # each row exactly once again
    assert all(len(f) == 1 for f in parquet_files(data).values())
    lines = journal(data, "_compacted.jsonl")
    assert sorted(line["into"] for line in lines) == sorted(
        f"{t}/{d}/{f[0]}" for t in ("spans", "logs") for d, f in parquet_files(data, t).items())
    assert not list((data / "lake").glob("*/date=*/.compact-*")) and not (data / "lake" / "_compacting.json").exists()
    if point in ("compact_written", "compact_intent"):  # before the rename: rolled back, then done again
        assert not summary.repaired or "rolled back" in summary.repaired[0] or "removed" in summary.repaired[0]
    else:
        assert "finished an interrupted compaction" in summary.repaired[0]


@pytest.mark.parametrize("reader", ["ingest", "transitions build"])
def test_the_next_ingest_or_build_finishes_an_interrupted_compaction(data: Path, reader: str) -> None:
    before = rows(data)
    assert _crash(data, "compact_recorded").returncode == 137
    assert len(rows(data)) > len(before)  # the window: the first partition's rows are visible twice
    if reader == "ingest":
        s = ingest(data)  # stage 1 repairs first, then reads (no new files here)
        assert any("finished an interrupted compaction" in w for w in s.warnings)
    else:
        result = CliRunner().invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s"])
        assert result.exit_code == 0 and "repair: finished an interrupted compaction" in result.output, result.output
    assert rows(data) == before and len(journal(data, "_compacted.jsonl")) == 1


def test_lock_and_bad_input(data: Path, tmp_path: Path) -> None:
    with lake_lock(data / "lake"):  # another writer (re-entrant in this thread, so ask from another)
        import threading

        errors = []
        t = threading.Thread(target=lambda: errors.append(_raises(lambda: compact_lake(data))))
        t.start()
        t.join()
    assert errors and "another `spanrl ingest`" in errors[0]
    runner = CliRunner()
    bad = runner.invoke(cli, ["lake", "compact", "--data", str(data), "--min-files", "1"])
    assert bad.exit_code == 2 and "--min-files 1" in bad.output
    empty = runner.invoke(cli, ["lake", "compact", "--data", str(tmp_path / "nothing")])
    assert empty.exit_code == 2 and "no trace lake here" in empty.output
    ok = runner.invoke(cli, ["lake", "compact", "--data", str(data)])
    assert ok.exit_code == 0 and "12 -> 4" in ok.output and "compacted 4 partition(s)" in ok.output


def _raises(fn) -> str:
    try:
        fn()
    except InputError as exc:
        return str(exc)
    return ""


def test_compaction_out_of_memory_changes_nothing_and_says_so(data: Path) -> None:
    """The machine's trouble, not the lake's: exit 2 naming the limit, no partition touched, no temp file left."""
    before = {t: rows(data, t) for t in ("spans", "logs")}
    files = {t: parquet_files(data, t) for t in ("spans", "logs")}
    # 1MB: a block or two of DuckDB's 256 KiB; the same lake compacts at 4MB
    result = CliRunner().invoke(cli, ["lake", "compact", "--data", str(data), "--memory-limit", "1MB"])
    assert result.exit_code == 2, result.output
    assert "lake compaction stopped: DuckDB ran out of memory under --memory-limit 1MB" in result.output
    assert {t: parquet_files(data, t) for t in ("spans", "logs")} == files
    assert not list((data / "lake").rglob(".compact-*")) and not (data / "lake" / "_compacting.json").exists()
    assert len(compact_lake(data).done) == 4
    assert {t: rows(data, t) for t in ("spans", "logs")} == before
