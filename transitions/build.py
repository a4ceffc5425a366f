"""Stage 2 of ``spanrl ingest``: trace lake -> stage-2 tables -> transition snapshot (docs/transitions.md).

Reads like the steps it takes: plan (which traces must be recomputed: all of them the first time,
after ``--rebuild`` or when the config or the code changed; else what the night touched,
``incremental.py``) -> restrict the lake to those traces -> register the rollout/reward SQL as
tables -> transition rows with their returns -> write them as one new segment, rewrite the older
segments that held a recomputed trace, reference the rest (``tables.py``) -> the snapshot: hard
links of every segment's rows, per-rollout digests and the advantages table; skipped when its
content equals LATEST's (``snapshot.py``). A snapshot holds every complete rollout of the lake, and
its content hash is the one a from-scratch build of the same lake and config gives
(docs/incremental.md).

Test-only crash and hold points (``locked``, ``registered``, ``rows``, ``part``, ``before_commit``,
``after_commit``; ``ingest.lakeio.crash_point``) show that a crash never leaves a visible partial snapshot.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb

from spanrl.errors import stops_on_resource_trouble
from spanrl.ingest.lake import (  # stage 1's API
    CALL_RELATIONS,
    crash_point,
    lake_lock,
)
from spanrl.layout import lake_dir
from spanrl.sqlfiles import NO_AUTO_CHECKPOINT, one, parquet_rows, rows, sql_literal
from spanrl.transitions import quarantine
from spanrl.transitions.air import load_air_rules, rules_as_dicts
from spanrl.transitions.config import BuildConfig
from spanrl.transitions.connect import builder_readable, open_lake, segment_sources
from spanrl.transitions.credit import (
    ADVANTAGE_COLUMNS,
    EPS,
    advantage_params,
    builder_transitions_sql,
)
from spanrl.transitions.incremental import (
    MAX_CLOSURE_ROUNDS,
    Plan,
    files_of_touched,
    fill_priors,
    joined_older,
    lake_clocks,
    plan_touched,
    register_priors,
    restrict_lake,
)
from spanrl.transitions.pipeline import SNAPSHOT_STEPS, TRANSITION_STEPS, run_steps
from spanrl.transitions.rollouts import register_stage2, set_variables
from spanrl.transitions.snapshot import (
    clean_stale_drafts,
    hash_content,
    latest_manifest,
    new_snapshot_id,
    open_snapshot,
    transitions_dir,
)
from spanrl.transitions.sqlfiles import read_sql
from spanrl.transitions.summary import BuildResult, collect_stats, print_summary  # noqa: F401  (re-exported)
from spanrl.transitions.tables import (
    STATE_FORMAT,
    canonical,
    inventory,
    load_state,
    merge_segments,
    publish_build,
    register_build_views,
    reuse_key,
    rewrite_touched,
    tables_dir,
    write_segment,
)


def build_transitions(cfg: BuildConfig, con: duckdb.DuckDBPyConnection | None = None) -> BuildResult:
    """Bring the stage-2 tables and the snapshot up to date with ``cfg.data``'s lake (``con``: a
    prepared lake, e.g. a test's hand-built tables, which is always built in full).

    Holds the lake's writer lock (``lake_lock``): a second builder, or a builder beside a stage-1
    ingest, is refused (exit 2) instead of reading a lake half published or racing for LATEST. A build
    the machine stops (memory, disk: ``resource_trouble``) publishes nothing and says so (exit 2)."""
    with lake_lock(lake_dir(cfg.data)), stops_on_resource_trouble(
            "stage 2 (lake -> transition snapshot)", cfg.memory_limit, cfg.data,
            "The lake keeps every span and the last snapshot is unchanged: the next `spanrl ingest` or `spanrl "
            "transitions build` builds what this one did not."):
        crash_point("locked")
        return _build(cfg, con)


# Config keys that only say how a run goes, not which rows it makes: a change in any other key means
# every transition may differ (a full rebuild), and the summary says so.
OPERATIONAL_KEYS = frozenset({"data", "input", "no_transitions", "memory_limit", "threads", "workers", "config_file",
                              "rebuild", "keep_days", "keep_snapshots"})


def _build(cfg: BuildConfig, given: duckdb.DuckDBPyConnection | None) -> BuildResult:
    data = Path(cfg.data)
    clean_stale_drafts(data)  # temp folders of builders killed over an hour ago (never visible)
    con = given if given is not None else open_lake(cfg)
    try:
        rules = load_air_rules(cfg.file)  # the spanrl.toml the config came from, parsed once
        config = {**cfg.to_dict(), "air_rules": rules_as_dicts(rules), "advantage_eps": EPS}
        row_config = {k: v for k, v in config.items() if k not in OPERATIONAL_KEYS}
        key = reuse_key(row_config, cfg.file.get("conventions"))
        state, inv = load_state(data), inventory(data)
        plan, clocks = _plan(con, cfg, state, inv, key, row_config, given is not None)
        build_id = new_snapshot_id()
        new_state = {"format": STATE_FORMAT, "build_id": build_id, "config": row_config, "reuse_key": key,
                     "segments": {} if plan.full else dict((state or {}).get("segments", {})),
                     "global": {} if plan.full else dict((state or {}).get("global", {})),
                     "lake": {f: [*v[:2], clocks.get(f)] for f, v in inv["lake"].items()},
                     "feedback": inv["feedback"]}
        if plan.full or plan.traces or _files_moved(state, inv):
            t0 = time.perf_counter()
            if not _sharded(con, cfg, rules, plan, build_id, new_state, sorted(inv["lake"])):
                con = _rows(con, cfg, rules, plan, build_id, new_state, set(inv["lake"]), given is not None)
            plan.seconds["rows"] = round(time.perf_counter() - t0, 3)
        else:
            new_state = state or new_state
            plan.segments = {"written": 0, "rewritten": 0, "reused": len(new_state.get("segments", {}))}
        config["stage2_build"] = new_state.get("build_id")
        return _snapshot(cfg, new_state, config, plan)
    finally:
        if given is None:
            con.close()


def _sharded(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Plan, build_id: str,
             state: dict[str, Any], lake_files: list[str]) -> bool:
    """``--workers N``: stage 2 per shard of connected traces as Ray tasks (shards.py), the whole lake on a
    full build, the traces the plan touched on an incremental night; False (the caller computes in one
    process) when they do not split or the shards say so (the plan's reason then says why)."""
    if (cfg.workers or 1) < 2:
        return False
    from spanrl.transitions.shards import ShardConflict, plan_shards, write_night_shards, write_shards

    con.execute(read_sql("rollouts/macros"))
    set_variables(con, cfg)
    if not plan.full:  # the driver's lake: the touched traces (what _compute's first round reads)
        plan.read_files = files_of_touched(con, plan.new_files, set(lake_files))
        restrict_lake(con, Path(cfg.data), plan.read_files, plan.new_files)
    shards = plan_shards(con, int(cfg.workers or 1), stored=not plan.full)
    if not shards:
        return False
    write = write_shards if plan.full else write_night_shards
    before = {k: dict(state[k]) for k in ("segments", "global")}
    try:
        publish_build(build_id, cfg.data,
                      lambda tmp: write(con, cfg, rules, plan, tmp, build_id, state, shards, lake_files), state)
    except ShardConflict as exc:
        state.update(before)
        plan.reason = "; ".join(filter(None, [plan.reason, f"in one process: {exc}"]))
        return False
    return True


def _files_moved(state: dict[str, Any] | None, inv: dict[str, Any]) -> bool:
    """Lake or feedback files differ from the state's even though no trace needs recomputing (a
    rewritten file with the same spans): the state must still record today's files."""
    if not state:
        return True
    return any({k: list(v[:2]) for k, v in (state.get(key) or {}).items()} != inv[key] for key in ("lake", "feedback"))


def _plan(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, state: dict[str, Any] | None, inv: dict[str, Any],
          key: str, row_config: dict[str, Any], given: bool) -> tuple[Plan, dict[str, int]]:
    """Full or incremental, and why; the clock of every lake span file (old ones from the state)."""
    data = Path(cfg.data)
    span_files = [f for f in inv["lake"] if f.startswith("lake/spans/")]
    old = (state or {}).get("lake") or {}
    reason = ("a prepared connection" if given else "--rebuild" if cfg.rebuild
              else "first build" if not state else "older stage-2 layout" if state.get("stale_format")
              else f"retrying {state['quarantine']} quarantined trace(s)" if state.get("quarantine")
              else "changed: " + ", ".join(_config_diff(state.get("config") or {}, row_config, state))
              if state.get("reuse_key") != key else "")
    known = {f: v[2] for f, v in old.items() if len(v) > 2 and v[2] is not None and list(v[:2]) == inv["lake"].get(f)}
    clocks = {**known, **lake_clocks(con, data, [f for f in span_files if f not in known])} if not given else {}
    if reason:
        return Plan(full=True, reason=reason), clocks
    before = {f: list(v[:2]) for f, v in old.items()}
    new_files = sorted(f for f, v in inv["lake"].items() if before.get(f) != v)
    gone = sorted(f for f in before if inv["lake"].get(f) != before[f])
    fb_before = {f: list(v) for f, v in (state.get("feedback") or {}).items()}
    changed_fb = sorted({f for f, v in inv["feedback"].items() if fb_before.get(f) != v}
                        | {f for f in fb_before if f not in inv["feedback"]})
    register_priors(con, data, state)
    from spanrl.transitions.feedback import load_feedback

    con.execute(read_sql("rollouts/macros"))  # the feedback rows' value and time parsing
    set_variables(con, cfg)
    load_feedback(con, data)
    plan = plan_touched(con, data, new_files, gone, changed_fb)
    con.execute("SET VARIABLE spanrl_lake_now_ns = (SELECT $v::BIGINT)", {"v": max(clocks.values(), default=None)})
    return plan, clocks


def _config_diff(old: dict[str, Any], new: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """What differs, in words: the row-config keys, else the code (this release or its SQL)."""
    if not state.get("reuse_key"):
        return ["tables written by another tool (no reuse key)"]
    keys = sorted(k for k in set(old) | set(new) if canonical(old.get(k)) != canonical(new.get(k)))
    return [f"config {', '.join(keys)}"] if keys else ["the stage-2 code (spanrl release, SQL or [[conventions]])"]


def _compute(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Plan,
             existing: set[str]) -> None:
    """Stage 2 over the plan's traces (every trace when full), as temp tables on ``con``, closing
    over rollouts a recomputed trace turns out to share with older traces (``existing``: the lake
    files present now)."""
    data = Path(cfg.data)
    for round_ in range(1, MAX_CLOSURE_ROUNDS + 1):
        if not plan.full:
            fill_priors(con)
            plan.read_files = files_of_touched(con, plan.new_files, existing)
            restrict_lake(con, data, plan.read_files, plan.new_files)
            for name in CALL_RELATIONS:  # made again from the restricted spans
                con.execute(f"DROP TABLE IF EXISTS temp.{name}")
        plan.conventions = register_stage2(con, cfg, materialize=True, rules=rules,
                                           readable=builder_readable(data)).conventions
        crash_point("registered")
        quarantine.injected_failure(con)
        plan.rounds = round_
        if plan.full or joined_older(con) == 0:
            break
    plan.traces = one(con, f"SELECT count(*) AS n FROM {'_trace_rollouts' if plan.full else '_touched'}")["n"]
    run_steps(con, TRANSITION_STEPS, materialize=True,
              generated={"transitions": lambda: (builder_transitions_sql(cfg), None)})


def _rows(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, rules: list, plan: Plan, build_id: str,
          state: dict[str, Any], lake_files: set[str], prepared: bool) -> duckdb.DuckDBPyConnection:
    """Stage 2's rows, written as the build's segments; the connection they were made on. A statement
    that fails on some traces' data quarantines them and the build runs again without them (quarantine.py)."""
    def probe(c: duckdb.DuckDBPyConnection) -> None:  # what a build computes and writes, nothing written
        _compute(c, cfg, rules, Plan(full=True), lake_files)
        for select in segment_sources(Path(cfg.data), None, build_id).values():
            c.execute(f"SELECT count(*) FROM ({select})").fetchall()

    try:
        _compute(con, cfg, rules, plan, lake_files)
    except Exception as exc:
        if prepared or not quarantine.is_data_error(exc):
            raise
        con.close()
        con = quarantine.rebuild_without(exc, plan, state, lambda: open_lake(cfg), probe,
                                         lambda c: _compute(c, cfg, rules, plan, lake_files), Path(cfg.data))
    crash_point("rows")
    publish_build(build_id, cfg.data, lambda tmp: _write_segments(con, Path(cfg.data), tmp, build_id, plan, state), state)
    return con


def _write_segments(con: duckdb.DuckDBPyConnection, data: Path, tmp: Path, build_id: str, plan: Plan,
                    state: dict[str, Any]) -> None:
    """Into the draft build folder ``tmp``: the recomputed traces as segment ``build_id``, each older
    segment that held one of them minus those rows; the whole-lake feedback tables. Updates
    ``state['segments']`` / ``state['global']`` to what the new build references."""
    before = set(state["segments"])
    rewritten = rewrite_touched(con, data, tmp, build_id, state) if not plan.full else set()
    n = write_segment(con, tmp / build_id, segment_sources(data, None if plan.full else plan.read_files, build_id))
    if n or one(con, "SELECT count(*) AS n FROM _trace_rollouts")["n"]:
        state["segments"][build_id] = f"{build_id}/{build_id}"
    merged = merge_segments(con, data, tmp, build_id, state)
    for name in ("feedback_rewards", "_feedback_detail"):
        con.execute(f"COPY ({read_sql('segments/' + name)}) TO {sql_literal(tmp / (name + '.parquet'))} (FORMAT parquet)")
    quarantine.write_table(con, tmp / "quarantine.parquet", plan.quarantine, build_id)
    state["global"] = {"feedback_rewards": f"{build_id}/feedback_rewards.parquet",
                       "_feedback_detail": f"{build_id}/_feedback_detail.parquet",
                       "quarantine": f"{build_id}/quarantine.parquet"}
    state["quarantine"] = len(plan.quarantine)  # the next build is a full one while this is not 0
    plan.segments = {"written": 1, "rewritten": len(rewritten), "reused": len(before - rewritten), "merged": merged}
    crash_point("part")


def _snapshot(cfg: BuildConfig, state: dict[str, Any], config: dict[str, Any], plan: Plan) -> BuildResult:
    """The snapshot of every segment's rows: unchanged when its content hash equals LATEST's."""
    data = Path(cfg.data)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(NO_AUTO_CHECKPOINT)
        register_build_views(con, data, state)
        run_steps(con, SNAPSHOT_STEPS, materialize=True, params=advantage_params(cfg.advantage, EPS))
        stats = collect_stats(con, plan, cfg.settle_s, state)
        latest = latest_manifest(data)
        stats["config_changed"] = changed_row_config(latest, config)
        stats["include_eval"] = cfg.include_eval  # what the summary says about rollouts_eval
        n_rows = stats["rows"]
        if n_rows == 0:
            return BuildResult("empty", None, None, 0, stats)
        digest = hash_content(con, "_digests", "_rollout_adv", air=True)
        if latest and latest.get("content_hash") == digest:
            sid = latest["snapshot_id"]
            return BuildResult("unchanged", sid, transitions_dir(data) / sid, n_rows, stats)
        sources = sorted({r["f"] for r in rows(con, "SELECT DISTINCT unnest(source_files) AS f FROM _digests")}
                         | {str(data / f) for f in state.get("feedback") or {}})
        with open_snapshot(data) as draft:
            for seg, folder in sorted(state["segments"].items()):
                part = tables_dir(data) / folder / "transitions.parquet"
                if part.is_file() and parquet_rows(con, part):
                    draft.link_part(part, seg)
            draft.write_index(con, "SELECT rollout_id, task_id, r, n_rows, digest FROM _digests",
                              f"SELECT {', '.join(ADVANTAGE_COLUMNS)} FROM _rollout_adv")
            crash_point("before_commit")
            path = draft.commit(config, sources, stats, content_hash=digest)
            crash_point("after_commit")
            return BuildResult("written", draft.snapshot_id, path, n_rows, stats)
    finally:
        con.close()


def changed_row_config(latest: dict[str, Any] | None, config: dict[str, Any]) -> list[str]:
    """The row-shaping config keys whose value differs from the latest snapshot's (sorted)."""
    if not latest or not latest.get("config"):
        return []
    old = latest["config"]
    keys = (set(old) | set(config)) - OPERATIONAL_KEYS - {"stage2_build"}
    return sorted(k for k in keys if old.get(k) != config.get(k))
