"""SQL text from a stage's ``sql/`` folder, and the one way strings are quoted into SQL.

Each stage keeps its statements as package data (``<stage>/sql/<name>.sql``) and reads them through
one ``SqlFiles`` bound to its own package, so a stage never reads another stage's SQL by path.
Values that can be bound go in as ``$name`` parameters; table-function arguments inside views and
COPY targets cannot, so they come through ``sql_literal`` (the only quoting helper; unit-tested).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from spanrl.errors import InputError

# aiosql's habit: each file opens with `-- name: <object>($params)` and a purpose line; the declared
# parameters are exactly the `$name` / `${name}` ones its SQL uses (tests/test_sql_files.py checks every
# file, and every read checks its own, so a file edited without its header fails on first use).
HEADER = re.compile(r"^-- name: (?P<name>[a-z_][a-z0-9_]*)(?:\((?P<params>[^)]*)\))?$")
PARAM = re.compile(r"\$\{[a-z_]+\}|\$[a-z_]+")


# DuckDB checkpoints even an in-memory database on its own, once 16 MB were written since the last
# checkpoint: a pass over the temp tables written so far, on one thread, inside whichever statement
# commits next (in the stage-2 builder ≈ 1 s of wall time at 600k spans, after `_span_tree`). Our
# connections are in-memory and live for one command, so they skip it: a 600k-span build 15.1 -> 14.4 s
# wall, 25.3 -> 24.7 CPU s, peak RSS unchanged (2.16 GB).
NO_AUTO_CHECKPOINT = "SET checkpoint_threshold = '1TB'"


_SCRATCH: dict[int, Any] = {}  # process id -> its private in-memory DuckDB (a forked child makes its own)


def scratch() -> Any:
    """A DuckDB connection for small bookkeeping reads and writes (the lake manifest, a Parquet file's
    columns, a memory-limit check): a new cursor of one private in-memory database per process. Each
    ``duckdb.connect()`` starts a database (≈ 15 ms); a cursor of one costs next to nothing, and is
    its own connection, so threads do not share one."""
    import os

    import duckdb

    db = _SCRATCH.get(os.getpid())
    if db is None:
        db = _SCRATCH[os.getpid()] = duckdb.connect()
    return db.cursor()


def drop_scratch() -> None:
    """Close this process's scratch database (one left unusable: the next ``scratch()`` starts a new one)."""
    import os

    db = _SCRATCH.pop(os.getpid(), None)
    if db is not None:
        db.close()


def header_problem(name: str, text: str) -> str | None:
    """What is wrong with a SQL file's header (None when nothing is): its object name, its purpose
    line, its declared parameters against the ones used outside comments."""
    lines = text.splitlines()
    m = HEADER.match(lines[0]) if lines else None
    if not m:
        return f"line 1: start with '-- name: <object>' (+ '(<$params>)'), got {lines[0] if lines else ''!r}"
    if not m["name"].endswith(name.rsplit("/", 1)[-1]):
        return f"line 1: the name {m['name']!r} should name the file's object"
    if len(lines) < 2 or not re.match(r"^-- \S", lines[1]):
        return "line 2: a one-line purpose comment"
    declared = {p.strip() for p in (m["params"] or "").split(",") if p.strip()}
    used = set(PARAM.findall("\n".join(line.split("--")[0] for line in lines)))
    if declared != used:
        return f"line 1: declares {sorted(declared)}, uses {sorted(used)}"
    return None


def sql_literal(value: str | Path | int | bool | list[str] | list[Path]) -> str:
    """Quote a path, glob or list of them as a DuckDB literal: the only way strings enter SQL text
    (an integer is written as its digits, a bool as TRUE or FALSE)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    text = str(value)
    if "\x00" in text:
        raise InputError(f"{text!r}: a path cannot contain a NUL byte")
    return "'" + text.replace("'", "''") + "'"


def one(con: Any, sql: str, params: dict[str, Any] | list[Any] | None = None) -> dict[str, Any]:
    """The first row of a query as ``{column: value}`` (``{}`` when there is none): values are read by
    name, so a reordered SELECT list cannot silently swap two numbers."""
    cur = con.execute(sql, params) if params is not None else con.execute(sql)
    row = cur.fetchone()
    if row is not None:
        cur.fetchall()  # finish the result: a connection holding an unfinished one takes no other statement
    return dict(zip([d[0] for d in cur.description], row, strict=True)) if row is not None else {}


def parquet_rows(con: Any, path: Any) -> int:
    """The rows of one Parquet file, from its footer (no scan)."""
    return one(con, "SELECT num_rows AS n FROM parquet_file_metadata($f)", {"f": str(path)})["n"]


def rows(con: Any, sql: str, params: dict[str, Any] | list[Any] | None = None) -> list[dict[str, Any]]:
    """Every row of a query as ``{column: value}`` dicts (small results only: bookkeeping, not spans)."""
    cur = con.execute(sql, params) if params is not None else con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


class SqlFiles:
    """The ``sql/`` folder of one stage package (``SqlFiles("spanrl.ingest")``)."""

    def __init__(self, package: str) -> None:
        self.package = package

    def _file(self, name: str):
        return resources.files(self.package).joinpath("sql", f"{name}.sql")

    def read(self, name: str) -> str:
        """The text of ``<stage>/sql/<name>.sql``, its header checked on first read."""
        return _checked_text(self.package, name)

    def exists(self, name: str) -> bool:
        return self._file(name).is_file()

    def render(self, name: str, **literals: str | Path | int | list) -> str:
        """``read`` with each ``${key}`` replaced by ``sql_literal(value)``; nothing else is pasted."""
        # comment lines (the header declares the placeholders) are dropped first: a value pasted into a
        # comment would be live SQL after any newline it carried
        text = "\n".join(line for line in self.read(name).splitlines() if not line.lstrip().startswith("--"))
        for key, value in literals.items():
            text = text.replace("${" + key + "}", sql_literal(value))
        if "${" in text:
            raise RuntimeError(f"{self.package}: {name}.sql: a ${{...}} placeholder was left unfilled")
        return text


@cache
def _checked_text(package: str, name: str) -> str:
    path = resources.files(package).joinpath("sql", f"{name}.sql")
    text = path.read_text()
    problem = header_problem(name, text)
    if problem:
        raise RuntimeError(f"{path}: {problem} (see spanrl/sqlfiles.py)")
    return text
