"""Delayed rewards: files the user drops into ``DATA/feedback/`` (docs/transitions.md).

JSON lines, CSV or Parquet, one reward per row: a key (``rollout_id``, ``trace_id`` or
``response_id`` = ``gen_ai.response.id`` of an LLM call), ``value``, optional ``name`` and ``ts``.
Every run reads every file, so feedback that arrives after a snapshot is in the next one. A row
that cannot be used stops the run with its file and line; a row whose key matches nothing is kept
(rollout_id NULL in ``rewards``) and reported.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.errors import InputError, resource_trouble
from spanrl.sqlfiles import one
from spanrl.transitions.sqlfiles import read_sql

# By suffix, the file under sql/feedback/ that reads it (the known columns; an empty typed frame makes
# union-by-name fill the missing ones).
_READERS = {".jsonl": "read_json", ".json": "read_json", ".ndjson": "read_json", ".csv": "read_csv",
            ".parquet": "read_parquet"}
# Where a row sits in its file: CSV has a header line; JSON lines and Parquet rows count from 1.
_FIRST_LINE = {".csv": 2}


def feedback_files(data: Path) -> list[Path]:
    folder = Path(data) / "feedback"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix.lower() in _READERS and p.stat().st_size > 0)


def load_feedback(con: duckdb.DuckDBPyConnection, data: Path) -> list[Path]:
    """Create TEMP TABLE ``_feedback`` from every feedback file; return the files read."""
    files = feedback_files(data)
    con.execute("CREATE OR REPLACE TEMP TABLE _feedback_raw AS " + read_sql("feedback/_feedback_raw"))
    for path in files:
        reader = read_sql("feedback/" + _READERS[path.suffix.lower()])
        first = _FIRST_LINE.get(path.suffix.lower(), 1)
        try:
            con.execute("INSERT INTO _feedback_raw " + reader, {"path": str(path), "first": first})
        except duckdb.Error as exc:
            if resource_trouble(exc):  # out of memory or disk: the file is fine (build_transitions says what ran out)
                raise
            raise InputError(
                f"{path}: cannot read feedback ({str(exc).splitlines()[0]}); fix or remove the file "
                "(one reward per row: rollout_id|trace_id|response_id, value, optional name and ts)"
            ) from None
    con.execute(f"CREATE OR REPLACE TEMP TABLE _feedback AS {read_sql('feedback/feedback_rows')}")
    bad = one(con, "SELECT file, line, problem, count(*) OVER () AS n FROM _feedback WHERE problem IS NOT NULL "
                   "ORDER BY file, line LIMIT 1")
    if bad:
        raise InputError(f"{bad['file']}:{bad['line']}: feedback row unusable: {bad['problem']} ({bad['n']} bad row(s) "
                         "in all); fix the file and run again")
    return files

