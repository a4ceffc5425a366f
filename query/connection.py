"""The read-only query connection over a data root: the lake (stage 1) and its stage-2 views.

``spanrl sql`` (and anything else that runs user SQL) goes through ``connect``: stage 1's views
from ``spanrl.ingest``, then rewards/rollouts from ``spanrl.transitions``, then the lock-down, so
the user's statements run on a connection that cannot reach outside the data root.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.ingest.views import connect as connect_lake
from spanrl.ingest.views import lock_down


def connect(data: Path, stage2: bool = True) -> duckdb.DuckDBPyConnection:
    """Every table and view of DESIGN §4 over ``data``, read-only. ``stage2=False`` leaves out the
    rewards/rollouts views (registering them costs a little; a query that names none skips them)."""
    con = connect_lake(data, read_only=False)
    if stage2:
        from spanrl.transitions.rollouts import register_lake_views

        register_lake_views(con, data)
    lock_down(con, data)
    return con
