"""A relation read from Parquet files (``sql/incremental/<name>.sql``, ``sql/tables/<name>.sql``,
``sql/lake/<name>.sql``) has a
stand-in, ``<name>_empty.sql``, for when there is no file to read (read_parquet refuses an empty list: a
night without log files, a build without feedback, no segment yet). Builds rarely take those branches,
so each stand-in is checked here: it runs, and the real statement over one file of the stand-in's shape
makes the same columns (so a stand-in lacks no column its view reads and adds none); ``_new_*`` read a
lake-shaped file, so their types are checked too."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from spanrl.transitions.pipeline import STEP_LISTS, create
from spanrl.transitions.sqlfiles import read_sql, render_sql

SQL = Path(__file__).resolve().parents[2] / "transitions" / "sql"
PAIRS = sorted(f"{p.parent.name}/{p.stem.removesuffix('_empty')}"
               for folder in ("incremental", "tables", "lake") for p in (SQL / folder).glob("*_empty.sql")
               if (p.parent / p.name.replace("_empty", "")).is_file())
LAKE_SHAPED = {"incremental/_new_spans", "incremental/_new_logs"}  # they read new lake files
NEEDS = {"tables/rewards": "tables/segment_rewards_empty"}  # what a relation reads besides its files
# files steps (pipeline.py): their files are bodies the runner creates the relation from; the others CREATE
FILE_STEPS = {s.sql for steps in STEP_LISTS.values() for s in steps if s.files}


def _make(con: duckdb.DuckDBPyConnection, pair: str, text: str) -> None:
    """Run ``pair``'s statement (or its stand-in's) ``text`` as the build does."""
    if pair in FILE_STEPS:
        create(con, pair.split("/")[1].removesuffix("_empty"), "VIEW", text)
    else:
        con.execute(text)


def _con() -> duckdb.DuckDBPyConnection:
    """A connection with what the builder's has before these run: stage 1's spans and logs, _touched, the
    plan's _lake_traces."""
    con = duckdb.connect()
    con.execute("CREATE TABLE spans (trace_id VARCHAR, span_id VARCHAR, name VARCHAR, attributes JSON)")
    con.execute("CREATE TABLE logs (trace_id VARCHAR, body VARCHAR, attributes JSON)")
    con.execute("CREATE TEMP TABLE _touched (trace_id VARCHAR)")
    con.execute("CREATE TEMP TABLE _lake_traces (trace_id VARCHAR)")
    return con


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {relation}").fetchall()]


def _drop(con: duckdb.DuckDBPyConnection, relation: str) -> None:
    try:
        con.execute(f"DROP VIEW {relation}")
    except duckdb.CatalogException:
        con.execute(f"DROP TABLE {relation}")


def test_every_stand_in_is_checked() -> None:
    assert {"incremental/_p_traces", "incremental/_new_logs", "lake/spans", "lake/logs", "tables/rollouts",
            "tables/rewards"} <= set(PAIRS)


@pytest.mark.parametrize("pair", PAIRS)
def test_a_stand_in_has_its_relations_columns(pair: str, tmp_path: Path) -> None:
    con = _con()
    if pair in NEEDS:
        _make(con, NEEDS[pair].removesuffix("_empty"), read_sql(NEEDS[pair]))
    relation = pair.split("/")[1]
    _make(con, pair, read_sql(f"{pair}_empty"))
    empty = _columns(con, relation)
    # one file of the stand-in's shape (for _new_*: of the lake's), read through the real statement
    parquet = tmp_path / "part.parquet"
    source = relation.removeprefix("_new_") if pair in LAKE_SHAPED else relation
    con.execute(f"COPY (SELECT * FROM {source}) TO '{parquet}'")
    _drop(con, relation)
    _make(con, pair, render_sql(pair, files=[str(parquet)], whole=False))  # lake/*.sql: filtered by trace
    assert _columns(con, relation) == empty, f"{pair}_empty.sql: give it the columns of {pair}.sql"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A data root after one real `spanrl ingest` (OTLP lines -> stage 1 -> stage 2) with one chat call."""
    from click.testing import CliRunner

    from spanrl.cli import cli
    from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

    data = tmp_path_factory.mktemp("stand_ins")
    write_lines(data / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("chat m", new_trace_id(), new_span_id(), kind=3, attrs={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 5})])])
    res = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s"])
    assert res.exit_code == 0, res.output
    return data


SEGMENT_FILES = {"rollouts": "rollouts", "_traces": "_traces", "coverage": "coverage", "llm_calls": "llm_calls",
                 "_digests": "digests", "segment_rewards": "rewards"}


@pytest.mark.parametrize("relation", sorted(SEGMENT_FILES))
def test_a_segment_stand_in_has_every_column_a_build_writes(built: Path, relation: str) -> None:
    """A lake with no trace yet reads the stand-ins where a build reads segments: the summary and the
    snapshot query them by every column name a segment has (a missing `trace_ids` crashed stage 2 on a
    lake whose every line was rejected)."""
    from spanrl.transitions.tables import load_state, segment_files

    files = segment_files(built, load_state(built), SEGMENT_FILES[relation])
    assert files, f"the build wrote no {SEGMENT_FILES[relation]} segment file"
    con = _con()
    _make(con, f"tables/{relation}", read_sql(f"tables/{relation}_empty"))
    written = _columns(con, f"(SELECT * FROM read_parquet('{files[0]}'))")
    assert _columns(con, relation) == written, f"tables/{relation}_empty.sql: give it the columns a segment has"


def test_a_lake_whose_every_line_was_rejected_builds_nothing_and_says_so(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from spanrl.cli import cli

    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / "traces-2026-01-01T00-00-00.000.jsonl").write_text("garbage\n")
    res = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--settle", "0s"])
    assert res.exit_code == 0, res.output
    assert "1 bad line(s)" in res.output and "snapshot: none written" in res.output
    res = CliRunner().invoke(cli, ["sql", "--data", str(tmp_path), "--format", "csv", "select count(*) AS n from rollouts"])
    assert res.exit_code == 0 and res.output.splitlines()[:2] == ["n", "0"], res.output
