"""The stage-2 tables each build materialises for SQL: llm_calls, tool_calls, rewards, rollouts, coverage.

Recomputing those views per query means binding and running the whole stage-2 SQL over every span
(tens of seconds, gigabytes on a big lake), so the snapshot builder, which has them as tables anyway,
writes them as Parquet under ``transitions/_tables/<build_id>/`` (published atomically, with
``_tables/LATEST``; see ``spanrl/publish.py``), with ``state.json`` recording the lake files, the
feedback files and the config they were computed from. ``spanrl sql`` and ``spanrl ui`` read them
when they are current; when the lake or the feedback moved on since (an ``ingest --no-transitions``,
a dropped-in feedback file), ``freshness`` says what changed and readers say the tables are stale.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb

from spanrl.publish import draft_folder, publish, read_pointer
from spanrl.sqlfiles import sql_literal
from spanrl.transitions.snapshot import transitions_dir

TABLES = ("llm_calls", "tool_calls", "rewards", "rollouts", "coverage", "rollout_summary")
STATE = "state.json"
# How readers find rows (spanrl ui, bench/ui.py): one rollout's rows by key or by its time span, so
# each table is written in that order and in the lake's small row groups; a lookup then reads the
# one row group (20480 rows) whose min/max statistics hold the key, not the whole table.
ORDER = {"llm_calls": "start_ns, span_id", "tool_calls": "start_ns, span_id", "rewards": "rollout_id, ts_ns",
         "rollouts": "rollout_id", "rollout_summary": "started_ns, rollout_id"}
PARQUET_OPTIONS = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 20480"


def tables_dir(data: Path | str) -> Path:
    return transitions_dir(data) / "_tables"


def lake_state(data: Path | str) -> dict[str, Any]:
    """What the tables are computed from: every lake Parquet file and feedback file (name, size, mtime)."""
    root = Path(data)

    def files(pattern: str) -> list[list[Any]]:
        return sorted([str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns]
                      for p in root.glob(pattern) if p.is_file())

    return {"lake": files("lake/spans/*/*.parquet") + files("lake/logs/*/*.parquet"),
            "feedback": files("feedback/*")}


def write_tables(con: duckdb.DuckDBPyConnection, data: Path | str, build_id: str, config: dict[str, Any]) -> Path:
    """COPY each stage-2 relation present on ``con`` to Parquet, publish the folder, drop older builds."""
    root = tables_dir(data)
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    with draft_folder(root, build_id) as tmp:
        written = []
        for name in TABLES:
            if name in have:
                order = f" ORDER BY {ORDER[name]}" if name in ORDER else ""
                con.execute(f"COPY (SELECT * FROM {name}{order}) TO {sql_literal(tmp / f'{name}.parquet')} "
                            f"({PARQUET_OPTIONS})")
                written.append(name)
        state = {"build_id": build_id, "tables": written, "config": config, **lake_state(data)}
        (tmp / STATE).write_text(json.dumps(state, indent=1, sort_keys=True, default=str))
        final = publish(tmp, build_id)
    for old in root.iterdir():
        if old.is_dir() and old.name != build_id and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    return final


def tables_current(data: Path | str, config: dict[str, Any]) -> bool:
    """True when the latest tables were built from today's lake and feedback files with ``config``."""
    build = read_pointer(tables_dir(data))
    if build is None:
        return False
    try:
        state = json.loads((tables_dir(data) / build / STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return False
    same_config = json.dumps(state.get("config"), sort_keys=True, default=str) == json.dumps(
        config, sort_keys=True, default=str)
    return same_config and not freshness(state, lake_state(data))


def current_tables(data: Path | str) -> tuple[dict[str, Path], list[str]]:
    """({table: parquet path} of the latest build, what changed since it: [] when current).

    Empty when no build materialised tables yet (readers fall back to computing the views)."""
    build = read_pointer(tables_dir(data))
    if build is None:
        return {}, []
    folder = tables_dir(data) / build
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return {}, []
    paths = {name: folder / f"{name}.parquet" for name in state.get("tables", [])
             if (folder / f"{name}.parquet").is_file()}
    return paths, freshness(state, lake_state(data))


def freshness(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Human-readable differences between the files the tables were built from and the files now."""
    changes = []
    for key, what in (("lake", "lake file"), ("feedback", "feedback file")):
        before = {f[0]: f[1:] for f in recorded.get(key, [])}
        after = {f[0]: f[1:] for f in now.get(key, [])}
        new = [n for n in after if n not in before or after[n] != before[n]]
        gone = [n for n in before if n not in after]
        if new:
            changes.append(f"{len(new)} new or changed {what}(s), e.g. {new[0]}")
        if gone:
            changes.append(f"{len(gone)} {what}(s) gone, e.g. {gone[0]}")
    return changes
