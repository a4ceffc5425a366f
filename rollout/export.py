"""``spanrl tasks``: the user inputs of past rollouts, as a tasks file to replay with ``spanrl rollout``.

The user's ``--sql`` picks the rollouts (any read-only query over the lake views with a
``rollout_id`` column, e.g. yesterday's traffic of one agent); ``task_inputs.sql`` finds each one's
first user message and deduplicates. A query that returns an ``input`` column instead is taken as
the tasks themselves (``task_id`` and ``expected`` columns are kept when present).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from spanrl.errors import InputError
from spanrl.layout import lake_dir
from spanrl.rollout.tasks import task_id_for
from spanrl.sqlfiles import SqlFiles

DEFAULT_SQL = "SELECT rollout_id FROM rollouts WHERE complete"
SQL = SqlFiles("spanrl.rollout")


def export_tasks(data: Path, sql: str | None = None) -> list[dict[str, Any]]:
    """Task lines (``task_id``, ``input``, ``rollouts`` seen) for the rollouts ``sql`` selects."""
    from spanrl.query import connect, run_query

    if not any((lake_dir(data) / "spans").glob("*/*.parquet")):
        raise InputError(f"the trace lake {lake_dir(data)} holds no spans: run `spanrl ingest` first")
    con = connect(Path(data), stage2=True)
    selected = run_query(Path(data), sql or DEFAULT_SQL, con)
    if "input" in selected.column_names:
        return _tasks_as_given(selected)
    if "rollout_id" not in selected.column_names:
        raise InputError(f"--sql returned columns {selected.column_names}; select a `rollout_id` column "
                         "(e.g. SELECT rollout_id FROM rollouts WHERE ...) or an `input` column")
    con.register("_selected", selected.select(["rollout_id"]))
    rows = con.sql(SQL.read("task_inputs")).to_arrow_table().to_pylist()
    return [{"task_id": r["task_id"] or task_id_for(r["input"]), "input": r["input"], "rollouts": r["rollouts"]}
            for r in rows]


def _tasks_as_given(table: pa.Table) -> list[dict[str, Any]]:
    keep = [c for c in ("task_id", "input", "expected") if c in table.column_names]
    seen: set[str] = set()
    out = []
    for row in table.select(keep).to_pylist():
        text = row.get("input")
        if not isinstance(text, str) or not text.strip() or text in seen:
            continue
        seen.add(text)
        task_id = row.get("task_id")
        out.append({**{k: v for k, v in row.items() if v is not None},
                    "task_id": str(task_id) if task_id is not None else task_id_for(text)})
    return out
