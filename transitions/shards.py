"""Stage 2 over shards of connected traces, as Ray tasks (``--workers N``, docs/scale.md).

A shard must hold every trace its rows depend on, or a rollout, an LLM call or a feedback row would be
split and the hash would differ from one process. So the driver first labels the traces it recomputes
with their connected component over the keys that tie traces together in stage 2 (``sql/shards/
_trace_keys.sql``: rollout keys, response ids, the process of a multi-instrumentation service; on an
incremental night also the stored rollout of each touched trace, ``stored_rollout_keys.sql``), then
packs whole components into N shards of about equal spans. Each task runs the very steps a build runs
(``register_stage2`` + ``TRANSITION_STEPS``) on its shard's spans, with the driver's lake clock, and
writes one segment into the build's draft folder. The driver then checks that no rollout and no
response id landed in two shards (``shard_conflicts.sql``; if one did, the caller redoes the build in
one process), resolves the feedback files against every segment (the build's global feedback tables),
and the snapshot is made from the segments as after any build: population statistics and the content
hash over all of them, identical to a one-process build (tests/transitions/test_shards.py).

A full build shards every trace of the lake (``write_shards``). An incremental night shards the traces
its plan touched (``write_night_shards``): each worker computes them as the one-process night does,
with the priors of every trace no shard recomputes (``_touched`` is the whole night's set; ``spans``
and ``logs`` hold the shard's traces only: ``LAKE_STEPS`` over ``_shard_traces``); a closure round that would
add traces, or a shard's data error (quarantine), sends the night back to one process. The driver
rewrites the older segments that held a recomputed trace or rollout and merges segments as a
one-process night does.

On a local root, workers read the lake and write the draft at the driver's paths: a local Ray cluster,
or nodes that share the data root's file system. On an S3 root they share nothing but the store
(``remote_shard``, spanrl/remote_tasks.py): the driver names the files each shard reads by their
objects, the task fetches them into a temp folder of its own and uploads its segment, and the driver
fetches the segment into its draft by key.
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
from spanrl.transitions.pipeline import PUBLISH_STEPS, STAGE2_STEPS, TRANSITION_STEPS, run_steps
from spanrl.transitions.sqlfiles import read_sql

MAX_ROUNDS = 50  # label propagation rounds (each halves no distance guarantee, but real key graphs are shallow)


class ShardConflict(Exception):
    """Rows of one rollout or one LLM call ended in two shards: the build must run in one process."""


def plan_shards(con: duckdb.DuckDBPyConnection, shards: int, stored: bool = False) -> list[list[str]]:
    """The trace ids of ``spans`` (the lake, or an incremental night's touched traces) in at most
    ``shards`` lists, no connected component split; fewer than two lists when they cannot be split
    (one component, or one shard asked). ``stored``: tie the traces of each stored rollout too."""
    from spanrl.workers import split_evenly

    con.execute("CREATE OR REPLACE TEMP TABLE _trace_keys AS " + read_sql("shards/_trace_keys"))
    if stored:
        con.execute("INSERT INTO _trace_keys " + read_sql("shards/stored_rollout_keys"))
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
                lake_files: list[str], night: dict[str, Any] | None = None) -> dict[str, Any]:
    """A worker's stage 2 (a Ray task): the shard's traces computed as a build computes them, on the
    builder's connection (``connect.open_lake``), written as one segment into ``folder``
    (``connect.segment_sources``); returns its rollouts, traces and the conventions it read.

    ``night`` (an incremental night): ``touched`` (every trace the night recomputes, in any shard),
    ``prior`` (the last build's segments and global files) and ``new_files``. The shard is computed as
    the one-process night computes it: ``_touched`` is the whole night's set (the ``_prior_*`` rows are
    those of traces no shard recomputes), the lake the shard's traces in the files they live in. Returns
    ``fallback`` (a reason) instead of a segment when the night must run in one process: a closure round
    added traces, or a statement failed on the shard's data (one process quarantines)."""
    from spanrl.transitions import quarantine
    from spanrl.transitions.credit import builder_transitions_sql
    from spanrl.transitions.incremental import (
        close_over_rollouts,
        files_of_touched,
        fill_priors,
        joined_older,
        register_priors,
        restrict_lake,
    )
    from spanrl.transitions.rollouts import register_stage2
    from spanrl.transitions.tables import write_segment

    data = Path(cfg.data)
    if os.environ.get("SPANRL_TEST_CRASH_AT") == "shard" and folder.endswith("-00"):  # tests: a worker dies
        os._exit(137)
    con = open_lake(cfg)
    try:
        con.register("_shard_traces", pa.table({"trace_id": pa.array(traces, pa.string())}))
        if night:
            register_priors(con, data, night["prior"])
            con.register("_night_traces", pa.table({"trace_id": pa.array(night["touched"], pa.string())}))
        if night:  # the driver's plan, already closed: its traces are the seeds a closure round appends to
            con.execute("CREATE OR REPLACE TEMP TABLE _seeds AS SELECT trace_id, 'the night''s plan' AS why "
                        "FROM _night_traces")
            close_over_rollouts(con, stored=False)
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE _touched AS SELECT trace_id FROM _shard_traces")
        read = None
        if night:
            fill_priors(con)
            read = files_of_touched(con, night["new_files"], set(lake_files), among="_shard_traces")
            restrict_lake(con, data, read, traces="SELECT trace_id FROM _shard_traces")
        else:
            restrict_lake(con, data, lake_files)
        con.execute("SET VARIABLE spanrl_lake_now_ns = (SELECT $v::BIGINT)", {"v": lake_now_ns})
        try:
            setup = register_stage2(con, cfg, materialize=True, rules=rules, readable=builder_readable(data))
            if night:
                quarantine.injected_failure(con)
                if added := joined_older(con):
                    return {"fallback": f"a closure round added {added} trace(s) to a shard"}
            run_steps(con, TRANSITION_STEPS, materialize=True,
                      generated={"transitions": lambda: (builder_transitions_sql(cfg), None)})
            n = write_segment(con, Path(folder), segment_sources(data, read, Path(folder).name))
        except Exception as exc:
            if not quarantine.is_data_error(exc):
                raise
            return {"fallback": "stage 2 failed on a shard's data (quarantined in one process)"}
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
    """The build's feedback tables over the segments in ``folders`` (a full build's shards; every segment
    of an incremental night's new state): each feedback row resolved against all their rollouts, trace
    rollouts and response ids, as one process resolves it over the whole lake."""
    from spanrl.transitions.feedback import load_feedback
    from spanrl.transitions.rollouts import PRIORS, set_variables

    con.execute(read_sql("rollouts/macros"))
    set_variables(con, cfg)
    load_feedback(con, cfg.data)

    def files(name: str) -> str:  # (a segment of another tool may lack the bookkeeping files)
        return sql_literal([str(f / f"{name}.parquet") for f in folders if (f / f"{name}.parquet").is_file()])

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


def _run_shards(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, tmp: Path, build_id: str,
                shards: list[list[str]], lake_files: list[str], now_ns: int | None,
                night: dict[str, Any] | None) -> tuple[list[str], list[dict[str, Any]]]:
    """Each shard as a Ray task writing segment ``<build_id>-NN`` into ``tmp``: the segment ids and the
    tasks' results. ShardConflict when a task says the build must run in one process, or when a rollout
    or response id spans shards."""
    from spanrl.remote_tasks import take, writer_store
    from spanrl.workers import worker_pool

    segs = [f"{build_id}-{k:02d}" for k in range(len(shards))]
    store = writer_store(cfg.data)
    if store is None:  # a shared disk: the tasks read the lake and write the draft at the driver's paths
        calls = [(cfg, rules, traces, str(tmp / seg), now_ns, lake_files, night)
                 for seg, traces in zip(segs, shards, strict=True)]
        fn: Any = build_shard
    else:
        fn, calls = remote_shard, _remote_calls(con, cfg, rules, store, segs, shards, lake_files, now_ns, night)
    with worker_pool(cfg.workers) as run:
        results = run(fn, calls)
    if reasons := sorted({r["fallback"] for r in results if r.get("fallback")}):
        raise ShardConflict("; ".join(reasons))
    for seg, r in zip(segs, results, strict=True):
        if store is not None:
            take(cfg.data, r.pop("objects"), tmp / seg)
    check_shards(con, [tmp / seg for seg in segs])
    return segs, results


def _remote_calls(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, store: dict[str, str],
                  segs: list[str], shards: list[list[str]], lake_files: list[str], now_ns: int | None,
                  night: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    """Each shard's ``remote_shard`` call on an S3 root: the files it reads, as objects (``share``): the
    span files that hold its traces (a night: the files ``files_of_touched`` picks for them) and every
    log file, the feedback files, a night's stored bookkeeping (``_p_*``); the config file's bytes."""
    from spanrl.config import find_config_file
    from spanrl.remote_tasks import share
    from spanrl.transitions.feedback import feedback_files
    from spanrl.transitions.incremental import files_of_touched
    from spanrl.transitions.tables import global_file, segment_files

    data = Path(cfg.data)
    root = str(data.resolve())
    common = [p.resolve().relative_to(root).as_posix() for p in feedback_files(data)]
    if night:
        prior = night["prior"]
        common += [p.resolve().relative_to(root).as_posix() for t in ("_traces", "rollouts", "_responses")
                   for p in segment_files(data, prior, t)]
        if fb := global_file(data, prior, "_feedback_detail"):
            common.append(fb.resolve().relative_to(root).as_posix())
    logs = [f for f in lake_files if f.startswith("lake/logs/")]
    spans = [f"{root}/{f}" for f in lake_files if f.startswith("lake/spans/")]
    reads = []
    for traces in shards:
        con.register("_shard_traces", pa.table({"trace_id": pa.array(traces, pa.string())}))
        if night:
            reads.append(files_of_touched(con, night["new_files"], set(lake_files), among="_shard_traces"))
        else:
            held = rows(con, read_sql("shards/shard_span_files"), {"files": spans, "traces": traces}) if spans else []
            reads.append(sorted({r["filename"][len(root) + 1:] for r in held} | set(logs)))
        con.unregister("_shard_traces")
    objects = share(data, set(common).union(*reads))
    config = find_config_file(data, cfg.config_file)
    text = config.read_bytes() if config is not None else b""
    return [(store, cfg, rules, traces, seg, now_ns, read, night,
             {rel: objects[rel] for rel in [*common, *read]}, text, os.getpid())
            for seg, traces, read in zip(segs, shards, reads, strict=True)]


def remote_shard(store: dict[str, str], cfg: BuildConfig, rules: list, traces: list[str], seg: str,
                 lake_now_ns: int | None, lake_files: list[str], night: dict[str, Any] | None,
                 files: dict[str, list[Any]], config: bytes, driver_pid: int) -> dict[str, Any]:
    """A shard's task on an S3 root (a Ray task): ``files`` fetched from the store into a temp root of
    its own, ``build_shard`` there, its segment uploaded; returns ``build_shard``'s result with the
    segment's ``objects`` ({file name: [sha256, size]})."""
    from dataclasses import replace

    from spanrl.remote_tasks import drop, fetch_files, forbid_root_for_tests, task_folder, upload_folder
    from spanrl.transitions.tables import tables_dir

    forbid_root_for_tests(driver_pid)
    work = task_folder()
    try:
        fetch_files(store, files, work / "root")
        (work / "spanrl.toml").write_bytes(config)  # the driver's config file (empty: none)
        mine = replace(cfg, data=work / "root", config_file=work / "spanrl.toml")
        folder = tables_dir(mine.data) / seg  # where the builder's locked connection may write
        result = build_shard(mine, rules, traces, str(folder), lake_now_ns, lake_files, night)
        if not result.get("fallback"):
            result["objects"] = upload_folder(store, folder)
        return result
    finally:
        drop(work)


def _record(state: dict[str, Any], plan: Any, build_id: str, segs: list[str], results: list[dict[str, Any]]) -> None:
    """The shards' segments that hold rows into ``state['segments']``; the conventions they read into the plan."""
    from spanrl.ingest.lake import LLM_CONVENTIONS

    for seg, r in zip(segs, results, strict=True):
        if r["rollouts"] or r["traces"]:
            state["segments"][seg] = f"{build_id}/{seg}"
    used = {c for r in results for c in r["conventions"]}
    plan.conventions = [c for c in LLM_CONVENTIONS if c in used] + sorted(used - set(LLM_CONVENTIONS))


def write_shards(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Any, tmp: Path, build_id: str,
                 state: dict[str, Any], shards: list[list[str]], lake_files: list[str]) -> None:
    """A full build into the draft build folder ``tmp``: one segment per shard (Ray tasks) and the
    build's global feedback tables; ``state['segments']`` / ``state['global']`` and the plan's counts
    updated. Raises ShardConflict (nothing recorded) when the build must run in one process."""
    now_ns = one(con, "SELECT greatest(max(end_ns), max(epoch_ns(ingested_at))) AS n FROM spans")["n"]
    segs, results = _run_shards(con, cfg, rules, tmp, build_id, shards, lake_files, now_ns, None)
    _record(state, plan, build_id, segs, results)
    write_global_feedback(con, cfg, [tmp / seg for seg in segs], tmp)
    state["global"] = {"feedback_rewards": f"{build_id}/feedback_rewards.parquet",
                       "_feedback_detail": f"{build_id}/_feedback_detail.parquet"}
    plan.traces = sum(r["traces"] for r in results)
    plan.segments = {"written": len(segs), "rewritten": 0, "reused": 0, "merged": 0, "shards": len(segs)}


def write_night_shards(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Any, tmp: Path,
                       build_id: str, state: dict[str, Any], shards: list[list[str]], lake_files: list[str]) -> None:
    """An incremental night into the draft build folder ``tmp``, as ``build._write_segments`` writes a
    one-process night: one segment per shard (Ray tasks, each with the night's whole ``_touched`` and the
    driver's lake clock), each older segment that held a recomputed trace or rollout rewritten without
    those rows, segments merged, the feedback tables over every segment of the new state and an empty
    quarantine. ``con``: the driver's, with the night's plan (``_touched``, ``_p_*``). Raises
    ShardConflict (nothing recorded) when the night must run in one process."""
    from spanrl.transitions import quarantine
    from spanrl.transitions.tables import merge_segments, rewrite_touched, tables_dir

    data = Path(cfg.data)
    touched = [r["trace_id"] for r in rows(con, "SELECT trace_id FROM _touched ORDER BY trace_id")]
    night = {"touched": touched, "new_files": plan.new_files,
             "prior": {"segments": dict(state["segments"]), "global": dict(state["global"])}}
    now_ns = one(con, "SELECT getvariable('spanrl_lake_now_ns') AS n")["n"]
    segs, results = _run_shards(con, cfg, rules, tmp, build_id, shards, lake_files, now_ns, night)
    before = set(state["segments"])
    # the rollouts the shards made, under the name _touched_rollouts.sql reads (rewrite_touched's REWRITE_STEPS)
    run_steps(con, [s for s in PUBLISH_STEPS if s.creates == "rollouts"], materialize=False,
              files={"rollouts": [str(tmp / seg / "rollouts.parquet") for seg in segs]})
    rewritten = rewrite_touched(con, data, tmp, build_id, state)
    _record(state, plan, build_id, segs, results)
    merged = merge_segments(con, data, tmp, build_id, state)
    root = tables_dir(data)
    folders = [tmp / rest if head == build_id else root / head / rest
               for head, _, rest in (f.partition("/") for f in state["segments"].values())]
    write_global_feedback(con, cfg, folders, tmp)
    quarantine.write_table(con, tmp / "quarantine.parquet", [], build_id)
    state["global"] = {"feedback_rewards": f"{build_id}/feedback_rewards.parquet",
                       "_feedback_detail": f"{build_id}/_feedback_detail.parquet",
                       "quarantine": f"{build_id}/quarantine.parquet"}
    state["quarantine"] = 0
    plan.traces = len(touched)
    plan.segments = {"written": len(segs), "rewritten": len(rewritten), "reused": len(before - rewritten),
                     "merged": merged, "shards": len(segs)}
