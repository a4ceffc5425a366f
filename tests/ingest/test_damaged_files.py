"""A Parquet file spanrl reads that was damaged after it was written (spanrl writes whole files and renames
them into place, so this is a disk, a cut copy, a hand edit) is named with the way back (exit 2), not a
traceback deep in DuckDB or pyarrow (exit 1), and the way back works: a lake file's spans return from the
span files, a stage-2 table from a rebuild, with the snapshot a clean run builds. Real instrumentation runs'
span files (``real_lake``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from tests.ingest.conftest import content_hash, fresh_root


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _count(data: Path, table: str) -> str:
    result = _run("sql", "--data", str(data), "--format", "csv", f"select count(*) from {table}")
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def _damage(path: Path) -> None:
    """Cut the file short: its footer (and the magic bytes) gone, as a copy cut off mid-way leaves it."""
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def test_a_damaged_lake_file_is_named_and_its_spans_come_back_from_the_span_files(real_lake, tmp_path) -> None:
    data = fresh_root(real_lake, tmp_path)
    assert _run("ingest", "--data", str(data), "--settle", "0s").exit_code == 0
    spans, reference = _count(data, "spans"), content_hash(data)
    victim = sorted((data / "lake" / "spans").glob("*/*.parquet"))[0]
    _damage(victim)
    for args in (["transitions", "build", "--data", str(data), "--settle", "0s", "--rebuild"],
                 ["sql", "--data", str(data), "select count(*) from spans"]):
        result = _run(*args)
        assert result.exit_code == 2, result.output
        assert f"{victim}: not a readable Parquet file any more" in result.output
        assert "move it out of the lake and move lake/_files.parquet aside" in result.output
    # the way back, as the message says
    shutil.move(victim, tmp_path / victim.name)
    shutil.move(data / "lake" / "_files.parquet", tmp_path / "_files.parquet.aside")
    result = _run("ingest", "--data", str(data), "--settle", "0s")
    assert result.exit_code == 0, result.output
    assert _count(data, "spans") == spans and content_hash(data) == reference


def test_a_damaged_stage2_table_is_named_and_a_rebuild_brings_it_back(real_lake, tmp_path) -> None:
    data = fresh_root(real_lake, tmp_path)
    assert _run("ingest", "--data", str(data), "--settle", "0s").exit_code == 0
    calls = _count(data, "llm_calls")
    for path in (data / "transitions" / "_tables").rglob("llm_calls.parquet"):
        _damage(path)
    result = _run("sql", "--data", str(data), "select count(*) from llm_calls")
    assert result.exit_code == 2, result.output
    assert "not a readable Parquet file any more" in result.output
    assert "`spanrl transitions build --rebuild`" in result.output
    assert _run("transitions", "build", "--data", str(data), "--settle", "0s", "--rebuild").exit_code == 0
    assert _count(data, "llm_calls") == calls
