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

from spanrl.errors import InputError
from spanrl.transitions.sqlfiles import read_sql

# The columns a feedback file may carry; an empty typed frame makes union-by-name fill missing ones.
_EMPTY = ("SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id, "
          "NULL::VARCHAR AS name, NULL::VARCHAR AS value, NULL::VARCHAR AS ts WHERE false")
_KNOWN = "rollout_id, trace_id, response_id, name, value, ts"

_READERS = {
    ".jsonl": "read_json($path, format = 'newline_delimited', union_by_name = true, sample_size = -1)",
    ".json": "read_json($path, format = 'newline_delimited', union_by_name = true, sample_size = -1)",
    ".ndjson": "read_json($path, format = 'newline_delimited', union_by_name = true, sample_size = -1)",
    ".csv": "read_csv($path, header = true, union_by_name = true, all_varchar = true)",
    ".parquet": "read_parquet($path, union_by_name = true)",
}
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
    con.execute("CREATE OR REPLACE TEMP TABLE _feedback_raw (filename VARCHAR, line BIGINT, rollout_id VARCHAR, "
                "trace_id VARCHAR, response_id VARCHAR, name VARCHAR, value VARCHAR, ts VARCHAR)")
    for path in files:
        reader = _READERS[path.suffix.lower()]
        first = _FIRST_LINE.get(path.suffix.lower(), 1)
        try:
            con.execute(
                f"INSERT INTO _feedback_raw SELECT $path, (row_number() OVER () - 1 + {first})::BIGINT, "
                f"{_KNOWN} FROM ({_EMPTY} UNION ALL BY NAME SELECT * FROM {reader})",
                {"path": str(path)},
            )
        except duckdb.Error as exc:
            raise InputError(
                f"{path}: cannot read feedback ({str(exc).splitlines()[0]}); fix or remove the file "
                "(one reward per row: rollout_id|trace_id|response_id, value, optional name and ts)"
            ) from None
    con.execute(f"CREATE OR REPLACE TEMP TABLE _feedback AS {read_sql('feedback/feedback_rows')}")
    bad_rows = con.execute(
        "SELECT file, line, problem FROM _feedback WHERE problem IS NOT NULL ORDER BY file, line LIMIT 1"
    ).fetchall()
    if bad_rows:
        bad = bad_rows[0]
        n = con.execute("SELECT count(*) FROM _feedback WHERE problem IS NOT NULL").fetchall()[0][0]
        raise InputError(f"{bad[0]}:{bad[1]}: feedback row unusable: {bad[2]} ({n} bad row(s) in all); "
                         "fix the file and run again")
    return files

