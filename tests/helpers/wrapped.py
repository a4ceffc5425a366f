"""A DuckDB connection that sees every statement a caller runs on it: ``WrappedConnection(con)`` passes
everything through; a subclass overrides ``execute`` (time it, plan it, stop before it). How the benches
(bench/night_profile.py, bench/stage2_pieces.py) and tests/transitions/test_join_plans.py watch the
builder, which opens its connections itself: ``duckdb.connect`` is patched to return one of these."""

from __future__ import annotations

import re

import duckdb

_CREATE = re.compile(r"CREATE OR REPLACE (?:TEMP )?(?:TABLE|VIEW) \S+ AS (.*)", re.S)


def statement_query(statement: str) -> str | None:
    """The query of a ``CREATE ... AS <query>`` or ``COPY (<query>) TO ...`` statement; None for others."""
    s = statement.lstrip()
    if s.upper().startswith("COPY ("):
        return s[s.index("(") + 1:s.rindex(") TO")]
    m = _CREATE.match(s)
    return m[1] if m else None


class WrappedConnection:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        object.__setattr__(self, "_con", con)

    def __getattr__(self, name: str):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._con.__exit__(*exc)

    def execute(self, query, *args, **kw):
        result = self._con.execute(query, *args, **kw)
        return self if result is self._con else result
