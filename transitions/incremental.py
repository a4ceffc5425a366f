"""Which traces a build must recompute, and the lake as that build sees it (docs/incremental.md).

The unit of reuse is the **trace**: every stage-2 step (the span tree and rollout identity, agent
repair, LLM calls and tool calls, explicit rewards and AIR) reads only the spans of one trace, and a
rollout is computed from all of its traces together. A build therefore recomputes the traces that
something new could change and reuses every other row:

* traces with spans or log records in lake files that appeared since the last build, or that lived
  in lake files that are gone (retention, compaction);
* traces of rollouts that were still waiting (incomplete) - the lake's clock moved on;
* traces of rollouts whose feedback changed (a feedback file added, edited or removed);
* closed over rollouts: a rollout spanning several traces is recomputed with all of them, and a
  recomputed trace that turns out to join an older rollout pulls that rollout's traces in too;
* and over cross-trace twins: a stored trace that may hold the other recording of a recomputed
  trace's LLM call (``incremental/twins.sql``) is recomputed with it, so llm_calls.sql merges the two.

What the recomputed traces need to know about the rest of the lake (the lake's clock; which rollout
ids, trace rollouts and response ids exist elsewhere, for feedback resolution) comes from the stored
tables of the last build (``_prior_*`` relations, ``spanrl_lake_now_ns``), so the rows come out
exactly as a build over the whole lake would make them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from spanrl.layout import lake_dir
from spanrl.sqlfiles import one, rows
from spanrl.transitions.pipeline import (
    LAKE_STEPS,
    LAST_BUILD_STEPS,
    PLAN_STEPS,
    PRIOR_STEPS,
    ROUND_STEPS,
    run_steps,
)
from spanrl.transitions.sqlfiles import read_sql, render_sql
from spanrl.transitions.tables import global_file, segment_files

MAX_CLOSURE_ROUNDS = 8  # each round only when a recomputed trace joined an older rollout (rare)
# the plan's steps up to _seeds (once per build), and _touched (once per closure round, close_over_rollouts)
SEED_STEPS = [s for s in PLAN_STEPS if s.creates != "_touched"]
TOUCHED_STEPS = [s for s in PLAN_STEPS if s.creates == "_touched"]


@dataclass
class Plan:
    """What a build recomputes. ``full``: every trace (first build, --rebuild, another config or
    release); otherwise ``_touched`` on the connection holds the traces, ``why`` counts them."""

    full: bool
    reason: str = ""
    new_files: list[str] = field(default_factory=list)
    gone_files: list[str] = field(default_factory=list)
    why: dict[str, int] = field(default_factory=dict)
    traces: int = 0
    rounds: int = 1
    segments: dict[str, int] = field(default_factory=dict)  # written / rewritten / reused
    read_files: list[str] = field(default_factory=list)  # lake files an incremental run read
    conventions: list[str] | None = None  # the conventions stacked for llm_calls (None: rows were given)
    seconds: dict[str, float] = field(default_factory=dict)  # rows: compute + segment write
    quarantine: list[dict] = field(default_factory=list)  # traces left out: stage 2 failed on them (quarantine.py)


def lake_clocks(con: duckdb.DuckDBPyConnection, data: Path, span_files: list[str]) -> dict[str, int]:
    """The clock each span file contributes (newest span end or ingest time, ns), read once per file."""
    if not span_files:
        return {}
    root = str(Path(data).resolve())
    found = rows(con, read_sql("incremental/lake_clocks"), {"files": [f"{root}/{f}" for f in span_files]})
    return {r["filename"][len(root) + 1:]: int(r["clock_ns"] or 0) for r in found}


def register_priors(con: duckdb.DuckDBPyConnection, data: Path, state: dict[str, Any] | None) -> None:
    """``LAST_BUILD_STEPS``: views ``_p_*`` over the last build's stored bookkeeping (no rows when there is none)."""
    files = {view: [str(p) for p in segment_files(data, state or {}, table)]
             for view, table in (("_p_traces", "_traces"), ("_p_rollouts", "rollouts"), ("_p_responses", "_responses"))}
    fb = global_file(data, state or {}, "_feedback_detail")
    files["_p_feedback"] = [str(fb)] if fb else []
    run_steps(con, LAST_BUILD_STEPS, materialize=False, files=files)


def plan_touched(con: duckdb.DuckDBPyConnection, data: Path, new_files: list[str], gone_files: list[str],
                 changed_feedback: list[str]) -> Plan:
    """Fill ``_touched(trace_id)`` with the seeds of an incremental build, closed over rollouts.

    Needs ``_p_*`` (``register_priors``) and ``_feedback`` (``feedback.load_feedback``)."""
    root = str(Path(data).resolve())
    new = {f"_new_{table}": [f"{root}/{f}" for f in new_files if f.startswith(f"lake/{table}/")]
           for table in ("spans", "logs")}
    run_steps(con, SEED_STEPS, materialize=True, files=new,
              params={"_gone": {"paths": gone_files}, "_changed_feedback": {"names": [Path(f).name for f in changed_feedback]}})
    close_over_rollouts(con)
    why = {r["why"]: r["traces"] for r in rows(
        con, "SELECT why, count(DISTINCT trace_id) AS traces FROM _seeds GROUP BY why ORDER BY why")}
    return Plan(full=False, new_files=new_files, gone_files=gone_files, why=why, traces=_count_touched(con))


def _count_touched(con: duckdb.DuckDBPyConnection) -> int:
    return one(con, "SELECT count(*) AS traces FROM _touched")["traces"]


def close_over_rollouts(con: duckdb.DuckDBPyConnection, stored: bool | None = None) -> None:
    """``_touched`` := ``_seeds``' traces plus every trace of an older rollout that shares one with them
    (just the seeds when none of them is a stored trace: the common night of brand-new traces; ``stored``
    False: the seeds are a plan already closed, a sharded night's worker's)."""
    if stored is None:
        stored = bool(one(con, "SELECT count(*) AS n FROM (SELECT DISTINCT trace_id FROM _seeds) "
                               "SEMI JOIN _p_traces USING (trace_id)")["n"])
    run_steps(con, TOUCHED_STEPS, materialize=True, params={"_touched": {"stored": stored}})


def joined_older(con: duckdb.DuckDBPyConnection) -> int:
    """After a partial run: add to ``_touched`` (closed again) the traces of older rollouts that a
    recomputed trace now belongs to, and the stored traces a recomputed trace may share an LLM call
    with (``ROUND_STEPS``, ``incremental/twins.sql``: one call recorded in two traces that reached the lake on different
    nights); how many traces were added (0: the run is complete)."""
    run_steps(con, ROUND_STEPS, materialize=True)
    twins = one(con, "SELECT count(*) AS n FROM _twin_traces")["n"]
    older = one(con, "SELECT count(*) AS n FROM rollouts SEMI JOIN _p_rollouts USING (rollout_id)")["n"]
    if not (twins or older):
        return 0  # every recomputed rollout is new, or already computed with all its traces below
    before = _count_touched(con)
    con.execute(read_sql("incremental/seeds_joined"))  # _seeds += older rollouts' traces + twins
    close_over_rollouts(con)
    return _count_touched(con) - before


def files_of_touched(con: duckdb.DuckDBPyConnection, new_files: list[str], existing: set[str],
                     among: str = "_touched") -> list[str]:
    """The lake files an incremental run reads: the new ones plus those the touched traces lived in
    (``among``: the relation of those traces; a sharded night's worker names its shard's)."""
    old = rows(con, f"SELECT DISTINCT unnest(lake_files) AS file FROM _p_traces SEMI JOIN {among} USING (trace_id)")
    return sorted((set(new_files) | {r["file"] for r in old}) & existing)


def restrict_lake(con: duckdb.DuckDBPyConnection, data: Path, files: list[str], new_files: Iterable[str] = (),
                  traces: str = "SELECT trace_id FROM _touched") -> None:
    """``LAKE_STEPS``: ``spans`` and ``logs`` as temp views over ``files`` (lake paths), the plan's traces only
    (``traces``: the SELECT of them, ``_lake_traces``; a log record with no trace id is kept: it may name a
    recomputed call's response id). A table whose files are all in ``new_files`` is read whole (lake/spans.sql:
    the filter would keep every row); a sharded night's worker, whose files also hold other shards' traces,
    gives none, so its own (``_shard_traces``) are kept."""
    root = str(Path(data).resolve())
    new = set(new_files)
    chosen = {t: [f for f in files if f.startswith(f"lake/{t}/")] for t in ("spans", "logs")}
    run_steps(con, LAKE_STEPS, materialize=False, generated={"_lake_traces": lambda: (traces, None)},
              files={t: [f"{root}/{f}" for f in c] for t, c in chosen.items()},
              literals={t: {"whole": bool(c) and set(c) <= new} for t, c in chosen.items()})


def fill_priors(con: duckdb.DuckDBPyConnection) -> None:
    """``PRIOR_STEPS``: ``_prior_*`` (read by _feedback_rewards.sql), the stored rollouts, trace rollouts
    and response ids of every trace this run does not recompute."""
    run_steps(con, PRIOR_STEPS, materialize=False)


def traces_table_sql(data: Path, span_files: list[str] | None, log_files: list[str] | None) -> str:
    """SELECT for a segment's ``_traces``: per recomputed trace, its rollout, the lake files holding
    it (span files, log files with its trace id or naming one of its calls' response ids) and the
    counts the build summary adds up. ``None`` file lists: every lake file (a full build)."""
    root = str(Path(data).resolve())

    def source(table: str, files: list[str] | None) -> str | list[str]:  # a glob, paths, or "": none
        if files is None:
            has = any((lake_dir(root) / table).glob("*/*.parquet"))
            return f"{root}/lake/{table}/*/*.parquet" if has else ""
        return [f"{root}/{f}" for f in files if f.startswith(f"lake/{table}/")]

    # a SELECT for a COPY (nothing can be bound): the file lists are rendered in; the one part that is
    # pasted is the UNION of the trace_files_*.sql that have files to read
    parts = [render_sql(f"incremental/trace_files_{table}", files=src)
             for table, files in (("spans", span_files), ("logs", log_files)) if (src := source(table, files))]
    files = " UNION ".join(parts) if parts else read_sql("incremental/trace_files_empty")
    return render_sql("incremental/traces", root=root).replace("/*FILES*/", files)
