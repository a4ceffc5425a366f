"""What each page shows, as plain dicts for the templates: the logic between ``Lake`` and the HTML.

These functions are synchronous (the app runs them in a worker thread) and read only through
``ui/data.py``; the rollout page assembles its span tree in Python from one rollout's spans (a few
hundred at most, capped), never from a whole table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spanrl.errors import InputError
from spanrl.query.sql import relation_names
from spanrl.ui.charts import line_chart, spread
from spanrl.ui.data import Lake
from spanrl.ui.filters import PER_PAGE, RolloutFilter, format_ns
from spanrl.ui.search import Searches

MAX_SPANS = 5000  # spans drawn on one rollout page
SQL_ROWS = 500  # rows the SQL page shows


def _msg_key(m: Any) -> tuple:
    """What makes two chat messages "the same" across calls: role, text and tool-call ids. A response
    replayed into the next prompt may differ in representation (null vs empty content, extra keys)."""
    if not isinstance(m, dict):
        return ("?", json.dumps(m, sort_keys=True, default=str))
    content = m.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, default=str)
    calls = tuple(c.get("id") or json.dumps(c, sort_keys=True, default=str)
                  for c in m.get("tool_calls") or [] if isinstance(c, dict))
    return (m.get("role"), content.strip(), calls, m.get("tool_call_id"))


def new_messages(messages: list, previous: list) -> list:
    """The messages of a prompt that are new since the previous call of the same agent: whatever
    follows the longest common prefix with that call's prompt plus its response (a conversation view
    shows each step's delta, not the whole prompt again)."""
    n = 0
    for a, b in zip(messages, previous, strict=False):
        if _msg_key(a) != _msg_key(b):
            break
        n += 1
    return messages[n:]


class NotFound(InputError):
    """The URL names a rollout or snapshot that does not exist."""


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _pretty(text: str | None) -> str:
    value = _json(text)
    return json.dumps(value, indent=2, ensure_ascii=False) if not isinstance(value, str) else value


def _snapshot_for(lake: Lake, flt: RolloutFilter) -> str | None:
    """The snapshot the filter restricts to: ``snapshot=``, or the one cycle ``cycle=`` trained on."""
    sid = flt.snapshot or None
    if flt.cycle:
        line = next((c for c in lake.cycles() if str(c.get("cycle")) == flt.cycle), None)
        if line is None:
            raise InputError(f"cycle={flt.cycle}: no such training cycle in the cycle log (`spanrl adapters list` lists them)")
        if sid and sid != line.get("snapshot_id"):
            raise InputError(f"cycle {flt.cycle} trained on snapshot {line.get('snapshot_id')}, not {sid}; "
                             "pick one of the two filters")
        sid = line.get("snapshot_id")
    if sid:
        lake.manifest(sid)  # InputError naming the folder when it does not exist
    return sid


@dataclass
class SearchState:
    """The free-text part of the Rollouts page: a finished job's matches, or its progress."""

    status: dict | None = None
    ready: bool = True


def rollouts_view(lake: Lake, searches: Searches, flt: RolloutFilter, run_search: bool = False,
                  may_start: bool = True, clamp: bool = False) -> dict[str, Any]:
    """``may_start=False`` (a link from another site): show a finished search, never start one.
    ``clamp`` (the HTML page): a page past the end shows the last page instead (the JSON API answers
    no rows there, so a client can page until empty)."""
    sid = _snapshot_for(lake, flt)
    search = SearchState()
    matches = None
    if flt.q:
        job = searches.get(flt.q, lake._prepared.version, start=False)
        if may_start and (job is None or run_search):
            job = searches.get(flt.q, lake._prepared.version, start=True)
        if job is None:
            search = SearchState({"state": "not_started"}, False)
        else:
            search = SearchState(job.status(), job.state == "done")
            matches = job.matches() if job.state == "done" else None
    rows: list[dict] = []
    stats: dict[str, Any] = {"total": 0, "reward_mean": None, "with_reward": 0, "lake_total": 0}
    asked_page = flt.page
    if search.ready:
        params = {**flt.params(), "snapshot_bit": None, "in_search": matches is not None}
        rows = lake.rows("rollouts_page", params, order=flt.order(), search=matches, members=sid)
        stats = {k: rows[0][k] for k in stats} if rows else stats
        rows = [r for r in rows if r["rollout_id"] is not None]  # one row of stats only: past the last page
        last = max(1, -(-stats["total"] // PER_PAGE))
        if clamp and not rows and flt.page > last and stats["total"]:  # ?page=9 of 2: show the last page, and say so
            flt.page = last
            params = {**flt.params(), "snapshot_bit": None, "in_search": matches is not None}
            rows = [r for r in lake.rows("rollouts_page", params, order=flt.order(), search=matches, members=sid)
                    if r["rollout_id"] is not None]
    if rows:  # first user message and final answer, for this page's rollouts only (rollout_previews.sql)
        previews = {p["rollout_id"]: p for p in lake.rows("rollout_previews", {
            "rollout_ids": [r["rollout_id"] for r in rows],
            "started_ns": min((r["started_ns"] for r in rows if r["started_ns"] is not None), default=0),
            "ended_ns": max((r["ended_ns"] for r in rows if r["ended_ns"] is not None), default=2**62)})}
        for r in rows:
            r.update({k: previews.get(r["rollout_id"], {}).get(k) for k in ("first_user", "final_answer")})
    choices = lake.choices()
    for r in rows:
        r["started"] = format_ns(r["started_ns"])
        r["duration_s"] = (r["ended_ns"] - r["started_ns"]) / 1e9 if r["ended_ns"] and r["started_ns"] else None
    total = stats["total"]
    return {
        "flt": flt, "rows": rows, "total": total, "reward_mean": stats["reward_mean"],
        "with_reward": stats["with_reward"], "pages": max(1, -(-total // PER_PAGE)),
        "lake_total": stats["lake_total"], "asked_page": asked_page,
        "tasks": [c["value"] for c in choices if c["kind"] == "task"],
        "agents": [c["value"] for c in choices if c["kind"] == "agent"],
        "snapshots": [m["snapshot_id"] for m in lake.snapshots() if "error" not in m],
        "cycles": [c.get("cycle") for c in lake.cycles()], "search": search,
    }


def _span_kind(span: dict, calls: dict, tools: dict) -> str:
    if span["span_id"] in calls:
        return "llm"
    if span["span_id"] in tools:
        return "tool"
    attrs = span["attributes"] or ""
    if span["name"].startswith("invoke_agent") or '"gen_ai.agent.name"' in attrs or '"AGENT"' in attrs:
        return "agent"
    if span["name"] == "spanrl.reward" or '"spanrl.reward"' in attrs:
        return "reward"
    return "other"


def _tree_order(spans: list[dict]) -> list[dict]:
    """Spans depth-first (children by start time) with their depth; orphans start new roots."""
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict]] = {}
    for s in spans:
        parent = s["parent_span_id"] if s["parent_span_id"] in ids else None
        children.setdefault(parent, []).append(s)
    out: list[dict] = []
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        span["depth"] = depth
        out.append(span)
        stack.extend((c, depth + 1) for c in reversed(children.get(span["span_id"], [])))
    return out


def rollout_view(lake: Lake, rollout_id: str, snapshot: str | None = None) -> dict[str, Any]:
    found = lake.rows("rollout", {"rollout_id": rollout_id})
    if not found:
        raise NotFound(f"no rollout {rollout_id!r} in this lake (rollouts view); it may not be ingested yet")
    ro = found[0]
    where = {"trace_ids": list(ro["trace_ids"] or []), "started_ns": ro["started_ns"], "ended_ns": ro["ended_ns"]}
    spans = lake.rows("rollout_spans", {**where, "limit": MAX_SPANS})
    calls = {c["span_id"]: c for c in lake.rows("rollout_calls", where)}
    tools = {t["span_id"]: t for t in lake.rows("rollout_tools", where) if t["span_id"]}
    rewards = lake.rows("rollout_rewards", {"rollout_id": rollout_id})
    sid = snapshot or lake.snapshot_of_rollout(rollout_id)
    steps = {s["span_id"]: s for s in lake.rows("rollout_steps", {"rollout_id": rollout_id}, snapshot=sid)} if sid else {}
    t0 = min((s["start_ns"] for s in spans if s["start_ns"]), default=0)
    t1 = max((s["end_ns"] or s["start_ns"] or 0 for s in spans), default=t0)
    width = max(t1 - t0, 1)
    ordered = _tree_order(spans)
    for s in ordered:
        s["kind"] = _span_kind(s, calls, tools)
        s["error"] = (s["status_code"] or "").upper() == "ERROR"
        s["x"] = 100.0 * ((s["start_ns"] or t0) - t0) / width
        s["w"] = max(0.4, 100.0 * ((s["end_ns"] or s["start_ns"] or t0) - (s["start_ns"] or t0)) / width)
        s["ms"] = ((s["end_ns"] or 0) - (s["start_ns"] or 0)) / 1e6 if s["end_ns"] and s["start_ns"] else None
        s["attributes_pretty"] = _pretty(s["attributes"])
        s["events_pretty"] = _pretty(s["events"]) if s["events"] not in (None, "[]") else ""
    air_by_call: dict[str, list[dict]] = {}
    span_ids = {s["span_id"] for s in ordered}
    for r in rewards:
        # an explicit reward hangs on any span (often the agent's root), an AIR hit on an LLM call:
        # link to the call when it is one, else to the raw span, else to nothing (no dead anchor)
        t = r["target_span_id"]
        r["target_anchor"] = f"call-{t}" if t in calls else f"span-{t}" if t in span_ids else None
        r["span_anchor"] = f"span-{r['span_id']}" if r["span_id"] in span_ids else None
        if r["source"] == "air" and r["target_span_id"]:
            air_by_call.setdefault(r["target_span_id"], []).append(r)
    call_list = []
    seen_by_agent: dict[Any, list] = {}  # per agent: its previous prompt + response
    for i, c in enumerate(sorted(calls.values(), key=lambda c: (c["start_ns"] or 0, c["span_id"]))):
        out = _json(c["output_message"]) or {}
        messages = _json(c["input_messages"]) or []
        messages = messages if isinstance(messages, list) else [messages]
        fresh = new_messages(messages, seen_by_agent.get(c["agent_name"], []))
        seen_by_agent[c["agent_name"]] = [*messages, out]
        call_list.append({
            **c, "index": i, "messages": messages, "output": out,
            "new_messages": fresh, "n_repeated": len(messages) - len(fresh),
            "tool_requests": out.get("tool_calls") or [] if isinstance(out, dict) else [],
            "tool_defs": [t.get("function", t).get("name") for t in (_json(c["tools"]) or []) if isinstance(t, dict)],
            "tools_pretty": _pretty(c["tools"]) if c["tools"] else "", "air": air_by_call.get(c["span_id"], []),
            "step": steps.get(c["span_id"]), "ms": (c["end_ns"] - c["start_ns"]) / 1e6 if c["end_ns"] else None,
            "tool_runs": [t for t in tools.values() if t["llm_span_id"] == c["span_id"]],
        })
    return {"ro": ro, "spans": ordered, "calls": call_list, "rewards": rewards, "snapshot_id": sid,
            "truncated": len(spans) >= MAX_SPANS, "started": format_ns(ro["started_ns"]),
            "duration_s": (t1 - t0) / 1e9, "format_ns": format_ns}


def tasks_view(lake: Lake, page: int) -> dict[str, Any]:
    rows = lake.rows("tasks", {"limit": PER_PAGE, "offset": (page - 1) * PER_PAGE})
    values = [v for r in rows for v in (r["lo"], r["hi"]) if v is not None]
    domain = (min(values, default=0.0), max(values, default=1.0))
    for r in rows:
        r["spread_svg"] = spread(r["lo"], r["mean"], r["hi"], domain)
    total = rows[0]["total"] if rows else 0
    return {"rows": rows, "page": page, "pages": max(1, -(-total // PER_PAGE)), "total": total, "domain": domain}


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[f"{prefix}{k}"] = v
    return out


def snapshots_view(lake: Lake) -> dict[str, Any]:
    return {"snapshots": lake.snapshots(), "latest": lake.latest_snapshot_id()}


def snapshot_view(lake: Lake, snapshot_id: str, page: int) -> dict[str, Any]:
    manifests = [m for m in lake.snapshots() if "error" not in m]
    ids = [m["snapshot_id"] for m in manifests]
    if snapshot_id not in ids:
        raise NotFound(f"no snapshot {snapshot_id!r} under transitions/ (known: {', '.join(ids[:5]) or 'none'})")
    manifest = manifests[ids.index(snapshot_id)]
    previous = manifests[ids.index(snapshot_id) + 1] if ids.index(snapshot_id) + 1 < len(ids) else None
    counts = _counts(manifest)
    before = _counts(previous) if previous else {}
    diff = [{"key": k, "now": counts.get(k), "before": before.get(k),
             "delta": (counts[k] - before[k]) if isinstance(counts.get(k), (int, float))
             and isinstance(before.get(k), (int, float)) else None}
            for k in sorted(set(counts) | set(before))]
    rows = lake.rows("snapshot_rollouts", {"limit": PER_PAGE, "offset": (page - 1) * PER_PAGE}, snapshot=snapshot_id)
    total = rows[0]["total"] if rows else 0
    if rows:
        stats = {r["rollout_id"]: r for r in lake.rows("snapshot_rollout_stats", {
            "lo": rows[0]["rollout_id"], "hi": rows[-1]["rollout_id"]}, snapshot=snapshot_id)}
        empty = dict.fromkeys(("air_steps", "step_reward_sum", "adv_min", "adv_max", "engine_calls"))
        rows = [{**empty, **row, **stats.get(row["rollout_id"], {})} for row in rows]
    config = manifest.get("config", {})
    return {"m": manifest, "previous": previous, "diff": diff, "rows": rows, "page": page,
            "pages": max(1, -(-total // PER_PAGE)), "total": total,
            "air_rules": config.get("air_rules") or config.get("air", {}).get("rules") or [],
            "config_pretty": json.dumps(config, indent=2, sort_keys=True, default=str),
            "facts": snapshot_facts(manifest),
            "manifest_pretty": json.dumps(manifest, indent=2, sort_keys=True, default=str)}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _counts(manifest: dict[str, Any]) -> dict[str, float]:
    """The manifest's numbers that are counts (times such as ``max_time_ns`` are facts, said in words)."""
    flat = {"rows": manifest.get("rows"), **_flat(manifest.get("stats", {}))}
    return {k: v for k, v in flat.items() if not k.endswith("_ns")}


def snapshot_facts(m: dict[str, Any]) -> list[tuple[str, str]]:
    """What a snapshot is, in words: when it was built, what it holds, the time its spans cover, its
    rewards and AIR hits (issue 31: the page dumped ``max_time_ns 1795702524154576066``)."""
    stats = m.get("stats") or {}
    facts: list[tuple[str, str]] = []
    created = str(m.get("created_at") or "")
    if created:
        facts.append(("built", created[:19].replace("T", " ") + " UTC" if created.endswith("+00:00") else created))
    held = [f"{m.get('rows', 0):,} transitions"]
    for key, word in (("rollouts", "rollouts"), ("tasks", "tasks"), ("llm_calls", "LLM calls")):
        if isinstance(stats.get(key), int):
            held.append(f"{stats[key]:,} {word}")
    facts.append(("holds", ", ".join(held)))
    lo, hi = m.get("min_time_ns") or stats.get("min_time_ns"), m.get("max_time_ns") or stats.get("max_time_ns")
    if lo and hi:
        facts.append(("spans from", f"{format_ns(lo)} to {format_ns(hi)} UTC"))
    reward = stats.get("reward") or {}
    if reward.get("mean") is not None:
        facts.append(("final reward", f"mean {reward['mean']:.3f}, from {reward.get('min', 0):.3f} to {reward.get('max', 0):.3f}"))
    hits = stats.get("air_hits_by_rule") or {}
    if hits:
        facts.append(("AIR hits", f"{sum(hits.values()):,} (" + ", ".join(f"{k} {v}" for k, v in sorted(
            hits.items(), key=lambda kv: -kv[1])) + ")"))
    facts.append(("written by", f"spanrl {m.get('spanrl_version', '?')}, schema v{m.get('schema_version', '?')}, "
                                f"from {_plural(len(m.get('source_files') or []), 'span file')}"))
    return facts


def cycles_view(lake: Lake) -> dict[str, Any]:
    """Reward per cycle (train / held-out), loss, tokens, AIR hits, tool-error rate, as SVG charts."""
    history = lake.history()
    rates: dict[str, float | None] = {}  # per snapshot: cycles that trained on the same one share it
    for row in history:
        sid = row.get("snapshot_id")
        if sid and sid not in rates:
            found = lake.rows("cycle_tool_errors", members=sid)[0]
            rates[sid] = found["tool_errors"] / found["tool_runs"] if found["tool_runs"] else None
        row["tool_error_rate"] = rates.get(sid) if sid else None
    xs = [r["cycle"] for r in history]

    def col(key: str) -> list[float | None]:
        return [None if r.get(key) is None else float(r[key]) for r in history]

    rewards = col("train_reward") + col("eval_reward") + col("val_reward") + col("candidate_val_reward")
    within = (0.0, 1.0) if all(v is None or 0.0 <= v <= 1.0 for v in rewards) else None
    for row in history:  # the gate's decision in words, as report.png and the demo's table say it
        row["gate_label"] = _gate_label(row.get("gate"))
    cand = col("candidate_val_reward")
    promoted = [v if (r.get("gate_label") or "").startswith("promoted") else None for v, r in zip(cand, history, strict=True)]
    kept = [v if (r.get("gate_label") or "").startswith("kept") else None for v, r in zip(cand, history, strict=True)]
    charts = [
        line_chart("mean reward per cycle", xs, [("training rollouts", col("train_reward")),
                                                 ("held-out", col("eval_reward"))], "reward", within=within),
        line_chart("validation reward and the promotion gate", xs,
                   [("policy", col("val_reward")), ("candidate promoted", promoted), ("candidate kept", kept)],
                   "reward", within=within),
        line_chart("train loss (cycle N -> adapter N+1)", xs, [("loss", col("train_loss"))], "loss"),
        line_chart("response tokens trained", xs, [("tokens", col("response_tokens"))], "tokens", bars=True),
        line_chart("AIR hits per cycle", xs, [("AIR hits", col("air_hits"))], "AIR hits", y_zero=True),
        line_chart("tool-error rate (tool runs that failed)", xs, [("error rate", col("tool_error_rate"))], "rate",
                   y_zero=True),
    ]
    return {"history": history, "charts": charts, "cycles": lake.cycles()}


def _gate_label(gate: str | None) -> str | None:
    """``promoted`` / ``kept (no difference)`` / ``kept (worse)`` from the report's gate column."""
    if not gate:
        return None
    if gate.startswith("kept") and " as candidate" in gate:  # records written before the evidence gate
        return "kept"
    return gate


def sql_view(lake: Lake, sql: str, examples: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"sql": sql, "examples": examples, "error": "", "columns": [], "rows": [], "count": 0,
                           "counted_all": True}
    with lake.connection() as con:  # the schema side list: the relations a query may name, with columns
        names = set(relation_names(con))
    schema: dict[str, list[tuple[str, str]]] = {}
    for c in lake.rows("schema_columns"):
        if c["table_name"] in names:
            schema.setdefault(c["table_name"], []).append((c["column_name"], c["data_type"]))
    out["schema"] = schema
    if sql.strip():
        try:
            out["columns"], out["rows"], out["count"], out["counted_all"] = lake.user_query(sql, SQL_ROWS)
        except InputError as exc:
            out["error"] = str(exc)
    return out
