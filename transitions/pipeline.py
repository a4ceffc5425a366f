"""Stage 2 as an ordered list of steps: each names the relations it reads, the one it creates and its SQL.

Steps talk through named temp relations on one DuckDB connection. The lists below are that
conversation, in the order it runs (docs/architecture.md shows them): ``STAGE2_STEPS`` makes the
rollouts and rewards from stage 1's ``spans`` / ``logs`` / ``llm_calls`` / ``tool_calls`` (``spanrl
sql`` and the snapshot builder alike, ``rollouts.register_stage2``); ``TRANSITION_STEPS`` then makes
the builder's transition rows (``build.py``). ``run_steps`` executes a list in order and refuses a
step whose declared input is not on the connection, naming the step, instead of a binder error deep
inside a view. tests/transitions/test_pipeline.py checks each step's SQL reads what it declares.

A step is a TABLE (evaluated once: read several times, or costly to re-plan), a VIEW (read once),
or ``heavy``: a table when the caller materialises (the builder, the query connection), else a view.
These choices are measured ones (docs/transitions.md); changing one changes the build's speed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import duckdb

from spanrl.sqlfiles import rows
from spanrl.transitions.hashing import FUNCTIONS
from spanrl.transitions.sqlfiles import read_sql, render_sql


@dataclass(frozen=True)
class Step:
    """One stage-2 relation: ``creates`` from ``sql`` (a file under ``transitions/sql/`` without
    ``.sql``; None: the caller generates the SELECT) over ``reads``; ``kind`` is table, view or heavy.
    ``template``: the file is a template the caller fills in (its SELECT comes from ``generated``).
    ``files``: the file reads Parquet files the caller lists (``${files}``, rendered in: a view cannot
    bind them), and ``<sql>_empty.sql`` is the same relation when the list is empty (read_parquet
    refuses one). ``functions``: the Python functions its SQL calls (``hashing.FUNCTIONS``), registered on
    the connection first. A step's file declares the same ``-- reads:`` and ``-- creates:`` in its header."""

    creates: str
    reads: tuple[str, ...]
    sql: str | None
    kind: str = "heavy"
    template: bool = False
    files: bool = False
    functions: tuple[str, ...] = ()

    def relation(self, materialize: bool) -> str:
        """TABLE or VIEW, for this run."""
        return "TABLE" if self.kind == "table" or (self.kind == "heavy" and materialize) else "VIEW"


# The stage-1 relations stage 2 reads (ingest.lake creates them), and what the caller registers first:
# _feedback (feedback.load_feedback), the _prior_* relations (empty unless an incremental build filled them).
STAGE1 = ("spans", "logs", "_span_facts", "llm_calls", "tool_calls")
PRIOR_INPUTS = ("_prior_rollout_ids", "_prior_trace_rollouts", "_prior_responses")

STAGE2_STEPS: list[Step] = [
    Step("_span_tree", ("_span_facts", "llm_calls"), "rollouts/_span_tree"),
    Step("_trace_rollouts", ("_span_tree",), "rollouts/_trace_rollouts"),
    Step("_rollout_status", ("spans", "_span_tree"), "rollouts/_rollout_status"),
    Step("_agent_repairs", ("_span_facts", "llm_calls"), "rollouts/_agent_repairs"),
    Step("_rollout_calls", ("llm_calls", "_span_tree", "_agent_repairs"), "rollouts/_rollout_calls", "view"),
    Step("_rollout_tasks", ("_span_facts", "llm_calls", "_span_tree", "_rollout_calls"), "rollouts/_rollout_tasks"),
    # read by rewards and rollouts: as a view its scan of every span's text ran twice (a table: stage 2
    # -4% CPU at 60k spans, -3% at 600k, bench/stage2_repeat.py; _rollout_calls as a table copies every
    # prompt and lost 2% at 600k)
    Step("_explicit_rewards", ("spans", "logs", "_span_facts", "_span_tree", "_trace_rollouts", "_rollout_calls"),
         "rewards/_explicit_rewards"),
    Step("_feedback_rewards", ("_feedback", *PRIOR_INPUTS, "_span_tree", "_trace_rollouts", "_rollout_calls"),
         "rewards/_feedback_rewards"),
    Step("_air_candidates", ("spans", "_span_facts", "tool_calls", "_span_tree", "_rollout_calls"), "rewards/_air_candidates",
         "view"),
    # the template rewards/_air_rule_hits.sql filled with the AIR rules' predicates (air.air_rule_hits_sql,
    # which also binds the rules into _air_rules); a table whenever stage 2 is materialised
    Step("_air_rule_hits", ("_air_candidates",), "rewards/_air_rule_hits", template=True),
    Step("_air_hits", ("_air_rule_hits", "_air_rules"), "rewards/_air_hits", "view"),
    Step("rewards", ("_explicit_rewards", "_feedback_rewards", "_air_hits"), "rewards/rewards"),
    Step("rollouts", ("tool_calls", "_span_tree", "_rollout_status", "_rollout_tasks", "_rollout_calls",
                      "_explicit_rewards", "_feedback_rewards"), "rollouts/rollouts"),
]

# The snapshot builder's rows (build.py), after STAGE2_STEPS: the rows (a table), the per-rollout
# frame the credit SQL reads, the credit mode's SELECT over them (credit.builder_transitions_sql:
# generated, advantage unset: the snapshot reader's; a view, so the prompts are not copied once more)
# and ``transition_rows``, the name the digests and the segment writer read, over that view.
TRANSITION_STEPS: list[Step] = [
    Step("_transition_base", ("rollouts", "llm_calls", "_rollout_calls", "_rollout_status", "_air_hits"),
         "snapshot/transition_base", "table"),
    Step("_rollout_frame", ("_transition_base",), "snapshot/_rollout_frame", "table"),
    Step("transitions", ("_transition_base", "_rollout_frame"), None, "view"),
    Step("transition_rows", ("transitions",), "snapshot/transition_rows", "view"),
]

# The build's stored segments, read back on the snapshot's own connection (build.py, tables.register_build_views):
# views over every segment's Parquet files of a table (``files``: their list, rendered in), what the summary,
# the snapshot's index and SNAPSHOT_STEPS read. The relations the builder's steps wrote, under their names.
PUBLISH_STEPS: list[Step] = [
    Step("rollouts", (), "tables/rollouts", "view", files=True),
    Step("_traces", (), "tables/_traces", "view", files=True),
    Step("_digests", (), "tables/_digests", "view", files=True),
    Step("coverage", (), "tables/coverage", "view", files=True),
    Step("llm_calls", (), "tables/llm_calls", "view", files=True),
    Step("segment_rewards", (), "tables/segment_rewards", "view", files=True),
    Step("rewards", ("segment_rewards",), "tables/rewards", "view", files=True),  # + the whole-lake feedback rows
    Step("_feedback_detail", (), "tables/_feedback_detail", "view", files=True),
    Step("transition_rows", (), "tables/transition_rows", "view", files=True),
]

# Per rollout of ``transition_rows`` (rows a reader holds: a snapshot's parts, a bare table for
# credit.compute_advantages): task, reward, row count and digest. The builder does not run it: its
# segments store these digests (the segment writer's ``digests``), read back as ``_digests``.
DIGEST_STEPS: list[Step] = [
    Step("_digests", ("transition_rows",), "snapshot/rollout_digests", functions=("spanrl_sha256",)),
]

# The advantages over every rollout (build.py, on the snapshot's own connection, where ``transition_rows``
# reads every segment's stored rows and ``_digests`` is tables.register_build_views'; credit.run_advantages
# after DIGEST_STEPS): each rollout's AIR total (what credit ``air`` puts into the group statistics), its
# reward, and A_r (``_rollout_adv``: bound ``advantage`` and ``eps``, run_steps' ``params``).
SNAPSHOT_STEPS: list[Step] = [
    Step("_rollout_air", ("transition_rows",), "snapshot/rollout_air", "table"),
    Step("_rollout_rewards", ("_digests", "_rollout_air"), "snapshot/_rollout_rewards", "view"),
    Step("_rollout_adv", ("_rollout_rewards",), "snapshot/rollout_advantages", "table"),
]

# An incremental build's plan (incremental.py), on the builder's connection before STAGE2_STEPS: the last
# build's stored bookkeeping over its segments (``files`` steps; empty before any build), then, each
# closure round once ``_touched`` holds the traces recomputed, the ``_prior_*`` inputs of _feedback_rewards:
# what every other trace of the lake holds (views: only a feedback row ever probes them).
LAST_BUILD_STEPS: list[Step] = [
    Step("_p_traces", (), "incremental/_p_traces", "view", files=True),
    Step("_p_rollouts", (), "incremental/_p_rollouts", "view", files=True),
    Step("_p_responses", (), "incremental/_p_responses", "view", files=True),
    Step("_p_feedback", (), "incremental/_p_feedback", "view", files=True),
]
# Then the plan itself (incremental.plan_touched): what is new since the last build (``files`` steps over the new
# lake files; bound lists of the files gone and the feedback files changed), the traces to recompute and why
# (``_seeds``), closed over rollouts (``_touched``: closure.sql binds ``$stored``; a closure round appends
# seeds, incremental/seeds_joined.sql, and runs the ``_touched`` step again).
PLAN_STEPS: list[Step] = [
    Step("_new_spans", (), "incremental/_new_spans", "table", files=True),
    Step("_new_logs", (), "incremental/_new_logs", "table", files=True),
    Step("_gone", (), "incremental/_gone", "table"),
    Step("_changed_feedback", (), "incremental/_changed_feedback", "table"),
    Step("_seeds", ("_feedback", "_changed_feedback", "_p_feedback", "_p_responses", "_new_spans", "_new_logs",
                    "_p_traces", "_gone", "_p_rollouts"), "incremental/seeds", "table"),
    Step("_touched", ("_seeds", "_p_rollouts"), "incremental/closure", "table"),
]
PRIOR_STEPS: list[Step] = [
    Step("_prior_rollout_ids", ("_p_rollouts", "_touched"), "incremental/_prior_rollout_ids", "view"),
    Step("_prior_trace_rollouts", ("_p_traces", "_touched"), "incremental/_prior_trace_rollouts", "view"),
    Step("_prior_responses", ("_p_responses", "_touched"), "incremental/_prior_responses", "view"),
]
# The lake as a build's plan sees it, before STAGE2_STEPS (incremental.restrict_lake: each closure round of an
# incremental build, a shard's worker, a quarantine's probe and the build after it): ``_lake_traces``, the plan's
# traces (generated: the caller's SELECT of ``_touched``, a worker's ``_shard_traces``, the quarantine's), then
# stage 1's ``spans`` and ``logs`` shadowed by temp views over the lake files the plan reads (``files``, and the
# ``whole`` literal: every file new, read without the filter), which every later view reads instead.
LAKE_STEPS: list[Step] = [
    Step("_lake_traces", (), None, "table"),
    Step("spans", ("_lake_traces",), "lake/spans", "view", files=True),
    Step("logs", ("_lake_traces",), "lake/logs", "view", files=True),
]

# An incremental build after each closure round's TRANSITION_STEPS (incremental.joined_older): the stored
# traces that may hold the other recording of a recomputed trace's LLM call (recomputed with it next round).
ROUND_STEPS: list[Step] = [
    Step("_twin_traces", ("llm_calls", "_span_tree", "_p_traces"), "incremental/twins", "table"),
]
# An incremental build's publish (tables.rewrite_touched, for one process or its shards): the rollouts its
# rows replace in older segments.
REWRITE_STEPS: list[Step] = [
    Step("_touched_rollouts", ("rollouts", "_p_rollouts", "_touched"), "segments/_touched_rollouts", "table"),
]

# Every list (a full build's, then the snapshot's and a reader's, then an incremental plan's): what
# docs/architecture.md's step table shows, row by row
# (tests/transitions/test_step_table.py holds the table to these lists).
STEP_LISTS: dict[str, list[Step]] = {"STAGE2_STEPS": STAGE2_STEPS, "TRANSITION_STEPS": TRANSITION_STEPS,
                                     "PUBLISH_STEPS": PUBLISH_STEPS, "DIGEST_STEPS": DIGEST_STEPS,
                                     "SNAPSHOT_STEPS": SNAPSHOT_STEPS, "LAST_BUILD_STEPS": LAST_BUILD_STEPS,
                                     "PLAN_STEPS": PLAN_STEPS, "PRIOR_STEPS": PRIOR_STEPS, "LAKE_STEPS": LAKE_STEPS,
                                     "ROUND_STEPS": ROUND_STEPS, "REWRITE_STEPS": REWRITE_STEPS}
# The lists that run on one connection, in order: each relation is made by one step of them.
CONNECTIONS: dict[str, tuple[str, ...]] = {
    "builder": ("LAST_BUILD_STEPS", "PLAN_STEPS", "PRIOR_STEPS", "LAKE_STEPS", "STAGE2_STEPS", "TRANSITION_STEPS",
                "ROUND_STEPS", "REWRITE_STEPS"),  # a build's (a shard's, a quarantine probe's) lake connection
    "snapshot": ("PUBLISH_STEPS", "SNAPSHOT_STEPS"),  # build.py's snapshot, over every segment
    "reader": ("DIGEST_STEPS", "SNAPSHOT_STEPS"),  # read_snapshot / content_hash / compute_advantages
}

Generated = Callable[[], tuple[str, Mapping[str, Any] | None]]


DECLARED = re.compile(r"^-- (reads|creates):(.*)$")


@cache
def declared(sql: str) -> tuple[tuple[str, ...], str | None]:
    """What ``transitions/sql/<sql>.sql`` says in its header comment: (``-- reads: a, b``, ``-- creates: x``)."""
    found: dict[str, str] = {}
    for line in read_sql(sql).splitlines():
        if not line.startswith("--"):
            break
        if m := DECLARED.match(line):
            found[m[1]] = m[2].strip()
    reads = tuple(n.strip() for n in found.get("reads", "").split(",") if n.strip())
    return reads, found.get("creates") or None


def check_declared(step: Step) -> None:
    """A step's file must declare what its Step in this module does: the file and the list cannot disagree."""
    for sql in (step.sql, f"{step.sql}_empty") if step.files else (step.sql,) if step.sql else ():
        _check_file(step, sql)


def _check_file(step: Step, sql: str) -> None:
    reads, creates = declared(sql)
    if creates != step.creates or reads != step.reads:
        raise RuntimeError(
            f"transitions/sql/{sql}.sql declares '-- reads: {', '.join(reads)}' and '-- creates: {creates}', "
            f"its step in transitions/pipeline.py reads {', '.join(step.reads)} and creates {step.creates}: "
            "make them say the same")


def create(con: duckdb.DuckDBPyConnection, name: str, kind: str, body: str,
           params: Mapping[str, Any] | None = None) -> None:
    """CREATE OR REPLACE TEMP VIEW|TABLE ``name`` AS ``body``; it cannot turn a view into a table (or
    back), so the other kind (left by ``connect()``'s views, say) is dropped first."""
    other = "VIEW" if kind == "TABLE" else "TABLE"
    try:
        con.execute(f"DROP {other} IF EXISTS temp.{name}")
    except duckdb.CatalogException:
        pass  # the name exists as `kind` already: CREATE OR REPLACE handles it
    sql = f"CREATE OR REPLACE TEMP {kind} {name} AS {body}"
    con.execute(sql, dict(params)) if params else con.execute(sql)


def relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The tables and views ``con`` can read by name (temp ones and registered Arrow datasets too)."""
    return {r["table_name"] for r in rows(con, "SELECT table_name FROM information_schema.tables")}


def run_steps(con: duckdb.DuckDBPyConnection, steps: list[Step], materialize: bool,
              generated: Mapping[str, Generated] | None = None,
              errors: Mapping[str, Callable[[duckdb.Error], Exception]] | None = None,
              params: Mapping[str, Mapping[str, Any]] | None = None,
              files: Mapping[str, list[str]] | None = None,
              literals: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Create each step's relation in order. ``generated``: the SELECT (and bound values) of the steps
    without a file; ``errors``: per step, what a DuckDB error becomes (a bad AIR rule names the rule);
    ``params``: per step, the values its file's ``$parameters`` are bound to (a table step only);
    ``files``: per ``files`` step, the Parquet files it reads (none: its ``_empty`` file), and ``literals``
    the other values its file renders in (a view cannot bind them either)."""
    generated, errors, params_of, files_of = generated or {}, errors or {}, params or {}, files or {}
    literals_of = literals or {}
    have = relations(con)
    for step in steps:
        check_declared(step)
        missing = [r for r in step.reads if r not in have]
        if missing:
            have = relations(con)  # made outside the list (_air_rules, by the generated step before it)
            missing = [r for r in step.reads if r not in have]
        if missing:
            raise RuntimeError(f"stage-2 step {step.creates!r} reads {', '.join(missing)}, which nothing created "
                               "on this connection: transitions/pipeline.py lists the steps in order")
        if step.files:
            listed = files_of.get(step.creates) or []
            body = (render_sql(step.sql, files=listed, **literals_of.get(step.creates, {})) if listed
                    else read_sql(f"{step.sql}_empty"))
            params = None
        elif step.sql is not None and not step.template:
            body, params = read_sql(step.sql), params_of.get(step.creates)
        elif step.creates in generated:
            body, params = generated[step.creates]()
        else:
            raise RuntimeError(f"stage-2 step {step.creates!r} is generated (no SQL file, or a template); "
                               "its caller must generate it")
        for name in step.functions:
            FUNCTIONS[name](con)
        try:
            create(con, step.creates, step.relation(materialize), body, params)
        except duckdb.Error as exc:
            if step.creates in errors:
                raise errors[step.creates](exc) from None
            raise
        have.add(step.creates)
