"""The builder's lake connection and what a segment is made of, shared by ``build.py`` and the sharded
build's workers (``shards.py``), which import it instead of taking it as callbacks."""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.ingest.lake import coverage_sql, lock_down, open_for_builder  # stage 1's API
from spanrl.layout import feedback_dir, lake_dir
from spanrl.memory import resolve_memory_limit, task_threads
from spanrl.sqlfiles import sql_literal
from spanrl.transitions.config import BuildConfig
from spanrl.transitions.incremental import traces_table_sql
from spanrl.transitions.sqlfiles import read_sql
from spanrl.transitions.tables import tables_dir


def open_lake(cfg: BuildConfig) -> duckdb.DuckDBPyConnection:
    """Stage 1's views over the lake, with the memory limit and stage 1's spill folder, locked to
    what the builder reads (``builder_readable``) before any config-driven SQL runs on it."""
    con = open_for_builder(cfg.data, cfg.config_file)  # stage 2 creates llm_calls / tool_calls as tables
    spill = lake_dir(cfg.data) / "_tmp"
    spill.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET memory_limit = {sql_literal(resolve_memory_limit(cfg.memory_limit))}")
    con.execute(f"SET temp_directory = {sql_literal(spill)}")
    # Stage 2 orders what it writes (segment files ORDER BY their keys, aggregates ORDER BY inside) and
    # never reads a table's insertion order, so its temp tables need not keep one: filling a table in
    # order appends through batch indexes, 0.5 of _span_facts' 2.7 CPU s in a 600k-span rebuild
    # (bench/results/stage2_repeat_600k_insertion_order_2026-12-08.txt; docs/architecture.md, "Determinism").
    con.execute("SET preserve_insertion_order = false")
    if threads := cfg.threads or task_threads():  # in a Ray task: its CPUs (spanrl/workers.py)
        con.execute(f"SET threads = {int(threads)}")
    lock_down(con, builder_readable(cfg.data))
    return con


def builder_readable(data: Path) -> tuple[Path, ...]:
    """The folders the snapshot builder's DuckDB may open: the lake (its ``read_parquet`` views and
    spill folder), ``feedback/``, and ``transitions/_tables`` (the stage-2 segments it reads and
    writes). AIR rules run under this lock: no host file, nothing else of the data root."""
    return (lake_dir(data), feedback_dir(data), tables_dir(data))


def segment_sources(data: Path, span_files: list[str] | None, segment_id: str) -> dict[str, str]:
    """What a segment holds, table by table: the SELECTs over a build's (a shard's) relations that
    ``tables.write_segment`` copies; ``span_files``: the lake files an incremental run read (None: all)."""
    return {
        "llm_calls": "SELECT * FROM llm_calls",
        "tool_calls": "SELECT * FROM tool_calls",
        "rewards": "SELECT * FROM rewards WHERE source <> 'feedback'",
        "rollouts": "SELECT * FROM rollouts",
        "coverage": coverage_sql(),
        "transitions": f"SELECT * REPLACE ({sql_literal(segment_id)} AS snapshot_id) FROM transitions "
                       "ORDER BY rollout_id, step",
        "digests": read_sql("snapshot/rollout_digests"),
        "_traces": traces_table_sql(data, span_files, span_files),
        "_responses": read_sql("segments/_responses"),
    }
