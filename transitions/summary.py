"""The stage-2 summary: numbers over every segment of a build (manifest ``stats``) and the table
``spanrl ingest`` prints. Each number is one small query over the stored tables (scalar columns
only), so the summary costs little however old the lake is."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from spanrl.sqlfiles import one, rows
from spanrl.transitions.credit import advantage_stats
from spanrl.transitions.incremental import Plan
from spanrl.transitions.sqlfiles import read_sql


@dataclass
class BuildResult:
    """What one stage-2 run did. status: written | unchanged | empty."""

    status: str
    snapshot_id: str | None
    path: Path | None
    rows: int
    stats: dict[str, Any] = field(default_factory=dict)




def collect_stats(con: duckdb.DuckDBPyConnection, plan: Plan, settle_s: float | None = None,
                  state: dict[str, Any] | None = None) -> dict[str, Any]:
    """``con`` has views over the whole build: rollouts, rewards, _traces, _feedback_detail,
    coverage, llm_calls and the snapshot's ``_digests`` / ``_rollout_rewards``; ``settle_s`` and the
    build ``state`` (its lake clock) say why rollouts still wait (``waiting_stats``)."""
    pairs = lambda sql: {str(r["k"]): r["n"] for r in rows(con, sql)}  # noqa: E731
    r = one(con, read_sql("summary/rollout_counts"))
    t = one(con, read_sql("summary/snapshot_counts"))
    tr = {k: int(v) for k, v in one(con, read_sql("summary/trace_repairs")).items()}
    times = one(con, "SELECT min(started_ns) AS lo, max(ended_ns) AS hi FROM rollouts SEMI JOIN _digests USING (rollout_id)")
    unknown = [u["entry"] for u in rows(con, read_sql("summary/feedback_unknown"))]
    return {
        "rows": int(t["n_rows"]),
        **r,
        "rollouts": t["rollouts"], "tasks": t["tasks"],
        "reward": {"min": t["reward_min"], "max": t["reward_max"], "mean": t["reward_mean"], "std": t["reward_std"]},
        # orphans, agent repairs, restored prompts; calls recorded by several instrumentations, merged into one
        # row (llm_calls.merged_spans); calls with tool calls but no tool definitions (coverage.missing_tool_schema)
        **tr,
        "rewards_by_source": pairs("SELECT source AS k, count(*) AS n FROM rewards GROUP BY 1 ORDER BY 1"),
        "air_hits_by_rule": pairs("SELECT name AS k, count(*) AS n FROM rewards WHERE source = 'air' GROUP BY 1 ORDER BY 1"),
        "reward_mean_by_task": rows(con, read_sql("summary/reward_mean_by_task")),
        "feedback_unknown_keys": len(unknown),
        "feedback_unknown": unknown[:20],
        "min_time_ns": times["lo"], "max_time_ns": times["hi"],
        "llm_calls": one(con, "SELECT count(*) AS n FROM llm_calls")["n"],
        "llm_calls_cut": one(con, read_sql("summary/cut_replies"))["n"],
        "content_coverage": content_coverage(con),
        "unreadable_values": pairs(read_sql("summary/unreadable_values")),  # coverage.unreadable, by reason
        "advantage": advantage_stats(con),
        "stage2": plan_stats(plan),
        **waiting_stats(con, settle_s, state),
    }


def waiting_stats(con: duckdb.DuckDBPyConnection, settle_s: float | None,
                  state: dict[str, Any] | None) -> dict[str, Any]:
    """Why rollouts are not complete, so a build without a snapshot can say so: waiting for the
    settle window (until ``settles_at_ns``: the newest of them ends plus ``--settle``; the lake's
    clock, its newest span end or ingest time, must pass it), or holding a span whose parent never
    arrived (unanchored: no waiting helps). A rollout whose quiet time has passed is incomplete only
    for the second reason; one with an orphan span not re-attached is counted there too. Also the
    complete rollouts without any LLM call (no transitions from them)."""
    clocks = [v[2] for v in ((state or {}).get("lake") or {}).values() if len(v) > 2 and v[2] is not None]
    now_ns = max(clocks, default=None)
    settle_ns = int((settle_s if settle_s is not None else 600.0) * 1e9)
    return {**one(con, read_sql("summary/waiting"), {"now": now_ns, "settle": settle_ns}),
            "settle_s": settle_ns / 1e9, "lake_clock_ns": now_ns}


def plan_stats(plan: Plan) -> dict[str, Any]:
    return {"mode": "full" if plan.full else "incremental", "reason": plan.reason, "traces_recomputed": plan.traces,
            "why": plan.why, "new_lake_files": len(plan.new_files), "lake_files_gone": len(plan.gone_files),
            "closure_rounds": plan.rounds, "segments": plan.segments, "conventions": plan.conventions,
            "seconds": plan.seconds, "quarantined": len(plan.quarantine),
            "quarantine": [{k: q[k] for k in ("trace_id", "source_files", "error")} for q in plan.quarantine[:20]]}


MAX_KEYS = 40  # attribute keys listed per scope in the manifest (flattened messages can be hundreds)


def content_coverage(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per instrumentation scope: LLM calls without input / output content (the stored ``coverage``
    rows of every segment), with what their spans carried."""
    return [{**g, "attribute_keys": g["attribute_keys"][:MAX_KEYS]}
            for g in rows(con, read_sql("summary/content_coverage"))]


def _stage2_line(s: dict[str, Any]) -> str:
    st = s.get("stage2") or {}
    segs = st.get("segments") or {}
    kept = f"{segs.get('written', 0)} segment(s) written, {segs.get('rewritten', 0)} rewritten, {segs.get('reused', 0)} reused"
    if segs.get("merged"):
        kept += f", {segs['merged']} merged into one"
    if segs.get("shards"):
        kept += f" ({segs['shards']} shards on workers)"
    took = f" in {st['seconds']['rows']:.1f} s" if (st.get("seconds") or {}).get("rows") is not None else ""
    if st.get("mode") == "full":
        return f"full rebuild ({st.get('reason')}): {st.get('traces_recomputed', 0)} traces{took}; {kept}"
    why = ", ".join(f"{k} {v}" for k, v in (st.get("why") or {}).items()) or "nothing new"
    note = f" ({st['reason']})" if st.get("reason") else ""  # --workers N that fell back to one process
    return f"incremental{note}: {st.get('traces_recomputed', 0)} traces recomputed ({why}){took}; {kept}"


def print_summary(result: BuildResult) -> None:
    """The stage-2 summary table (rich): rollouts, calls, rewards, AIR, task means, snapshot."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    s = result.stats
    table = Table(title="transitions", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")

    def row(what: str, value: str) -> None:  # plain Text: task ids, scope names, "[[conventions]]" are not markup
        table.add_row(Text(what), Text(value))

    if s.get("stage2"):
        row("stage 2", _stage2_line(s))
        if s["stage2"].get("conventions"):  # the conventions some span of the build used (views.CONVENTION_PROBES)
            row("LLM-call conventions read", ", ".join(s["stage2"]["conventions"]))
        if s["stage2"].get("quarantined"):
            q = s["stage2"]["quarantine"][0]
            row("quarantined traces", f"{s['stage2']['quarantined']}: stage 2 failed on their data and built the "
                f"rest without them; the next build tries them again. First: {q['trace_id']} from "
                f"{', '.join(q['source_files']) or '?'}: {q['error'].splitlines()[0]} "
                "(spanrl sql \"select * from quarantine\")")
    row("rollouts complete / waiting", f"{s.get('rollouts_complete', 0)} / {s.get('rollouts_waiting', 0)}")
    row("rollouts in snapshot", f"{s.get('rollouts', 0)} ({s.get('tasks', 0)} tasks; "
        f"{s.get('rollouts_without_reward', 0)} without reward)")
    if s.get("rollouts_eval"):
        kept = "kept (--include-eval)" if s.get("include_eval") else "left out of the snapshot (--include-eval keeps them)"
        row("evaluation rollouts", f"{s['rollouts_eval']} (spanrl.rollout.purpose = eval): {kept}")
    row("LLM calls -> transitions", f"{s.get('llm_calls_complete', 0)} -> {result.rows}")
    row("LLM calls in the lake", str(s.get("llm_calls", 0)))
    row("rewards by source", _pairs(s.get("rewards_by_source", {})))
    row("AIR hits by rule", _pairs(s.get("air_hits_by_rule", {})))
    reward = s.get("reward", {})
    if reward.get("mean") is not None:
        row("final reward", f"mean {reward['mean']:.3f}, min {reward['min']:.3f}, max {reward['max']:.3f}")
    for task in s.get("reward_mean_by_task", []):
        mean = "n/a" if task["mean"] is None else f"{task['mean']:.3f}"
        row(f"  task {task['task_id']}", f"mean {mean} over {task['rollouts']} rollouts")
    adv = s.get("advantage", {})
    if adv:
        row("advantage groups", f"{adv['groups']} ({adv['zero_variance_groups']} zero-variance); "
            f"{adv['batch_fallback_rollouts']} rollouts on the batch baseline")
    if s.get("orphan_spans"):
        row("orphan spans re-attached", f"{s['orphans_reattached']} of {s['orphan_spans']}")
    if s.get("agent_calls_repaired") or s.get("agent_repairs_ambiguous"):
        row("agents by hierarchy repair",
            f"{s['agent_calls_repaired']} calls ({s['agent_repairs_ambiguous']} ambiguous, left without)")
    if s.get("prompt_messages_restored"):
        row("prompt messages restored", f"{s['prompt_messages_restored']} (tool calls the instrumentation "
            "left out of a later prompt, taken from the response that made them; llm_calls.restored_messages)")
    if s.get("llm_calls_merged"):
        row("LLM calls merged", f"{s['llm_calls_merged']} recorded by several instrumentations, one row each "
            f"({s.get('llm_calls_merged_across_traces', 0)} across traces; llm_calls.merged_spans)")
    if s.get("llm_calls_without_tool_schema"):
        row("tool calls without schema", f"{s['llm_calls_without_tool_schema']} LLM call(s) made tool calls but no "
            "instrumentation recorded the tool definitions (coverage.missing_tool_schema)")
    if s.get("llm_calls_cut"):
        row("replies cut at the token limit", f"{s['llm_calls_cut']} of {s.get('llm_calls', 0)} LLM calls stopped at "
            "max_tokens (finish_reason length): half answers the agent went on with; raise the agent's or the "
            "server's max_tokens if that was not meant (spanrl sql \"select finish_reason, count(*) from llm_calls "
            "group by 1\")")
    if s.get("unreadable_values"):
        row("values read as NULL", _pairs(s["unreadable_values"]) + " (a value no convention could read: "
            "spanrl sql \"select span_id, unnest(unreadable) from coverage\")")
    if s.get("config_changed"):
        row("stage-2 config changed", ", ".join(s["config_changed"])
            + ": every rollout was rebuilt with the new config (LATEST's config differs)")
    if s.get("feedback_unknown_keys"):
        row("feedback with unknown key", f"{s['feedback_unknown_keys']}: " + ", ".join(s["feedback_unknown"]))
    for g in s.get("content_coverage", []):
        row(f"  without content: {g['scope_name'] or '?'} {g['scope_version'] or ''}".rstrip(),
            f"{g['without_input']} without input, {g['without_output']} without output")
    console = Console()
    console.print(table)
    from spanrl.transitions.coverage import coverage_hint

    hint = coverage_hint(s.get("content_coverage", []))
    if hint:
        console.print(hint, soft_wrap=True, highlight=False, markup=False)
    verdict = {"written": f"written {result.path}", "unchanged": f"unchanged (LATEST = {result.snapshot_id})",
               "empty": "none written: no complete rollout with transitions yet"}[result.status]
    console.print(f"snapshot: {verdict}", soft_wrap=True, highlight=False)
    if result.status != "written":
        for line in why_no_snapshot(s, empty=result.status == "empty"):
            console.print(f"  {line}", soft_wrap=True, highlight=False, markup=False)


def why_no_snapshot(s: dict[str, Any], empty: bool = True) -> list[str]:
    """What keeps rollouts out of the snapshot, each with what to do (``waiting_stats``' counts);
    ``empty``: no snapshot has rows (else LATEST is unchanged and only the waiting ones are named)."""
    from datetime import UTC, datetime

    lines = []
    if s.get("rollouts_settling"):
        at = datetime.fromtimestamp(s["settles_at_ns"] / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        lines.append(f"{s['rollouts_settling']} rollout(s) wait for the settle window (--settle "
                     f"{_duration(s.get('settle_s', 600.0))}, quiet time after a rollout's last span): the newest "
                     f"settles at {at}, counted by the lake's clock (its newest span or ingest time), so at the "
                     "first ingest of newer spans after that; --settle 0s takes them now. Rollouts run by "
                     "`spanrl rollout` do not wait: its span marks when each attempt ended.")
    if s.get("rollouts_unanchored"):
        lines.append(f"{s['rollouts_unanchored']} rollout(s) are incomplete because spans are unanchored (their "
                     "parent span never arrived and none encloses them): they complete when it arrives; check "
                     "that the agent flushes every span before it exits.")
    if empty and s.get("rollouts_without_reward"):
        lines.append(f"{s['rollouts_without_reward']} complete rollout(s) have no reward and --missing-reward drop "
                     "(the default) leaves them out: score them (`spanrl rollout --score CMD`, files in "
                     "DATA/feedback/, --reward-key ATTR) or pass --missing-reward zero.")
    if empty and s.get("rollouts_complete_without_llm_calls"):
        lines.append(f"{s['rollouts_complete_without_llm_calls']} complete rollout(s) hold no LLM call (no "
                     "llm_calls row): is the agent's LLM client instrumented? (`spanrl sql \"select * from "
                     "coverage\"`)")
    if not lines and not s.get("rollouts_seen"):
        lines.append("the lake holds no rollout yet: send spans to the collector, then `spanrl ingest`")
    return lines


def _duration(seconds: float) -> str:
    """600 -> ``10m``, as --settle is written."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"
