"""The guarded query connection over a data root: the lake (stage 1) and its stage-2 relations.

``spanrl sql`` (and anything else that runs SQL a user wrote: ``spanrl ui``) goes through
``connect``. Its safety does not depend on what a statement looks like: the lake and the stage-2
tables the last build materialised (``spanrl.transitions.tables``; on a lake that never had a build,
computed once into memory when connecting, feedback files read then) are exposed as lazy
Arrow datasets (``spanrl.ingest.lake.open_guarded``), and then DuckDB's own file access is switched
off with no allowed directory and the configuration locked. After that no statement on the
connection, of whatever shape (``EXPLAIN ANALYZE COPY``, ``ATTACH``, ``read_text``, ``SET``...), can
read or write a file; AIR rule predicates from ``spanrl.toml`` run under the same lock.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.errors import InputError
from spanrl.ingest.lake import (
    lake_glob,
    lock_down,
    open_guarded,
    parquet_dataset,
    register_call_views,
    register_dataset,
)
from spanrl.layout import lake_dir
from spanrl.memory import resolve_memory_limit
from spanrl.sqlfiles import sql_literal


def connect(data: Path, stage2: bool = True, memory_limit: str | None = None,
            threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """Every table and view of the lake over ``data``, read-only. ``stage2=False`` leaves out the
    rewards/rollouts relations (a query that names none of them skips them). ``memory_limit`` and
    ``threads`` are DuckDB's settings, fixed before the configuration is locked (a long-running
    reader such as ``spanrl ui`` bounds its memory with them; there is no spill folder)."""
    from spanrl.transitions.sqlfiles import read_sql as read_stage2_sql
    from spanrl.transitions.tables import current_tables

    con = open_guarded(data)
    computing = False  # computing the stage-2 relations of a lake no build has materialised
    try:
        if memory_limit is not None:  # before anything below locks the configuration
            con.execute(f"SET memory_limit = {sql_literal(resolve_memory_limit(memory_limit))}")
        if threads is not None:
            con.execute(f"SET threads = {int(threads)}")
        register_call_views(con, data)
        con.execute(read_stage2_sql("rollouts/macros"))  # spanrl_is_error & co., for queries over the tables too
        tables, _ = current_tables(data)
        for name, path in tables.items():
            if stage2 or name in ("llm_calls", "tool_calls", "coverage"):
                register_dataset(con, f"_stage2_{name}", lambda ext, p=path: parquet_dataset(p, ext))
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM _stage2_{name}")
        if stage2 and not {"rewards", "rollouts"} <= set(tables):
            from spanrl.transitions.rollouts import register_lake_views

            computing = True
            register_lake_views(con, data, readable=())  # locks it (no file at all) before any AIR rule binds
        lock_down(con)
    except duckdb.OutOfMemoryException as exc:
        con.close()
        first = str(exc).splitlines()[0]
        if computing:
            raise InputError(
                f"{data}: no stage-2 build has materialised rollouts/rewards yet, and computing them for this "
                f"connection needs more than its memory limit ({first}). Run `spanrl transitions build --data "
                f"{data}` once (the tables are then read, not computed), or raise --memory-limit.") from None
        raise InputError(f"{data}: opening the lake's views needs more than the memory limit ({first}); "
                         "raise --memory-limit") from None
    except BaseException:
        con.close()
        raise
    return con


def stale_note(data: Path, stage2: bool = True) -> str | None:
    """What the stage-2 relations served for ``data`` miss: lake or feedback files newer than the last
    build, or (``stage2``: the query names them) that no build has materialised them yet."""
    from spanrl.transitions.tables import current_tables

    tables, changes = current_tables(data)
    if not tables:
        if stage2 and lake_glob(lake_dir(data), "spans") is not None:
            return ("note: no stage-2 build has materialised llm_calls, tool_calls, rewards and rollouts yet (only "
                    "`spanrl ingest --no-transitions` ran): they are computed for this connection. "
                    "`spanrl transitions build` materialises them once.")
        return None
    if not changes:
        return None
    return (f"note: llm_calls, tool_calls, rewards and rollouts are the tables the last stage-2 build "
            f"materialised; since then: {'; '.join(changes)}. Run `spanrl transitions build` to refresh them.")
