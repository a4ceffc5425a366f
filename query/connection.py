"""The guarded query connection over a data root: the lake (stage 1) and its stage-2 views.

``spanrl sql`` (and anything else that runs SQL a user wrote, e.g. a trajectory browser) goes
through ``connect``. Its safety does not depend on what a statement looks like: the lake is
exposed as lazy Arrow datasets (``spanrl.ingest.views.open_guarded``), feedback files are read
while the stage-2 views are registered, and then DuckDB's own file access is switched off with no
allowed directory and the configuration locked. After that no statement on the connection, of
whatever shape (``EXPLAIN ANALYZE COPY``, ``ATTACH``, ``read_text``, ``SET``...), can read or
write a file; AIR rule predicates from ``spanrl.toml`` run under the same lock.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.ingest.views import lock_down, open_guarded, register_call_views


def connect(data: Path, stage2: bool = True) -> duckdb.DuckDBPyConnection:
    """Every table and view of DESIGN §4 over ``data``, read-only. ``stage2=False`` leaves out the
    rewards/rollouts views (registering them costs a little; a query that names none skips them)."""
    con = open_guarded(data)
    try:
        register_call_views(con, data)
        if stage2:
            from spanrl.transitions.rollouts import register_lake_views

            register_lake_views(con, data)  # locks the connection before any user-written SQL binds
        lock_down(con)
    except BaseException:
        con.close()
        raise
    return con
