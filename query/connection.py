"""The read-only query connection over a data root: the lake (stage 1) and its stage-2 relations.

``spanrl sql`` (and anything else that runs user SQL) goes through ``connect``: stage 1's views
from ``spanrl.ingest``, then llm_calls, tool_calls, rewards, rollouts and coverage from the tables the
last stage-2 build materialised (``spanrl.transitions.tables``; computed live only on a lake that
never had a build), then the lock-down, so the user's statements run on a connection that cannot
reach outside the data root.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.ingest.views import connect as connect_lake
from spanrl.ingest.views import lock_down
from spanrl.sqlfiles import sql_literal


def connect(data: Path, stage2: bool = True) -> duckdb.DuckDBPyConnection:
    """Every table and view of the lake over ``data``, read-only. ``stage2=False`` leaves out the
    rewards/rollouts relations (a query that names none of them skips them)."""
    from spanrl.transitions.sqlfiles import read_sql as read_stage2_sql
    from spanrl.transitions.tables import current_tables

    con = connect_lake(data, read_only=False)
    con.execute(read_stage2_sql("rollouts/macros"))  # spanrl_is_error & co., for queries over the tables too
    tables, _ = current_tables(data)
    for name, path in tables.items():
        if stage2 or name in ("llm_calls", "tool_calls", "coverage"):
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({sql_literal(path)})")
    if stage2 and not {"rewards", "rollouts"} <= set(tables):
        from spanrl.transitions.rollouts import register_lake_views

        register_lake_views(con, data)
    lock_down(con, data)
    return con


def stale_note(data: Path) -> str | None:
    """What the materialised stage-2 tables miss (lake or feedback files newer than the last build)."""
    from spanrl.transitions.tables import current_tables

    tables, changes = current_tables(data)
    if not tables or not changes:
        return None
    return (f"note: llm_calls, tool_calls, rewards and rollouts are the tables the last stage-2 build "
            f"materialised; since then: {'; '.join(changes)}. Run `spanrl transitions build` to refresh them.")
