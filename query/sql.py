"""``spanrl sql``: read-only SQL over the trace lake and its views (docs/lake.md).

What keeps the data safe is the connection (``query.connection.connect``): it reads the lake as
Arrow datasets and can open no file at all, whatever a statement looks like. The statement-type
check here only gives the common refusals a clear message before anything runs (a query must be
SELECT, EXPLAIN, PRAGMA or CALL; SHOW/DESCRIBE/SUMMARIZE/FROM parse as SELECT); whatever it lets
through that touches a file is refused by the connection and reported the same way. Each statement
runs once. Output is written by Python from the Arrow result, never by DuckDB's COPY, and ``--out``
may not point into the data root's managed folders.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
import secrets
import sys
from decimal import Decimal
from pathlib import Path
from typing import TextIO

import duckdb
import pyarrow as pa

from spanrl.errors import InputError
from spanrl.ingest.lake import lake_glob
from spanrl.layout import MANAGED_FOLDERS, lake_dir, otel_dir
from spanrl.query.connection import connect, stale_note

QUERY_TYPES = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN, duckdb.StatementType.PRAGMA,
               duckdb.StatementType.CALL}
FORMATS = ("table", "csv", "json", "parquet")
TABLE_ROW_LIMIT = 1000


def check_read_only(sql: str) -> list[str]:
    """The statements of ``sql`` as text; InputError when one would write, attach or configure."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(f"cannot parse the query: {exc}") from None
    if not statements:
        raise InputError("the query is empty: pass a SELECT, e.g. spanrl sql \"select count(*) from spans\"")
    for st in statements:
        if st.type not in QUERY_TYPES:
            kind = str(st.type).split(".")[-1]
            raise InputError(f"spanrl sql is read-only: a {kind} statement is refused. Use SELECT (or "
                             "EXPLAIN/DESCRIBE/SUMMARIZE); write results with --format/--out instead of COPY.")
    return [st.query for st in statements]


def _stage2_names() -> list[str]:
    try:
        from spanrl.transitions.pipeline import STAGE2_STEPS
    except ImportError:
        return ["rewards", "rollouts"]
    return sorted({step.creates for step in STAGE2_STEPS} | {"rewards", "rollouts"})


def wants_stage2(sql: str | None) -> bool:
    """Whether a query may touch the rewards/rollouts views (costly to register): by name, or any
    catalog listing. The interactive prompt (sql None) always gets them."""
    if sql is None:
        return True
    names = "|".join(re.escape(n) for n in _stage2_names())
    return bool(re.search(rf"\b({names}|show|information_schema|duckdb_\w+)\b", sql, re.IGNORECASE))


def lake_is_empty(data: Path) -> bool:
    lake = lake_dir(data)
    return lake_glob(lake, "spans") is None and lake_glob(lake, "logs") is None


def run_query(data: Path, sql: str, con: duckdb.DuckDBPyConnection | None = None) -> pa.Table:
    """Run every statement of ``sql`` (read-only), each once; returns the last one's result as Arrow."""
    return execute(con or connect(data, stage2=wants_stage2(sql)), sql)[0]


def execute(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[pa.Table, set[str]]:
    """Each statement of ``sql`` run exactly once on ``con``; the last result and its JSON columns
    (read from the same relation: DuckDB's JSON type does not survive the Arrow export)."""
    result, json_cols = pa.table({}), set()
    for text in check_read_only(sql):
        try:
            rel = con.sql(text)
            if rel is None:
                result, json_cols = pa.table({}), set()
                continue
            json_cols = {name for name, typ in zip(rel.columns, rel.types, strict=True) if str(typ) == "JSON"}
            result = rel.to_arrow_table()
        except duckdb.Error as exc:
            raise _refusal(exc, con) from None
    return result, json_cols


PREVIEW_BATCH_ROWS = 2048  # rows per Arrow batch read from a streamed result


def preview(con: duckdb.DuckDBPyConnection, sql: str, limit: int, count_cap: int) -> tuple[list[str], pa.Table, int, bool]:
    """Each statement of ``sql`` run once, the last one's result STREAMED: (columns, its first
    ``limit`` rows, rows counted, whether that count is the whole result). Counting stops after
    ``count_cap`` rows, so no result, however large, is held in Python's memory (``spanrl ui``'s SQL
    page: ``select * from range(1e9)`` costs one batch at a time, not the whole table)."""
    statements = check_read_only(sql)
    try:
        for text in statements[:-1]:
            con.sql(text)
        rel = con.sql(statements[-1])
        if rel is None:
            return [], pa.table({}), 0, True
        reader = rel.to_arrow_reader(PREVIEW_BATCH_ROWS)
        kept: list[pa.RecordBatch] = []
        count = 0
        for batch in reader:
            if count < limit:
                kept.append(batch.slice(0, limit - count))
            count += batch.num_rows
            if count > count_cap:
                reader.close()
                return rel.columns, pa.Table.from_batches(kept, reader.schema), count_cap, False
        return rel.columns, pa.Table.from_batches(kept, reader.schema), count, True
    except duckdb.InterruptException:
        raise  # the caller's timeout: it says so itself
    except duckdb.Error as exc:
        raise _refusal(exc, con) from None


_MISSING_RELATION = re.compile(r"Table with name (\S+) does not exist")
# DuckDB's own catalog: never what a user means by a misspelt lake table
_INTERNAL_PREFIXES = ("duckdb_", "pg_", "sqlite_", "information_schema")


def _refusal(exc: duckdb.Error, con: duckdb.DuckDBPyConnection | None = None) -> InputError:
    """A DuckDB error as the user's message: file access and settings are the read-only refusal; an
    unknown table names the tables there are; a syntax error keeps its lines, so the caret points."""
    text = str(exc).splitlines()[0]
    missing = _MISSING_RELATION.search(text)
    if isinstance(exc, duckdb.CatalogException) and missing and con is not None:
        return InputError(_unknown_relation(missing.group(1), con))
    if isinstance(exc, duckdb.ParserException):
        return InputError(f"query failed: {str(exc).rstrip()}")
    if isinstance(exc, duckdb.PermissionException) or "file system operations are disabled" in text:
        return InputError(f"spanrl sql is read-only: it reads the lake's tables and no file ({text}). Query the "
                          "tables (spans, logs, llm_calls, ..., rejects, span_files); write results with --out.")
    if isinstance(exc, duckdb.OutOfMemoryException):  # DuckDB's own hint (SET memory_limit) is refused here
        return InputError(f"query failed: {text}; give it more memory with --memory-limit (e.g. --memory-limit 8GB)")
    if "configuration has been locked" in text:
        return InputError(f"spanrl sql is read-only: settings cannot be changed ({text})")
    return InputError(f"query failed: {text}")


def relation_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables and views a query on ``con`` can name (lake, stage 2, rejects...), DuckDB's own left out."""
    names = con.execute("SELECT DISTINCT table_name FROM information_schema.tables ORDER BY 1").fetchall()
    return [n for (n,) in names if not n.startswith(_INTERNAL_PREFIXES) and not n.startswith("_") and "__" not in n]


def _unknown_relation(name: str, con: duckdb.DuckDBPyConnection) -> str:
    """``rollout`` -> 'no table or view named rollout; did you mean rollouts? Tables: ...'."""
    # stage 2's views are registered only for a query that names them (wants_stage2): list them anyway
    known = sorted(set(relation_names(con)) | {n for n in _stage2_names() if not n.startswith("_")})
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else "."
    # the per-convention inputs of llm_calls are queryable but would drown the list
    shown = [n for n in known if not n.startswith("llm_calls_")]
    more = len(known) - len(shown)
    extra = f" (+ {more} per-convention views llm_calls_<convention>)" if more else ""
    return (f"query failed: no table or view named {name}{hint} Tables and views: {', '.join(shown) or 'none'}"
            f"{extra}; docs/lake.md describes each.")


def _json_columns(table: pa.Table) -> set[str]:
    """Columns whose DuckDB type is JSON (Arrow metadata or extension name), to embed them unquoted."""
    names = set()
    for f in table.schema:
        meta = f.metadata or {}
        ext = getattr(f.type, "extension_name", "") or ""
        if b"JSON" in b"".join(meta.values()) or "json" in str(ext).lower():
            names.add(f.name)
    return names


def write_result(table: pa.Table, fmt: str, out: Path | None, stream: TextIO | None = None,
                 json_cols: set[str] | None = None) -> None:
    """Print or write a result as a rich table, CSV, JSON lines or Parquet."""
    stream = stream or sys.stdout
    if fmt == "parquet":
        import pyarrow.parquet as pq

        if out is None:
            raise InputError("--format parquet needs --out FILE")
        pq.write_table(table, out, compression="zstd")
        return
    if fmt == "table" and out is None:
        _print_table(table, stream)
        return
    rows = table.to_pylist()
    json_cols = json_cols if json_cols is not None else _json_columns(table)
    buf = io.StringIO()
    if fmt == "csv":
        writer = csv.writer(buf)
        writer.writerow(table.column_names)
        for row in rows:
            writer.writerow([_cell(v) for v in row.values()])
    else:  # json lines (table with --out falls back to json lines too)
        for row in rows:
            obj = {k: (_maybe_json(v) if k in json_cols else v) for k, v in row.items()}
            buf.write(json_line(obj) + "\n")
    if out is None:
        stream.write(buf.getvalue())
    else:
        Path(out).write_text(buf.getvalue())


def json_line(obj: object) -> str:
    """One JSON document with every number a JSON number. DuckDB hands HUGEINT (``sum`` of integers)
    and DECIMAL values to Arrow as decimals, which ``json`` cannot write: an integral one becomes a
    Python int (any width, exact); any other is written as its exact decimal text, not a float. (A
    fractional decimal goes through a placeholder string with a fresh random tag, swapped after.)"""
    tag, exact = secrets.token_hex(8), []

    def numbers(v: object) -> object:
        if isinstance(v, Decimal) and v.is_finite():
            if v == v.to_integral_value():
                return int(v)
            exact.append(format(v, "f"))
            return f"{tag}:{len(exact) - 1}"
        if isinstance(v, list):
            return [numbers(x) for x in v]
        if isinstance(v, dict):
            return {k: numbers(x) for k, x in v.items()}
        return v

    text = json.dumps(numbers(obj), default=str, ensure_ascii=False)
    return re.sub(f'"{tag}:(\\d+)"', lambda m: exact[int(m.group(1))], text) if exact else text


def _maybe_json(v: object) -> object:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def _cell(v: object) -> object:
    if isinstance(v, (list, dict)):
        return json.dumps(v, default=str)
    return "" if v is None else v


def _print_table(table: pa.Table, stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream, width=max(120, min(240, 20 * max(1, table.num_columns))))
    view = Table(show_lines=False)
    for name in table.column_names:
        view.add_column(name, overflow="fold")
    for row in table.slice(0, TABLE_ROW_LIMIT).to_pylist():
        view.add_row(*[("NULL" if v is None else str(v)) for v in row.values()])
    console.print(view)
    more = f" (first {TABLE_ROW_LIMIT} shown; use --format csv|json|parquet --out FILE for all)" \
        if table.num_rows > TABLE_ROW_LIMIT else ""
    console.print(f"{table.num_rows} row(s){more}")


def interactive(data: Path, con: duckdb.DuckDBPyConnection, stream: TextIO | None = None) -> None:
    """A minimal prompt: statements end with ';', '.quit' or EOF leaves, '.tables' lists the views."""
    stream = stream or sys.stdout
    stream.write("spanrl sql: tables spans, logs, llm_calls, tool_calls, rewards, rollouts. End with ';', .quit to leave.\n")
    pending = ""
    while True:
        try:
            line = input("spanrl> " if not pending else "   ...> ")
        except EOFError:
            return
        if not pending and line.strip() in (".quit", ".exit", "\\q"):
            return
        if not pending and line.strip() == ".tables":
            line = "show tables;"
        pending += line + "\n"
        if not pending.rstrip().endswith(";"):
            continue
        sql, pending = pending, ""
        try:
            write_result(run_query(data, sql, con), "table", None, stream)
        except InputError as exc:
            stream.write(f"error: {exc}\n")


def check_out_path(data: Path, out: Path) -> None:
    """``--out`` must be a file in an existing folder, outside what spanrl manages under the data
    root (a query result written over ``lake/_files.parquet`` would break every later ingest)."""
    target = Path(out).expanduser().resolve()
    for folder in MANAGED_FOLDERS:
        managed = (Path(data) / folder).resolve()
        if target == managed or managed in target.parents:
            raise InputError(f"--out {out}: inside {managed}, which spanrl manages; write results elsewhere "
                             f"(e.g. {Path(data) / 'exports' / target.name})")
    if target.is_dir():
        raise InputError(f"--out {out}: is a folder; pass a file path")
    if not target.parent.is_dir():
        raise InputError(f"--out {out}: folder {target.parent} does not exist; create it first")


def sql_command(data: Path, query: str | None, sql_file: Path | None, fmt: str, out: Path | None,
                memory_limit: str = "auto") -> None:
    """What ``spanrl sql`` does: pick the query (argument, -f FILE, piped stdin, else the prompt),
    note an empty lake, run it read-only under ``memory_limit`` and write the result."""
    from spanrl.ingest.config import check_memory_limit

    check_memory_limit(memory_limit)  # exit 2 with a message on a value DuckDB refuses
    if query is not None and sql_file is not None:
        raise InputError("give the query as an argument or with -f FILE, not both")
    if sql_file is not None:
        query = sql_file.read_text()
    elif query is None and not sys.stdin.isatty():
        query = sys.stdin.read()
    if lake_is_empty(data):
        sys.stderr.write(f"note: the trace lake {lake_dir(data)} holds no spans or logs yet: run `spanrl ingest` "
                         f"(reading {otel_dir(data)}) first; tables are empty.\n")
    if out is not None:
        check_out_path(data, out)
    note = stale_note(data, stage2=wants_stage2(query))
    if note:
        sys.stderr.write(note + "\n")
    con = connect(data, stage2=wants_stage2(query), memory_limit=memory_limit)
    if query is None:
        interactive(data, con)
        return
    result, json_cols = execute(con, query)
    try:
        write_result(result, fmt, out, json_cols=json_cols)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write ({exc.strerror or exc}); pass a writable file path") from None
    if out is not None:
        sys.stderr.write(f"{result.num_rows} row(s) written to {out}\n")
