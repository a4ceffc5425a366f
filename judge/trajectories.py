"""Rollouts of a snapshot -> task groups -> text a judge can read.

A rollout's steps are its LLM calls; each prompt usually repeats the conversation so far, so a step
shows only what is new since the previous step (a prompt that does not continue the previous one,
another agent's call say, is shown whole after a ``[new context]`` line). Tool calls and tool results
(errors included) appear as messages. A trajectory over its token budget keeps its head and tail,
with a visible ``[... N tokens truncated ...]`` marker in between.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from spanrl.errors import InputError
from spanrl.sqlfiles import SqlFiles

SQL = SqlFiles("spanrl.judge")
CHARS_PER_TOKEN = 4  # a rough, model-free estimate: budgets are approximate on purpose


@dataclass
class Trajectory:
    rollout_id: str
    task_id: str
    final_reward: float | None
    messages: list[dict[str, Any]]  # the whole conversation, system first when there is one
    content_hash: str
    task_len: int = 0  # the first call's prompt: the task (and any worked examples before it) ends here


@dataclass
class Group:
    task_id: str
    members: list[Trajectory]


def load_groups(data: Path, snapshot: str, all_rollouts: bool, min_group: int) -> tuple[list[Group], dict[str, Any]]:
    """Task groups to judge from one snapshot; the counts of what was left out and why."""
    from spanrl.transitions import read_snapshot

    table, manifest = read_snapshot(data, snapshot)
    built_with = (manifest.get("config") or {}).get("missing_reward", "drop")
    con = duckdb.connect()
    con.register("snapshot", table)
    rows = con.sql(SQL.read("judge_rollouts")).to_arrow_table().to_pylist()
    trajectories = [_trajectory(r) for r in rows if all_rollouts or r["final_reward"] is None]
    if not trajectories and not all_rollouts and built_with == "drop":
        raise InputError(f"snapshot {manifest.get('snapshot_id')} holds only rollouts that have a reward (built with "
                         "--missing-reward drop); build one with the others: `spanrl transitions build "
                         "--missing-reward zero` (then run judge again), or pass --all to judge rewarded ones")
    by_task: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id or t.rollout_id, []).append(t)
    groups = [Group(k, v) for k, v in by_task.items() if len(v) >= min_group]
    small = sum(len(v) for v in by_task.values() if len(v) < min_group)
    return groups, {"snapshot_id": manifest.get("snapshot_id"), "rollouts": len(rows),
                    "with_reward": sum(r["final_reward"] is not None for r in rows),
                    "in_small_groups": small}


def _trajectory(row: dict[str, Any]) -> Trajectory:
    messages: list[dict[str, Any]] = []
    previous: list[dict[str, Any]] = []
    for step in row["steps"]:
        prompt = _json_list(step["prompt"])
        response = json.loads(step["response"]) if step["response"] else {"role": "assistant", "content": None}
        if previous and prompt[: len(previous)] == previous:
            messages += prompt[len(previous):]
        else:
            if previous:
                messages.append({"role": "spanrl", "content": "[new context]"})
            messages += prompt
        messages.append(response)
        previous = prompt + [response]
    digest = hashlib.sha256(json.dumps(row["steps"], sort_keys=True).encode()).hexdigest()
    first = len(_json_list(row["steps"][0]["prompt"])) if row["steps"] else 0
    return Trajectory(row["rollout_id"], row["task_id"], row["final_reward"], messages, digest, first)


def _json_list(text: str | None) -> list[dict[str, Any]]:
    value = json.loads(text) if text else []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def task_text(group: Group) -> str:
    """The task as the agent got it: the system prompt and the request (the last user message of the first
    member's first call: worked examples an agent keeps in its conversation come before it)."""
    first = group.members[0]
    head = first.messages[:first.task_len] if first.task_len else first.messages[:2]
    system = [m for m in head[:1] if m.get("role") == "system"]
    users = [m for m in head if m.get("role") == "user"][-1:]
    parts = [f"[{m['role']}] {_content(m.get('content'))}" for m in system + users]
    return "\n".join(parts) or f"(task {group.task_id}: no user message recorded)"


def render(t: Trajectory, max_tokens: int) -> str:
    """The conversation after the task messages, as text, cut to ``max_tokens`` with a marker."""
    lines = []
    start = t.task_len or next((i for i, m in enumerate(t.messages) if m.get("role") == "user"), -1) + 1
    for m in t.messages[start:]:
        role = m.get("role")
        if role == "tool":
            lines.append(f"[tool result {m.get('tool_call_id') or ''}] {_content(m.get('content'))}")
            continue
        if m.get("content") not in (None, ""):
            lines.append(f"[{role}] {_content(m.get('content'))}")
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            lines.append(f"[{role} calls tool {call.get('id') or ''}] {fn.get('name')}({fn.get('arguments')})")
    return truncate("\n".join(lines) or "(no output)", max_tokens)


def truncate(text: str, max_tokens: int) -> str:
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    cut = (len(text) - limit) // CHARS_PER_TOKEN
    marker = f"\n[... {cut} tokens truncated ...]\n"
    head = (limit - len(marker)) * 2 // 3
    tail = limit - len(marker) - head
    return text[:head] + marker + text[len(text) - tail:]


def _content(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)
