"""Stage 2 of ``spanrl ingest``: trace lake -> transition snapshot (DESIGN §5).

Reads like the steps it takes: open the lake -> register the rollout/reward SQL as tables ->
transition rows -> returns and advantages -> write parts into a hidden draft -> skip if the
content equals LATEST's -> commit (rename + atomic LATEST). Every run snapshots all complete
rollouts, so the same lake and config always give the same rows (and the same content hash).

Test-only: ``SPANRL_TEST_CRASH_AT=<point>`` makes the builder ``os._exit(137)`` at a named point
(``locked``, ``registered``, ``rows``, ``part``, ``before_commit``, ``after_commit``) so tests can show
that a crash never leaves a visible partial snapshot; ``SPANRL_TEST_HOLD_AT=<point>:<file>`` makes it
wait there until ``<file>`` exists (a real builder holding its lock). Never set them outside tests.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from spanrl.ingest.config import IngestConfig
from spanrl.ingest.load import lake_lock
from spanrl.ingest.views import connect, lock_down, sql_literal  # stage 1 owns the lake views
from spanrl.transitions.air import rules_as_dicts
from spanrl.transitions.coverage import content_coverage, coverage_hint
from spanrl.transitions.credit import EPS, advantage_stats
from spanrl.transitions.rollouts import _create, register_stage2
from spanrl.transitions.snapshot import (
    clean_stale_drafts,
    latest_manifest,
    new_snapshot_id,
    open_snapshot,
    transitions_dir,
)
from spanrl.transitions.sqlfiles import read_sql
from spanrl.transitions.tables import tables_current, tables_dir, write_tables

ROWS_PER_PART = 50_000  # fixed, so the same rows always split into the same parts (same hash)
CRASH_ENV = "SPANRL_TEST_CRASH_AT"
HOLD_ENV = "SPANRL_TEST_HOLD_AT"  # "<point>:<file>": wait at <point> until <file> exists (tests only)


@dataclass
class BuildResult:
    """What one stage-2 run did. status: written | unchanged | empty."""

    status: str
    snapshot_id: str | None
    path: Path | None
    rows: int
    stats: dict[str, Any] = field(default_factory=dict)


def build_transitions(cfg: IngestConfig, con: duckdb.DuckDBPyConnection | None = None) -> BuildResult:
    """Build a snapshot of every complete rollout in ``cfg.data``'s lake (``con``: a prepared lake).

    Holds the lake's writer lock (``lake_lock``): a second builder, or a builder beside a stage-1
    ingest, is refused (exit 2) instead of reading a lake half published or racing for LATEST."""
    with lake_lock(Path(cfg.data) / "lake"):
        _crash_point("locked")
        return _build(cfg, con)


def _build(cfg: IngestConfig, con: duckdb.DuckDBPyConnection | None) -> BuildResult:
    clean_stale_drafts(cfg.data)  # temp folders of builders killed over an hour ago (never visible)
    own = con is None
    con = con if con is not None else open_lake(cfg)
    try:
        setup = register_stage2(con, cfg, materialize=True, readable=builder_readable(cfg.data))
        _crash_point("registered")
        _create(con, "transition_rows", "TABLE", read_sql("snapshot/transition_base"))  # a view after a build
        n_rows = _create_transitions(con, cfg)  # the snapshot rows, queryable on the same connection
        _crash_point("rows")
        stats = collect_stats(con)
        stats["advantage"] = advantage_stats(con)
        stats["feedback_files"] = [str(p) for p in setup.feedback_files]
        spans_files = con.execute("SELECT DISTINCT unnest(source_files) FROM transitions").fetchall()
        sources = sorted({f for (f,) in spans_files} | set(stats["feedback_files"]))
        config = {**cfg.to_dict(), "air_rules": rules_as_dicts(setup.air_rules), "advantage_eps": EPS}
        stats["config_changed"] = changed_row_config(latest_manifest(cfg.data), config)
        row_config = {k: v for k, v in config.items() if k not in OPERATIONAL_KEYS}
        if not tables_current(cfg.data, row_config):  # what spanrl sql / spanrl ui read instead of the views
            write_tables(con, cfg.data, new_snapshot_id(), row_config)
        if n_rows == 0:
            return BuildResult("empty", None, None, 0, stats)
        return _write(cfg.data, con, n_rows, config, sources, stats)
    finally:
        if own:
            con.close()


def open_lake(cfg: IngestConfig) -> duckdb.DuckDBPyConnection:
    """Stage 1's views over the lake, with the memory limit and stage 1's spill folder, locked to
    what the builder reads (``builder_readable``) before any config-driven SQL runs on it."""
    con = connect(cfg.data, read_only=False, call_views=False, config_file=cfg.config_file)  # stage 2 creates them as tables
    spill = Path(cfg.data) / "lake" / "_tmp"
    spill.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET memory_limit = {sql_literal(cfg.memory_limit)}")
    con.execute(f"SET temp_directory = {sql_literal(spill)}")
    if cfg.threads:
        con.execute(f"SET threads = {int(cfg.threads)}")
    lock_down(con, builder_readable(cfg.data))
    return con


def builder_readable(data: Path) -> tuple[Path, ...]:
    """The folders the snapshot builder's DuckDB may open: the lake (its ``read_parquet`` views and
    spill folder), ``feedback/``, and ``transitions/_tables`` (the stage-2 tables it COPYs out for
    SQL). AIR rules run under this lock: no host file, nothing else of the data root."""
    return (Path(data) / "lake", Path(data) / "feedback", tables_dir(data))


def _create_transitions(con: duckdb.DuckDBPyConnection, cfg: IngestConfig) -> int:
    """Returns and advantages (``advantages.sql``, as ``credit.run_advantages`` runs it) into the temp
    table ``transitions``; the row count. The rows stay in DuckDB (under its memory limit, spilling
    if need be) and reach Python one part at a time, so peak memory does not grow with the snapshot."""
    params = {"credit": cfg.credit, "gamma": cfg.gamma, "advantage": cfg.advantage, "eps": EPS}
    con.execute("CREATE OR REPLACE TEMP TABLE transitions AS " + read_sql("snapshot/advantages"), params)
    # the same rows minus return/advantage: keep one copy of the messages under the memory limit
    _create(con, "transition_rows", "VIEW", "SELECT * FROM transitions")
    return con.execute("SELECT count(*) FROM transitions").fetchall()[0][0]


def _parts(con: duckdb.DuckDBPyConnection) -> Iterator[pa.Table]:
    """The ``transitions`` rows in (rollout_id, step) order, ``ROWS_PER_PART`` rows at a time."""
    # the table was created from an ordered query; with insertion order preserved a scan returns
    # that order, otherwise sort again (the parts, hence the content hash, depend on it)
    keep = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
    sql = "SELECT * FROM transitions" + ("" if keep else " ORDER BY rollout_id, step")
    reader = con.sql(sql).to_arrow_reader(ROWS_PER_PART)
    pending: list[pa.RecordBatch] = []
    n = 0
    for batch in reader:
        pending.append(batch)
        n += batch.num_rows
        while n >= ROWS_PER_PART:
            table = pa.Table.from_batches(pending, schema=reader.schema)
            yield table.slice(0, ROWS_PER_PART)
            rest = table.slice(ROWS_PER_PART)
            pending, n = rest.to_batches(), rest.num_rows
    if n:
        yield pa.Table.from_batches(pending, schema=reader.schema)


def _write(data: Path, con: duckdb.DuckDBPyConnection, n_rows: int, config: dict[str, Any], sources: list[str],
           stats: dict[str, Any]) -> BuildResult:
    with open_snapshot(data) as draft:
        for i, part in enumerate(_parts(con)):
            sid = pa.array([draft.snapshot_id] * part.num_rows, pa.string())
            part = part.set_column(part.column_names.index("snapshot_id"), "snapshot_id", sid)
            draft.write_part(part, i)
            _crash_point("part")
        latest = latest_manifest(data)
        if latest and latest.get("content_hash") == draft.content_hash():
            sid_old = latest["snapshot_id"]
            return BuildResult("unchanged", sid_old, transitions_dir(data) / sid_old, n_rows, stats)
        _crash_point("before_commit")
        path = draft.commit(config, sources, stats)
        _crash_point("after_commit")
        return BuildResult("written", draft.snapshot_id, path, n_rows, stats)


# Config keys that only say how a run goes, not which rows it makes: a change in any other key means
# every transition may differ (a full rebuild), and the summary says so.
OPERATIONAL_KEYS = frozenset({"data", "input", "no_transitions", "memory_limit", "threads", "config_file"})


def changed_row_config(latest: dict[str, Any] | None, config: dict[str, Any]) -> list[str]:
    """The row-shaping config keys whose value differs from the latest snapshot's (sorted)."""
    if not latest or not latest.get("config"):
        return []
    old = latest["config"]
    keys = (set(old) | set(config)) - OPERATIONAL_KEYS
    return sorted(k for k in keys if old.get(k) != config.get(k))


def _crash_point(point: str) -> None:
    if os.environ.get(CRASH_ENV) == point:
        os._exit(137)
    hold = os.environ.get(HOLD_ENV, "")
    if hold.startswith(point + ":"):  # test-only: wait here until the named file exists
        release = Path(hold.split(":", 1)[1])
        print(f"holding at {point}", file=sys.stderr, flush=True)
        while not release.exists():
            time.sleep(0.05)


def collect_stats(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Manifest/summary numbers, one small query each over the materialised stage-2 tables."""
    one = lambda sql: con.execute(sql).fetchall()[0]  # noqa: E731
    pairs = lambda sql: {str(k): v for k, v in con.execute(sql).fetchall()}  # noqa: E731
    r = one("""SELECT count(*), count(*) FILTER (WHERE complete), count(*) FILTER (WHERE NOT complete),
                      count(*) FILTER (WHERE complete AND final_reward IS NULL) FROM rollouts""")
    t = one("""SELECT count(*), count(DISTINCT rollout_id), count(DISTINCT task_id), min(fr), max(fr), avg(fr),
                      stddev_samp(fr)
               FROM (SELECT rollout_id, task_id, any_value(final_reward) AS fr FROM transition_rows GROUP BY ALL)""")
    rows = one("SELECT count(*) FROM transition_rows")[0]
    tree = one("SELECT count(*) FILTER (WHERE orphan), count(*) FILTER (WHERE repaired) FROM _span_tree")
    agents = one("SELECT count(agent_name), count(*) FILTER (WHERE ambiguous) FROM _agent_repairs")
    calls = one("""SELECT count(*), count(*) FILTER (WHERE c.output_message IS NULL)
                   FROM _rollout_calls c JOIN rollouts r USING (rollout_id) WHERE r.complete""")
    times = one("""SELECT min(started_ns), max(ended_ns) FROM rollouts
                   WHERE rollout_id IN (SELECT rollout_id FROM transition_rows)""")
    unknown = con.execute("""SELECT file || ':' || line || ' ' || feedback_key FROM _feedback_rewards
                             WHERE rollout_id IS NULL ORDER BY file, line""").fetchall()
    return {
        "rows": rows,
        "rollouts_seen": r[0], "rollouts_complete": r[1], "rollouts_waiting": r[2],
        "rollouts_without_reward": r[3],
        "rollouts": t[1], "tasks": t[2],
        "reward": {"min": t[3], "max": t[4], "mean": t[5], "std": t[6]},
        "llm_calls_complete": calls[0], "llm_calls_without_response": calls[1],
        "orphan_spans": tree[0], "orphans_reattached": tree[1],
        "agent_calls_repaired": agents[0], "agent_repairs_ambiguous": agents[1],
        "rewards_by_source": pairs("SELECT source, count(*) FROM rewards GROUP BY 1 ORDER BY 1"),
        "air_hits_by_rule": pairs("SELECT name, count(*) FROM _air_hits GROUP BY 1 ORDER BY 1"),
        "reward_mean_by_task": [
            {"task_id": k, "rollouts": n, "mean": m}
            for k, n, m in con.execute(
                """SELECT task_id, count(*), avg(fr) FROM (SELECT rollout_id, any_value(task_id) AS task_id,
                          any_value(final_reward) AS fr FROM transition_rows GROUP BY rollout_id)
                   GROUP BY task_id ORDER BY count(*) DESC, task_id LIMIT 5""").fetchall()
        ],
        "feedback_unknown_keys": len(unknown),
        "feedback_unknown": [u[0] for u in unknown[:20]],
        "min_time_ns": times[0], "max_time_ns": times[1],
        "llm_calls": one("SELECT count(*) FROM llm_calls")[0],
        "content_coverage": content_coverage(con),
    }


def print_summary(result: BuildResult) -> None:
    """The stage-2 summary table (rich): rollouts, calls, rewards, AIR, task means, snapshot."""
    from rich.console import Console
    from rich.table import Table

    s = result.stats
    table = Table(title="transitions", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("rollouts complete / waiting", f"{s.get('rollouts_complete', 0)} / {s.get('rollouts_waiting', 0)}")
    table.add_row("rollouts in snapshot", f"{s.get('rollouts', 0)} ({s.get('tasks', 0)} tasks; "
                  f"{s.get('rollouts_without_reward', 0)} without reward)")
    table.add_row("LLM calls -> transitions", f"{s.get('llm_calls_complete', 0)} -> {result.rows}")
    table.add_row("LLM calls in the lake", str(s.get("llm_calls", 0)))
    table.add_row("rewards by source", _pairs(s.get("rewards_by_source", {})))
    table.add_row("AIR hits by rule", _pairs(s.get("air_hits_by_rule", {})))
    reward = s.get("reward", {})
    if reward.get("mean") is not None:
        table.add_row("final reward", f"mean {reward['mean']:.3f}, min {reward['min']:.3f}, max {reward['max']:.3f}")
    for task in s.get("reward_mean_by_task", []):
        mean = "n/a" if task["mean"] is None else f"{task['mean']:.3f}"
        table.add_row(f"  task {task['task_id']}", f"mean {mean} over {task['rollouts']} rollouts")
    adv = s.get("advantage", {})
    if adv:
        table.add_row("advantage groups", f"{adv['groups']} ({adv['zero_variance_groups']} zero-variance); "
                      f"{adv['batch_fallback_rollouts']} rollouts on the batch baseline")
    if s.get("orphan_spans"):
        table.add_row("orphan spans re-attached", f"{s['orphans_reattached']} of {s['orphan_spans']}")
    if s.get("agent_calls_repaired") or s.get("agent_repairs_ambiguous"):
        table.add_row("agents by hierarchy repair",
                      f"{s['agent_calls_repaired']} calls ({s['agent_repairs_ambiguous']} ambiguous, left without)")
    if s.get("config_changed"):
        table.add_row("stage-2 config changed", ", ".join(s["config_changed"])
                      + ": every rollout was rebuilt with the new config (LATEST's config differs)")
    if s.get("feedback_unknown_keys"):
        table.add_row("feedback with unknown key", f"{s['feedback_unknown_keys']}: " + ", ".join(s["feedback_unknown"]))
    for g in s.get("content_coverage", []):
        table.add_row(f"  without content: {g['scope_name'] or '?'} {g['scope_version'] or ''}".rstrip(),
                      f"{g['without_input']} without input, {g['without_output']} without output")
    console = Console()
    console.print(table)
    hint = coverage_hint(s.get("content_coverage", []))
    if hint:
        console.print(hint, soft_wrap=True, highlight=False, markup=False)
    verdict = {"written": f"written {result.path}", "unchanged": f"unchanged (LATEST = {result.snapshot_id})",
               "empty": "none written: no complete rollout with transitions yet"}[result.status]
    console.print(f"snapshot: {verdict}", soft_wrap=True, highlight=False)


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"
