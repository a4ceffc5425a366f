"""Out of memory or disk is the machine's trouble, not bad input: the stage stops whole, records nothing,
says what happened and what to do (exit 2), and the next run loads every span once.

Before, stage 1 took DuckDB's out-of-memory error (a `--memory-limit` too small for the reader's buffers)
for a file it "cannot read as OTLP JSON lines": the file became a reject, was recorded as read, and the
next run found "no new span data": its spans were lost. A full disk ended in a traceback (exit 1), or,
when DuckDB's write failed, in the same reject. The inputs are the span files of real instrumentation
runs (``real_lake``); the disk is a real, full tmpfs (root only, as the collector's disk-full tests).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from tests.helpers.disk import fill, tmpfs
from tests.ingest.conftest import content_hash, fresh_root, ingest


def _run(*args: str):
    return CliRunner().invoke(cli, [*args, "--settle", "0s"])


def _reference(real_lake, tmp_path: Path) -> tuple[int, str]:
    """Spans and snapshot content hash of the same files ingested with nothing going wrong."""
    data = fresh_root(real_lake, tmp_path / "reference")
    spans = ingest(data).spans
    assert _run("transitions", "build", "--data", str(data)).exit_code == 0
    return spans, content_hash(data)


def test_stage1_out_of_memory_records_nothing_and_the_next_run_loads_every_span(real_lake, tmp_path) -> None:
    spans, _ = _reference(real_lake, tmp_path)
    data = fresh_root(real_lake, tmp_path)
    with pytest.raises(InputError) as err:
        ingest(data, memory_limit="8MB")  # below the 16 MiB JSON reader buffer: DuckDB cannot load any file
    message = str(err.value)
    assert message.startswith("stage 1 (span files -> lake) stopped: DuckDB ran out of memory under --memory-limit 8MB")
    assert "Nothing of this run was recorded" in message and "raise the limit" in message
    lake = data / "lake"
    assert not list(lake.glob("*/date=*/*.parquet")) and not (lake / "_rejects").exists()
    assert not (lake / "_files.parquet").exists() and not list((lake / "_staging").glob("*"))
    again = ingest(data)
    assert (again.spans, again.rejects) == (spans, 0)
    assert ingest(data).spans == 0  # and only once


def test_stage2_out_of_memory_keeps_the_last_snapshot_and_the_next_run_builds_it(real_lake, tmp_path) -> None:
    _, reference = _reference(real_lake, tmp_path)
    data = fresh_root(real_lake, tmp_path)
    assert _run("ingest", "--data", str(data), "--no-transitions").exit_code == 0
    result = _run("transitions", "build", "--data", str(data), "--memory-limit", "8MB")
    assert result.exit_code == 2, result.output
    assert "stage 2 (lake -> transition snapshot) stopped: DuckDB ran out of memory under --memory-limit 8MB" in result.output
    assert "the last snapshot is unchanged" in result.output and not (data / "transitions" / "LATEST").exists()
    result = _run("ingest", "--data", str(data))  # no new span data, but the lake's rollouts are built now
    assert result.exit_code == 0, result.output
    assert content_hash(data) == reference


@contextmanager
def _full_disk(folder: Path) -> Iterator[Path]:
    """``folder`` as a 1 MiB tmpfs, filled to the last byte; yields the filler file (delete it to free the space)."""
    with tmpfs(folder, "size=1m"):
        fill(folder / "filler")
        yield folder / "filler"


def test_stage1_on_a_full_disk_records_nothing_and_loads_everything_once_space_is_back(real_lake, tmp_path) -> None:
    spans, _ = _reference(real_lake, tmp_path)
    data = fresh_root(real_lake, tmp_path)
    with _full_disk(data / "lake") as filler:
        with pytest.raises(InputError) as err:
            ingest(data)
        message = str(err.value)
        assert message.startswith("stage 1 (span files -> lake) stopped:") and "No space left on device" in message
        assert f"Free space on the file system of {data / 'lake'}" in message
        assert not list((data / "lake").glob("*/date=*/*.parquet")) and not (data / "lake" / "_files.parquet").exists()
        filler.unlink()
        assert ingest(data).spans == spans
        assert ingest(data).spans == 0


def test_stage2_on_a_full_disk_publishes_nothing_and_builds_once_space_is_back(real_lake, tmp_path) -> None:
    _, reference = _reference(real_lake, tmp_path)
    data = fresh_root(real_lake, tmp_path)
    with _full_disk(data / "transitions") as filler:
        result = _run("ingest", "--data", str(data))
        assert result.exit_code == 2, result.output
        assert "stage 2 (lake -> transition snapshot) stopped:" in result.output
        assert "No space left on device" in result.output and "Free space on the file system" in result.output
        assert not (data / "transitions" / "LATEST").exists()
        assert not [p for p in (data / "transitions" / "_tables").glob("*") if p.name != "LATEST"]  # no draft left
        filler.unlink()
        result = _run("ingest", "--data", str(data))
        assert result.exit_code == 0, result.output
        assert content_hash(data) == reference


def test_what_counts_as_the_machines_trouble() -> None:
    import errno

    import duckdb

    from spanrl.errors import resource_trouble

    con = duckdb.connect()
    con.execute("SET memory_limit = '16MB'")
    with pytest.raises(duckdb.Error) as oom:
        con.execute("SELECT length(string_agg(repeat('x', 1000), ',')) FROM range(100000)").fetchall()
    assert resource_trouble(oom.value) == "memory"
    assert resource_trouble(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))) == "disk"
    assert resource_trouble(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))) == "disk"
    assert resource_trouble(duckdb.IOException('Could not write file "x": No space left on device')) == "disk"
    assert resource_trouble(duckdb.IOException('Cannot open file "x": Permission denied')) == "io"
    with pytest.raises(duckdb.Error) as bad:  # bad input stays bad input: a reject, an error naming the line
        con.execute("SELECT '{\"a\":'::JSON").fetchall()
    assert resource_trouble(bad.value) is None
    assert resource_trouble(OSError(errno.ENOENT, "gone")) is None and resource_trouble(MemoryError()) is None
