"""Every read the web app makes, in one place: the guarded query connection, snapshots, the cycle log.

The pages never open a file or a connection themselves; they call ``Lake``. All SQL runs on the same
read-only connection ``spanrl sql`` uses (``spanrl.query.connect``: nothing outside the data root is
reachable, the configuration is locked, DuckDB's memory bounded by ``MEMORY_LIMIT``) and lives in
``ui/sql/*.sql``.

What scales to a million rollouts (``bench/ui.py``): the stage-2 tables the nightly build
materialises are read as it left them (lazy Arrow datasets; one rollout's rows are found by key or by
its time span, and the build writes each table in that order in small row groups, so a lookup skips
every other row group). The list pages (filters, counts, sorts over every rollout) read one narrow
row per rollout with its AIR hits and failed tools, which ``prepare`` computes from those tables once
per lake version and holds in DuckDB's memory (``held_summary.sql``, ~120 B a rollout), with one bit
per recently asked snapshot marking its rollouts (``snapshot_bit``): a filter, a count and a sort
over a million rollouts then take milliseconds. A lake whose build wrote no tables gets the stage-2
relations computed once into memory by the connection (small lakes only). Nothing is written to the data root.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from spanrl.errors import InputError
from spanrl.layout import data_version
from spanrl.query import connect
from spanrl.sqlfiles import SqlFiles
from spanrl.trainer.adapter import adapters_dir, read_cycles
from spanrl.transitions.snapshot import (
    latest_manifest,
    list_snapshots,
    read_manifest,
    register_snapshot,
    resolve_snapshot,
    snapshot_dataset,
)

_SQL = SqlFiles("spanrl.ui")
# Relations copied into memory once per lake version, in dependency order (see the module docstring).
SNAPSHOT_VIEW = "_ui_snapshot"  # the snapshot a query reads (register_snapshot: advantages filled)
NO_SNAPSHOT = "_ui_no_snapshot"  # an empty snapshot, what SNAPSHOT_VIEW reads when none is asked for
MARKING = "_ui_marking"  # the snapshot parts whose rollout ids mark_snapshot.sql reads
HELD = "_ui_rollouts"  # one narrow row per rollout for the list pages, in DuckDB's memory (held_summary.sql)
WARM_SNAPSHOTS = 2  # snapshots whose rollout ids prepare reads ahead: LATEST's and the last cycle's
NO_ROLLOUTS = "_ui_no_rollouts"  # an empty rollout_id table: the /*search*/ slot unused
SEARCH_HITS = "_ui_search_hits"  # the rollouts a finished text search matched (/*search*/)
MEMBER_SETS = 8  # snapshots marked in the held rollouts at once (the bits of a UTINYINT)
SEARCH_VIEW = "_ui_search"  # trace ids a finished text search matched, registered while mapped to rollouts
VERSION_CHECK_S = 2.0  # how often a request may stat the data root for changes
SQL_COUNT_CAP = 1_000_000  # the SQL page counts a result's rows up to this, then says "more than"
MEMORY_LIMIT = "512MB"  # DuckDB's share of the server's memory (issue 16: the server stays under 1 GB)
THREADS = None  # DuckDB's default: every core


def table_files(data: Path) -> dict[str, list[Path]]:
    """{table: its Parquet files} of the latest stage-2 build (empty when none was built).

    ``current_tables`` names one file per table today and a list of segment files once stage 2
    builds incrementally (issue 11); callers get a list either way."""
    from spanrl.transitions.tables import current_tables

    tables, _ = current_tables(data)
    return {name: [Path(p)] if isinstance(p, (str, Path)) else [Path(f) for f in p] for name, p in tables.items()}


def lake_version(data: Path) -> tuple:
    """What changes when new data lands (the lake manifest, LATEST snapshot and build, feedback, config,
    cycle log): stamped by ``spanrl.layout.data_version``, which may name the files of every stage."""
    return data_version(data)


@dataclass
class Prepared:
    """One warmed connection and how long warming took (the bench reports it), with what it holds
    for the lifetime of one lake version: the filter choices and the rollout ids of snapshots."""

    con: duckdb.DuckDBPyConnection
    version: tuple
    warm_s: float
    choices: list[dict[str, Any]] | None = None
    members: dict[str, int] = field(default_factory=dict)  # snapshot id -> its bit, least recently used first


def prepare(data: Path) -> Prepared:
    """The guarded connection, under ``MEMORY_LIMIT`` (it holds the stage-2 relations of a lake no
    build has materialised in memory itself), and the narrow per-rollout rows the list pages read."""
    version = lake_version(data)
    t0 = time.perf_counter()
    con = connect(data, memory_limit=MEMORY_LIMIT, threads=THREADS)
    con.execute(f"CREATE TEMP TABLE {HELD} AS {_SQL.read('held_summary')}")
    con.execute(f"CREATE TEMP TABLE {NO_ROLLOUTS} (rollout_id VARCHAR)")
    _register_empty(con)
    prepared = Prepared(con, version, 0.0)
    warm = [latest_manifest(data), *reversed(read_cycles(adapters_dir(data)))]
    for sid in dict.fromkeys(m.get("snapshot_id") for m in warm if m and m.get("snapshot_id")):
        if len(prepared.members) >= WARM_SNAPSHOTS:
            break
        with suppress(InputError):  # a cycle of a snapshot deleted since: nothing to warm
            snapshot_bit(prepared, data, sid)
    prepared.warm_s = time.perf_counter() - t0
    return prepared


def snapshot_bit(prepared: Prepared, data: Path, snapshot_id: str) -> int:
    """The bit of ``HELD``'s ``snapshots`` column that marks the rollouts of ``snapshot_id``: set on
    first use (one scan of the snapshot's rollout ids) and kept for the lake version, so a filter by
    the snapshot is a scan of one small column, not a join of a million ids. ``MEMBER_SETS``
    snapshots hold a bit at once; the least recently used one gives its bit up."""
    held, con = prepared.members, prepared.con
    if snapshot_id in held:
        held[snapshot_id] = held.pop(snapshot_id)  # most recently used last
        return held[snapshot_id]
    free = [1 << i for i in range(MEMBER_SETS) if 1 << i not in held.values()]
    if not free:
        oldest = next(iter(held))
        free = [held.pop(oldest)]
        con.execute(f"UPDATE {HELD} SET snapshots = snapshots & ~$bit::UTINYINT WHERE snapshots & $bit <> 0",
                    {"bit": free[0]})
    con.register(MARKING, snapshot_dataset(data, snapshot_id))  # only rollout_id is read: the raw parts
    try:
        con.execute(_SQL.read("mark_snapshot").replace("/*held*/", HELD), {"bit": free[0]})
    finally:
        con.unregister(MARKING)
    held[snapshot_id] = free[0]
    return free[0]


def _search_table(con: duckdb.DuckDBPyConnection, trace_ids: pa.Table) -> str:
    """``SEARCH_HITS``: the rollouts of the trace ids a text search matched."""
    con.register(SEARCH_VIEW, trace_ids)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {SEARCH_HITS} AS {_SQL.read('search_rollouts')}")
    finally:
        _register_empty(con)
    return SEARCH_HITS


def _register_empty(con: duckdb.DuckDBPyConnection) -> None:
    """The filter relations exist, empty, whenever no query has registered its own (the snapshot's a
    temp view, as ``register_snapshot`` makes it)."""
    from spanrl.transitions import TRANSITION_SCHEMA

    con.register(NO_SNAPSHOT, TRANSITION_SCHEMA.empty_table())
    con.execute(f"CREATE OR REPLACE TEMP VIEW {SNAPSHOT_VIEW} AS SELECT * FROM {NO_SNAPSHOT}")
    con.register(f"{SNAPSHOT_VIEW}_digests", pa.table({"rollout_id": pa.array([], pa.string()),
                                                        "task_id": pa.array([], pa.string()),
                                                        "r": pa.array([], pa.float64()),
                                                        "n_rows": pa.array([], pa.int64())}))
    con.register(SEARCH_VIEW, pa.table({"trace_id": pa.array([], pa.string())}))


class Lake:
    """The app's one reader: a warmed connection (rebuilt when the data root changes), snapshot
    datasets, the cycle log. Queries run one at a time on the connection (DuckDB uses every core
    for each); a long one is interrupted after ``query_timeout_s``."""

    def __init__(self, data: Path, query_timeout_s: float = 60.0) -> None:
        self.data = Path(data)
        self.query_timeout_s = query_timeout_s
        self._lock = threading.Lock()
        self._rebuild = threading.Lock()
        self._air_hits: dict[str | None, int | None] = {}
        self._prepared = prepare(self.data)
        self._checked = time.monotonic()
        self._sql_lock = threading.Lock()  # the SQL page's own connection (user_query), opened on first use
        self._sql: tuple[duckdb.DuckDBPyConnection, tuple] | None = None

    @property
    def warm_s(self) -> float:
        return self._prepared.warm_s

    def refresh(self) -> None:
        """Re-prepare when the data root changed (at most every VERSION_CHECK_S); the old connection
        serves until the new one is ready."""
        if time.monotonic() - self._checked < VERSION_CHECK_S:
            return
        self._checked = time.monotonic()
        if lake_version(self.data) == self._prepared.version or not self._rebuild.acquire(blocking=False):
            return
        try:
            fresh = prepare(self.data)
            with self._lock:
                old, self._prepared = self._prepared, fresh
            old.con.close()
        finally:
            self._rebuild.release()

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The warmed connection, held by this thread; interrupted when a query runs too long."""
        self.refresh()
        with self._lock:
            con = self._prepared.con
            timer = threading.Timer(self.query_timeout_s, con.interrupt)
            timer.start()
            try:
                yield con
            except duckdb.InterruptException:
                raise InputError(f"the query ran longer than {self.query_timeout_s:.0f} s and was stopped; "
                                 "narrow it (a filter, a LIMIT)") from None
            finally:
                timer.cancel()

    def rows(self, name: str, params: dict[str, Any] | None = None, order: str | None = None,
             snapshot: str | None = None, search: pa.Table | None = None,
             members: str | None = None) -> list[dict[str, Any]]:
        """Run ``ui/sql/<name>.sql`` with bound ``params``; ``order`` fills its ``/*order*/`` slot (a
        whitelisted ORDER BY from the page, never user text); ``snapshot`` registers the snapshot the
        SQL reads; ``members`` (a snapshot id) binds ``$snapshot_bit``, its bit in the held rollouts'
        ``snapshots`` column (``snapshot_bit``); ``search`` (matched trace ids) fills the
        ``/*search*/`` slot with a table of their rollouts (an empty table when unused, so a query
        without that filter never scans for it)."""
        text = _SQL.read(name)
        if order is not None:
            text = text.replace("/*order*/", order)
        with self.connection() as con:
            if members is not None:
                params = {**(params or {}), "snapshot_bit": snapshot_bit(self._prepared, self.data, members)}
            text = text.replace("/*search*/", _search_table(con, search) if search is not None else NO_ROLLOUTS)
            if snapshot is not None:
                register_snapshot(con, self.data, snapshot, SNAPSHOT_VIEW)
            try:
                rel = con.execute(text, params or {})
                cols = [d[0] for d in rel.description]
                return [dict(zip(cols, row, strict=True)) for row in rel.fetchall()]
            except duckdb.InterruptException:
                raise
            except duckdb.Error as exc:
                raise InputError(f"ui/sql/{name}.sql failed: {exc}") from None
            finally:
                if snapshot is not None:
                    _register_empty(con)

    def choices(self) -> list[dict[str, Any]]:
        """The Rollouts filter's tasks and agents, computed once per lake version."""
        prepared = self._prepared
        if prepared.choices is None:
            prepared.choices = self.rows("filter_choices")
        return prepared.choices

    def user_query(self, sql: str, limit: int, count_cap: int = SQL_COUNT_CAP) -> tuple[list[str], list[tuple], int, bool]:
        """The SQL page: read-only statements (``spanrl sql``'s check); (columns, the first ``limit``
        rows, rows counted, whether that is all of them). Runs on a connection of its own, so a
        heavy query never holds up the other pages, and streams its result (``query.sql.preview``):
        memory stays under DuckDB's limit plus one batch, whatever the result's size."""
        from spanrl.query.sql import preview

        with self._sql_lock:
            version = lake_version(self.data)
            if self._sql is None or self._sql[1] != version:
                if self._sql is not None:
                    self._sql[0].close()
                self._sql = (connect(self.data, memory_limit=MEMORY_LIMIT, threads=THREADS), version)
            con = self._sql[0]
            timer = threading.Timer(self.query_timeout_s, con.interrupt)
            timer.start()
            try:
                columns, shown, count, whole = preview(con, sql, limit, count_cap)
            except duckdb.InterruptException:
                raise InputError(f"the query ran longer than {self.query_timeout_s:.0f} s and was stopped; "
                                 "narrow it (a filter, a LIMIT)") from None
            finally:
                timer.cancel()
        return columns, [tuple(r.values()) for r in shown.to_pylist()], count, whole

    # ---- snapshots (through spanrl.transitions' reader API)

    def snapshots(self) -> list[dict[str, Any]]:
        """Every snapshot's manifest, newest first."""
        out = []
        for folder in list_snapshots(self.data):
            try:
                out.append(read_manifest(folder))
            except InputError as exc:
                out.append({"snapshot_id": folder.name, "error": str(exc)})
        return out

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        return read_manifest(resolve_snapshot(self.data, snapshot_id))

    def latest_snapshot_id(self) -> str | None:
        manifest = latest_manifest(self.data)
        return manifest["snapshot_id"] if manifest else None

    def snapshot_dataset(self, snapshot_id: str) -> Any:
        return snapshot_dataset(self.data, snapshot_id)

    def snapshot_of_rollout(self, rollout_id: str, newest: int = 20) -> str | None:
        """The newest snapshot (of the last ``newest``) that holds the rollout's calls."""
        import pyarrow.dataset as ds

        for manifest in self.snapshots()[:newest]:
            if "error" in manifest:
                continue
            rows = self.snapshot_dataset(manifest["snapshot_id"]).count_rows(filter=ds.field("rollout_id") == rollout_id)
            if rows:
                return manifest["snapshot_id"]
        return None

    # ---- the cycle log (through spanrl.trainer.adapter)

    def cycles(self) -> list[dict[str, Any]]:
        return read_cycles(adapters_dir(self.data))

    def history(self) -> list[dict[str, Any]]:
        """Reward per cycle merged with the demo's held-out files (``spanrl report``'s reader)."""
        from spanrl.demo.report import load_history

        return load_history(self.data, self.snapshot_air_hits)

    def snapshot_air_hits(self, snapshot_id: str | None) -> int | None:
        """A snapshot's transitions with an AIR reward, counted once (snapshots never change)."""
        from spanrl.demo.report import air_hits

        if snapshot_id not in self._air_hits:
            self._air_hits[snapshot_id] = air_hits(self.data, snapshot_id)
        return self._air_hits[snapshot_id]
