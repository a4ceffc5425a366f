"""Stage 2 over shards of connected traces, as Ray tasks (``--workers N`` on a full build, docs/scale.md).

A shard must hold every trace its rows depend on, or a rollout, an LLM call or a feedback row would be
split and the hash would differ from one process. So the driver first labels the lake's traces with
their connected component over the keys that tie traces together in stage 2 (``sql/shards/
_trace_keys.sql``: rollout keys, response ids, the process of a multi-instrumentation service), then
packs whole components into N shards of about equal spans. Each task runs the very steps a build runs
(``register_stage2`` + ``TRANSITION_STEPS``) on its shard's spans, with the whole lake's clock, and
writes one segment into the build's draft folder. The driver then checks that no rollout and no
response id landed in two shards (``shard_conflicts.sql``; if one did, the caller redoes the build in
one process), resolves the feedback files against every shard (the build's global feedback tables),
and the snapshot is made from the segments as after any build: population statistics and the content
hash over all of them, identical to a one-process build (tests/transitions/test_shards.py).

Workers read the lake and write the draft at the driver's paths: a local Ray cluster, or nodes that
share the data root's file system.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from spanrl.sqlfiles import one, rows, sql_literal
from spanrl.transitions.config import BuildConfig
from spanrl.transitions.connect import builder_readable, open_lake, segment_sources
from spanrl.transitions.pipeline import STAGE2_STEPS, TRANSITION_STEPS, run_steps
from spanrl.transitions.sqlfiles import read_sql

MAX_ROUNDS = 50  # label propagation rounds (each halves no distance guarantee, but real key graphs are shallow)


class ShardConflict(Exception):
    """Rows of one rollout or one LLM call ended in two shards: the build must run in one process."""


def plan_shards(con: duckdb.DuckDBPyConnection, shards: int) -> list[list[str]]:
    """The lake's trace ids in at most ``shards`` lists, no connected component split; fewer than two
    lists when the lake cannot be split (one component, or one shard asked)."""
    from spanrl.workers import split_evenly

    con.execute("CREATE OR REPLACE TEMP TABLE _trace_keys AS " + read_sql("shards/_trace_keys"))
    con.execute("CREATE OR REPLACE TEMP TABLE _components AS "
                "SELECT trace_id, trace_id AS comp, count(*) AS n_spans FROM spans GROUP BY trace_id")
    for _ in range(MAX_ROUNDS):
        con.execute("CREATE OR REPLACE TEMP TABLE _components_next AS " + read_sql("shards/_components_step"))
        changed = one(con, "SELECT count(*) AS n FROM _components_next JOIN _components c USING (trace_id) "
                           "WHERE _components_next.comp <> c.comp")["n"]
        con.execute("CREATE OR REPLACE TEMP TABLE _components AS SELECT * FROM _components_next")
        if not changed:
            break
    else:
        return []  # not converged: one process
    comps = rows(con, "SELECT comp, list(trace_id ORDER BY trace_id) AS traces, sum(n_spans) AS n "
                      "FROM _components GROUP BY comp ORDER BY comp")
    if len(comps) < 2 or shards < 2:
        return []
    bins = split_evenly([int(c["n"]) for c in comps], shards)
    return [[t for i in b for t in comps[i]["traces"]] for b in bins]


def build_shard(cfg: BuildConfig, rules: list, traces: list[str], folder: str, lake_now_ns: int | None,
                lake_files: list[str]) -> dict[str, Any]:
    """A worker's stage 2 (a Ray task): the shard's traces computed as a build computes them, on the
    builder's connection (``connect.open_lake``), written as one segment into ``folder``
    (``connect.segment_sources``); returns its rollouts, traces and the conventions it read."""
    from spanrl.transitions.credit import builder_transitions_sql
    from spanrl.transitions.incremental import restrict_lake
    from spanrl.transitions.rollouts import register_stage2
    from spanrl.transitions.tables import write_segment

    data = Path(cfg.data)
    if os.environ.get("SPANRL_TEST_CRASH_AT") == "shard" and folder.endswith("-00"):  # tests: a worker dies
        os._exit(137)
    con = open_lake(cfg)
    sources = segment_sources(data, None, Path(folder).name)
    try:
        con.register("_shard_traces", pa.table({"trace_id": pa.array(traces, pa.string())}))
        con.execute("CREATE OR REPLACE TEMP TABLE _touched AS SELECT trace_id FROM _shard_traces")
        restrict_lake(con, data, lake_files)
        con.execute("SET VARIABLE spanrl_lake_now_ns = (SELECT $v::BIGINT)", {"v": lake_now_ns})
        setup = register_stage2(con, cfg, materialize=True, rules=rules, readable=builder_readable(data))
        run_steps(con, TRANSITION_STEPS, materialize=True,
                  generated={"transitions": lambda: (builder_transitions_sql(cfg), None)})
        n = write_segment(con, Path(folder), sources)
        traces_n = one(con, "SELECT count(*) AS n FROM _trace_rollouts")["n"]
        return {"rollouts": n, "traces": traces_n, "conventions": setup.conventions or []}
    finally:
        con.close()


def check_shards(con: duckdb.DuckDBPyConnection, folders: list[Path]) -> None:
    """ShardConflict when a rollout or a response id is in two shards' segments."""
    found = one(con, read_sql("shards/shard_conflicts"),
                {"rollouts": [str(f / "rollouts.parquet") for f in folders],
                 "responses": [str(f / "_responses.parquet") for f in folders]})
    if found["rollouts"] or found["responses"]:
        raise ShardConflict(f"{found['rollouts']} rollout(s) and {found['responses']} response id(s) span shards")


def write_global_feedback(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, folders: list[Path], tmp: Path) -> None:
    """The build's feedback tables over every shard: each feedback row resolved against all shards'
    rollouts, trace rollouts and response ids, as one process resolves it over the whole lake."""
    from spanrl.transitions.feedback import load_feedback
    from spanrl.transitions.rollouts import PRIORS, set_variables

    con.execute(read_sql("rollouts/macros"))
    set_variables(con, cfg)
    load_feedback(con, cfg.data)

    def files(name: str) -> str:
        return sql_literal([str(f / f"{name}.parquet") for f in folders])

    con.execute(f"CREATE OR REPLACE TEMP VIEW _span_tree AS SELECT DISTINCT rollout_id FROM read_parquet({files('rollouts')})")
    con.execute(f"CREATE OR REPLACE TEMP VIEW _trace_rollouts AS SELECT trace_id, rollout_id "
                f"FROM read_parquet({files('_traces')})")
    con.execute(f"CREATE OR REPLACE TEMP VIEW _rollout_calls AS SELECT response_id, trace_id, span_id, rollout_id "
                f"FROM read_parquet({files('_responses')})")
    for name, columns in PRIORS.items():
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")
    run_steps(con, [s for s in STAGE2_STEPS if s.creates == "_feedback_rewards"], materialize=True)
    for name in ("feedback_rewards", "_feedback_detail"):
        con.execute(f"COPY ({read_sql('segments/' + name)}) TO {sql_literal(tmp / (name + '.parquet'))} (FORMAT parquet)")


def write_shards(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Any, tmp: Path, build_id: str,
                 state: dict[str, Any], shards: list[list[str]], lake_files: list[str]) -> None:
    """Into the draft build folder ``tmp``: one segment per shard (Ray tasks) and the build's global
    feedback tables; ``state['segments']`` / ``state['global']`` and the plan's counts updated. Raises
    ShardConflict (nothing recorded) when a rollout or response id spans shards."""
    from spanrl.ingest.lake import LLM_CONVENTIONS
    from spanrl.workers import worker_pool

    now_ns = one(con, "SELECT greatest(max(end_ns), max(epoch_ns(ingested_at))) AS n FROM spans")["n"]
    segs = [f"{build_id}-{k:02d}" for k in range(len(shards))]
    calls = [(cfg, rules, traces, str(tmp / seg), now_ns, lake_files)
             for seg, traces in zip(segs, shards, strict=True)]
    with worker_pool(cfg.workers) as run:
        results = run(build_shard, calls)
    folders = [tmp / seg for seg in segs]
    check_shards(con, folders)
    for seg, r in zip(segs, results, strict=True):
        if r["rollouts"] or r["traces"]:
            state["segments"][seg] = f"{build_id}/{seg}"
    write_global_feedback(con, cfg, folders, tmp)
    state["global"] = {"feedback_rewards": f"{build_id}/feedback_rewards.parquet",
                       "_feedback_detail": f"{build_id}/_feedback_detail.parquet"}
    used = {c for r in results for c in r["conventions"]}
    plan.conventions = [c for c in LLM_CONVENTIONS if c in used] + sorted(used - set(LLM_CONVENTIONS))
    plan.traces = sum(r["traces"] for r in results)
    plan.segments = {"written": len(segs), "rewritten": 0, "reused": 0, "merged": 0, "shards": len(segs)}
