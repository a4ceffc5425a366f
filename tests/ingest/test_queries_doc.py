"""Every ```sql block of docs/queries.md runs against a lake built from real instrumentation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spanrl.query import connect
from spanrl.query.sql import run_query

DOC = Path(__file__).resolve().parents[2] / "docs" / "queries.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_ten_queries_and_most_use_the_lake_views_only() -> None:
    assert len(BLOCKS) == 10
    assert sum(not re.search(r"\b(rewards|rollouts)\b", q) for q in BLOCKS) >= 8


@pytest.fixture(scope="module")
def built(real_lake, tmp_path_factory) -> Path:
    """A copy of the real lake after a whole `spanrl ingest`, as a user queries it: stage 2 built, so
    rewards/rollouts are its stored tables (the shared lake itself stays stage-1 only)."""
    import shutil

    from click.testing import CliRunner

    from spanrl.cli import cli

    data = tmp_path_factory.mktemp("queries") / "data"
    shutil.copytree(real_lake[0] / "lake", data / "lake")
    res = CliRunner().invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s"])
    assert res.exit_code == 0, res.output
    return data


@pytest.fixture(scope="module")
def con(built):
    return connect(built)


def _has(con, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [name]).fetchall()[0][0]
                or con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()[0][0])


@pytest.mark.parametrize("i", range(len(BLOCKS)), ids=[f"q{i + 1}" for i in range(len(BLOCKS))])
def test_doc_query_runs_and_returns_rows(built, con, i: int) -> None:
    data = built
    query = BLOCKS[i]
    for view in re.findall(r"\b(rewards|rollouts)\b", query):
        assert _has(con, view), f"the {view} view is missing from the query connection"
    table = run_query(data, query, con)
    assert table.num_rows > 0, query
