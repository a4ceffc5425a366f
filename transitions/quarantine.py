"""Stage 2 that a few traces cannot stop (docs/lake.md, "Quarantine").

Every value an instrumentation sends is read the non-throwing way (NULL plus a counted reason), but a
night must not depend on that being complete: when a statement of stage 2 still fails on the data
(DuckDB's error, not the machine's: ``resource_trouble`` stops the build whole), the traces that make it
fail are found by halves, the build runs again without them, and they are recorded with their span
files and the error in the build's ``quarantine`` table (``spanrl sql "select * from quarantine"``) and
in the summary. The next build is a full one, so a release that reads them takes them back, and its
snapshot is the one a clean build of the same lake gives (same content hash).

A trace that fails only together with others (neither half alone) quarantines the whole group it was
found in; traces sharing a rollout id with a quarantined trace go with it, so no rollout is scored on
part of its spans. A failure with no trace at all (the empty lake fails too) is a defect of the build
itself, not of the data: it is raised as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from spanrl.errors import resource_trouble
from spanrl.layout import lake_dir
from spanrl.sqlfiles import rows, sql_literal
from spanrl.transitions.incremental import restrict_lake
from spanrl.transitions.sqlfiles import read_sql

FAIL_ENV = "SPANRL_TEST_FAIL_ON_TRACE"  # tests only: stage 2 throws on the spans of this trace id
# the segment tables whose SELECTs a probe evaluates after the stage-2 steps (what publish writes)
Probe = Callable[[duckdb.DuckDBPyConnection], None]
MAX_ERROR_CHARS = 500


def injected_failure(con: duckdb.DuckDBPyConnection) -> None:
    """Tests only (``SPANRL_TEST_FAIL_ON_TRACE=<trace id>``): a statement of stage 2 that throws on one
    trace's data, as a conversion would on a value no release reads yet. Never set it outside tests."""
    if bad := os.environ.get(FAIL_ENV):
        con.execute("SELECT CAST('injected failure on ' || trace_id AS INTEGER) FROM spans WHERE trace_id = $t",
                    {"t": bad}).fetchall()


def is_data_error(exc: BaseException) -> bool:
    """A DuckDB error that some input may cause (a conversion, a malformed value, a failed cast),
    as opposed to the machine's trouble (memory, disk), which stops the build whole."""
    return isinstance(exc, duckdb.Error) and resource_trouble(exc) is None and not isinstance(
        exc, duckdb.InterruptException)


def restrict_traces(con: duckdb.DuckDBPyConnection, data: Path, traces: list[str], keep: bool) -> None:
    """``spans`` and ``logs`` as temp views over every lake file (``incremental.restrict_lake``'s
    LAKE_STEPS): only ``traces`` (``keep``) or all but them (quarantine/lake_without.sql). Temp views
    shadow the lake's inside every later view, so stage 2 sees nothing else. A log record without a
    trace id stays (it may name a kept call's response id); a span without one goes (no rollout has it)."""
    con.execute("CREATE OR REPLACE TEMP TABLE _q_traces (trace_id VARCHAR)")
    if traces:
        con.execute("INSERT INTO _q_traces SELECT unnest($t)", {"t": traces})
    root = lake_dir(data)
    files = sorted(str(p.relative_to(Path(data))) for t in ("spans", "logs") for p in (root / t).glob("*/*.parquet"))
    restrict_lake(con, data, files, traces="SELECT trace_id FROM _q_traces" if keep else lake_sql(con, "lake_without"))


def lake_sql(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """``sql/quarantine/<name>.sql`` with ``lake_catalog`` named: the lake's own ``spans`` and ``logs``
    are read through their database's name, since the temp views that shadow them have the same names."""
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    return read_sql(f"quarantine/{name}").replace("lake_catalog.", '"' + catalog.replace('"', '""') + '".')


def lake_traces(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every trace id of the lake, sorted (halves are then reproducible)."""
    return [r["trace_id"] for r in rows(con, "SELECT DISTINCT trace_id FROM spans WHERE trace_id IS NOT NULL ORDER BY 1")]


class Finder:
    """Runs ``attempt`` (stage 2's rows, on a fresh connection to the lake of data root ``data``) over
    subsets of the traces and finds the ones it fails on; ``errors`` holds the error each culprit gave."""

    def __init__(self, open_con: Callable[[], duckdb.DuckDBPyConnection], attempt: Probe, data: Path) -> None:
        self.open_con, self.attempt, self.data = open_con, attempt, data
        self.errors: dict[str, str] = {}
        self.probes = 0

    def fails(self, traces: list[str]) -> str | None:
        """The error stage 2 gives on ``traces`` alone, or None."""
        self.probes += 1
        con = self.open_con()
        try:
            restrict_traces(con, self.data, traces, keep=True)
            self.attempt(con)
            return None
        except Exception as exc:
            if not is_data_error(exc):
                raise
            return str(exc).strip()[:MAX_ERROR_CHARS]
        finally:
            con.close()

    def culprits(self, traces: list[str], error: str) -> list[str]:
        """The traces of ``traces`` (which fail together with ``error``) that stage 2 fails on."""
        if len(traces) == 1:
            self.errors[traces[0]] = error
            return traces
        half = len(traces) // 2
        found: list[str] = []
        for part in (traces[:half], traces[half:]):
            if (err := self.fails(part)) is not None:
                found += self.culprits(part, err)
        if not found:  # each half reads alone, together they fail: the group goes
            self.errors.update(dict.fromkeys(traces, error))
            return traces
        return found


def with_rollouts(con: duckdb.DuckDBPyConnection, culprits: list[str]) -> list[str]:
    """``culprits`` and every trace that names one of their rollout ids (a rollout is never scored on
    part of its traces). Read from the raw attributes; if even that fails, the culprits alone."""
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _q_traces AS SELECT unnest($t) AS trace_id", {"t": culprits})
        found = rows(con, lake_sql(con, "rollout_mates"))
    except duckdb.Error as exc:
        if not is_data_error(exc):
            raise
        return culprits
    return sorted(set(culprits) | {r["trace_id"] for r in found})


def find(open_con: Callable[[], duckdb.DuckDBPyConnection], attempt: Probe,
         first_error: BaseException, data: Path) -> tuple[list[dict[str, Any]], int]:
    """The quarantine for a build that failed with ``first_error``: [{trace_id, source_files, error}]
    and the number of probes it took. Raises ``first_error`` when the data is not the cause."""
    con = open_con()
    try:
        traces = lake_traces(con)
    finally:
        con.close()
    finder = Finder(open_con, attempt, data)
    top = finder.fails(traces)
    if top is None:  # the whole lake builds when run again: not a data failure we can isolate
        raise first_error
    if finder.fails([]) is not None:  # an empty lake fails too: the build's own defect
        raise first_error
    culprits = finder.culprits(traces, top)
    if len(culprits) == len(traces):
        raise first_error
    con = open_con()
    try:
        chosen = with_rollouts(con, culprits)
        con.execute("CREATE OR REPLACE TEMP TABLE _q_traces AS SELECT unnest($t) AS trace_id", {"t": chosen})
        files = {r["trace_id"]: r["files"] for r in rows(con, lake_sql(con, "trace_files"))}
    finally:
        con.close()
    return [{"trace_id": t, "source_files": files.get(t, []),
             "error": finder.errors.get(t) or f"shares a rollout with a quarantined trace: {top}"}
            for t in chosen], finder.probes


def rebuild_without(exc: BaseException, plan: Any, state: dict[str, Any],
                    open_con: Callable[[], duckdb.DuckDBPyConnection], probe: Probe,
                    compute: Probe, data: Path) -> duckdb.DuckDBPyConnection:
    """After stage 2 failed with ``exc``: the quarantine found (``plan.quarantine``), then the rows of
    every other trace computed in full (``compute``) on a new connection, which is returned."""
    plan.quarantine, probes = find(open_con, probe, exc, data)
    plan.full, plan.reason = True, (f"{plan.reason or 'incremental'}; again in full without "
                                    f"{len(plan.quarantine)} quarantined trace(s) ({probes} probes)")
    state["segments"], state["global"] = {}, {}
    con = open_con()
    try:
        restrict_traces(con, data, [q["trace_id"] for q in plan.quarantine], keep=False)
        compute(con)
    except BaseException:
        con.close()
        raise
    return con


def write_table(con: duckdb.DuckDBPyConnection, path: Path, entries: list[dict[str, Any]], build_id: str) -> None:
    """``quarantine.parquet`` of a build (empty when nothing is quarantined: the table always exists)."""
    con.execute("CREATE OR REPLACE TEMP TABLE _quarantine (trace_id VARCHAR, source_files VARCHAR[], error VARCHAR)")
    for e in entries:
        con.execute("INSERT INTO _quarantine VALUES ($t, $f, $e)",
                    {"t": e["trace_id"], "f": list(e["source_files"]), "e": e["error"]})
    con.execute(f"COPY (SELECT *, {sql_literal(build_id)} AS build_id, "
                f"{sql_literal(time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))}::TIMESTAMP AS quarantined_at "
                f"FROM _quarantine ORDER BY trace_id) TO {sql_literal(path)} (FORMAT parquet)")
