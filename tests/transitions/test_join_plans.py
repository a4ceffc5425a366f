"""No stage-2 statement is planned as a nested loop over two relations of a night's size.

A join without keys runs as a nested loop over every pair of rows: quadratic in the night. llm_calls'
twin matching was one (its three-way join of candidate pairs with both calls made DuckDB join the calls
to each other on the time overlap alone): at 60k spans of the recorded frameworks' traffic it cost 1 of
5 CPU s of the statement, at 120k 3 of 11 (bench/real_night.py, README "Performance"). Plans depend on
the data's statistics, so these are the plans of the builder's own statements, on its own connection,
over one copy of every recorded framework run (tests/helpers/mutate.py: several instrumentations on one
call, log events, tool results), where the old twin matching was planned as a nested loop too.
Cross products and blockwise joins against a one-row relation (the build's settings) are linear and
allowed; a "Nested Loop Join" operator is not, anywhere, and llm_calls has no keyless join at all."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from spanrl.cli import cli
from tests.helpers.mutate import write_copies
from tests.helpers.wrapped import WrappedConnection, statement_query

NAME = re.compile(r"-- name: (\w+)")
KEYLESS = ("Nested Loop Join", "Blockwise Nl Join", "Cross Product", "Piecewise Merge Join", "IE Join")


class _Planned(WrappedConnection):
    """A builder connection that plans (EXPLAIN) each named statement before it runs it; for a name in
    ``instead``, the given SQL is planned in its place (the statement itself still runs)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, plans: dict[str, str], instead: dict[str, str]) -> None:
        super().__init__(con)
        object.__setattr__(self, "_plans", plans)
        object.__setattr__(self, "_instead", instead)

    def execute(self, query, *args, **kw):
        name, select = NAME.search(str(query)), statement_query(str(query))
        if name and select:
            sql = self._instead.get(name[1], select)
            plan = self._con.execute("EXPLAIN " + sql, *(() if name[1] in self._instead else args), **kw).fetchall()
            self._plans[name[1]] = "\n".join(row[1] for row in plan)
        return super().execute(query, *args, **kw)


def _builder_plans(data: Path, instead: dict[str, str] | None = None) -> dict[str, str]:
    """Every named statement's plan in a full build of ``data``, on the builder's own connections."""
    found: dict[str, str] = {}
    connect = duckdb.connect
    mp = pytest.MonkeyPatch()
    mp.setattr(duckdb, "connect", lambda *a, **kw: _Planned(connect(*a, **kw), found, instead or {}))
    try:
        cli(["transitions", "build", "--data", str(data), "--settle", "0s", "--rebuild"], standalone_mode=False)
    finally:
        mp.undo()
    return found


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("copies")
    write_copies(data / "otel", 1)
    subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s",
                    "--no-transitions"], check=True, capture_output=True)
    return data


@pytest.fixture(scope="module")
def plans(lake: Path) -> dict[str, str]:
    return _builder_plans(lake)


def test_the_builder_statements_were_planned(plans: dict[str, str]) -> None:
    assert {"llm_calls", "_span_tree", "_air_rule_hits", "rollout_digests"} <= set(plans), sorted(plans)


def test_no_statement_is_planned_as_a_nested_loop_join(plans: dict[str, str]) -> None:
    nested = sorted(name for name, plan in plans.items() if "Nested Loop Join" in plan)
    assert not nested, f"planned as a nested loop over every pair of rows (quadratic in a night): {nested}"


def test_llm_calls_joins_only_by_keys(plans: dict[str, str]) -> None:
    keyless = [op for op in KEYLESS if op in plans["llm_calls"]]
    assert not keyless, f"llm_calls has a join without keys: {keyless}"


def test_the_twin_matching_of_before_would_fail_here(lake: Path) -> None:
    """The check can fail: llm_calls' twin edges as one three-way join (before pair_a) is planned with a
    nested loop over this same lake."""
    sql = (Path(__file__).resolve().parents[2] / "ingest" / "sql" / "llm_calls.sql").read_text()
    start, end = sql.index("pair_a AS MATERIALIZED"), sql.index("links AS (")
    old_edges = """edges AS (
    SELECT p.ta, p.ka, p.tb, p.kb
    FROM pairs AS p
    JOIN cand AS a ON a.trace_id = p.ta AND a.call_key = p.ka
    JOIN cand AS b ON b.trace_id = p.tb AND b.call_key = p.kb
    WHERE a.s <= b.e AND b.s <= a.e
      AND NOT list_has_any(a.scopes, b.scopes)
      AND (a.out_fp IS NULL OR b.out_fp IS NULL OR a.out_fp = b.out_fp)
      AND (a.in_fp IS NULL OR b.in_fp IS NULL OR a.in_fp = b.in_fp)
      AND (a.rid = b.rid
           OR (a.rid IS NULL OR b.rid IS NULL) AND a.svc = b.svc AND a.res = b.res
              AND (a.model IS NULL OR b.model IS NULL OR a.model = b.model)
              AND (a.it IS NULL OR b.it IS NULL OR a.it = b.it)
              AND (a.ot IS NULL OR b.ot IS NULL OR a.ot = b.ot))
),
"""
    plans = _builder_plans(lake, {"llm_calls": sql[:start] + old_edges + sql[end:]})
    assert "Nested Loop Join" in plans["llm_calls"]
