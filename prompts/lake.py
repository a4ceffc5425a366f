"""What ``spanrl prompts optimize`` reads of the lake (through the query stage's guarded connection):
one agent's rewarded rollouts, with the system prompt they ran with, their task, tool calls and answer
(prompts/sql/agent_rollouts.sql), and each rendered as a short worked example."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl.layout import lake_dir
from spanrl.sqlfiles import SqlFiles

SQL = SqlFiles("spanrl.prompts")
MAX_PART_CHARS = 400  # one tool argument, tool result or answer in a rendered example, at most
MAX_TURNS_CHARS = 4000  # a rollout's own turns, all together, at most: a longer one is shown as text only


@dataclass
class Example:
    """One rollout as the optimizer shows it: the task, what the agent did, its answer and its reward."""

    task_id: str
    input: str
    steps: list[str]  # "tool name(arguments) -> result", in order
    answer: str
    reward: float
    system_prompt: str | None = None
    prompt_version: str | None = None
    rollout_id: str = ""
    turns: list[dict[str, Any]] = field(default_factory=list)  # the task, the calls, results and answer as chat

    def render(self, with_reward: bool = True) -> str:
        lines = [f"Task: {self.input.strip()}"]
        lines += [f"Tool call: {s}" for s in self.steps]
        lines.append(f"Final answer: {self.answer.strip()}")
        if with_reward:
            lines.append(f"Reward: {self.reward:g}")
        return "\n".join(lines)


def _cut(text: Any) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return text if len(text) <= MAX_PART_CHARS else text[:MAX_PART_CHARS] + "..."


def _content(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _steps(prompt: str | None, skip: int = 0) -> list[str]:
    """The tool calls of a conversation (the last call's prompt) past its first ``skip`` messages (the
    first call's prompt: worked examples the agent keeps in its history are not this rollout's steps),
    each with the result it got."""
    try:
        messages = json.loads(prompt or "[]")
    except ValueError:
        return []
    if not isinstance(messages, list):
        return []
    results = {m.get("tool_call_id"): _content(m) for m in messages if isinstance(m, dict) and m.get("role") == "tool"}
    steps = []
    for message in messages[skip:]:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            fn = call.get("function") or {}
            result = results.get(call.get("id"))
            steps.append(f"{fn.get('name')}({_cut(fn.get('arguments') or '')})"
                         + (f" -> {_cut(result)}" if result is not None else ""))
    return steps


def _message(m: Any) -> dict[str, Any] | None:
    """A chat message as a turn to show again: role, text, tool calls and the call a result answers."""
    if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "tool"):
        return None
    out: dict[str, Any] = {"role": m["role"], "content": _content(m)}
    calls = [{"id": str(c.get("id") or ""), "type": "function",
              "function": {"name": str((c.get("function") or {}).get("name") or ""),
                           "arguments": _arguments((c.get("function") or {}).get("arguments"))}}
             for c in m.get("tool_calls") or [] if isinstance(c, dict)]
    if calls:
        out["tool_calls"] = calls
    if m["role"] == "tool":
        out["tool_call_id"] = str(m.get("tool_call_id") or "")
    return out


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _turns(prompt: str | None, answer: str | None, first: int) -> list[dict[str, Any]]:
    """The rollout as conversation: its last call's messages from the task (the first call's last message,
    a user turn: the agent's own examples before it are not this rollout's) and the answer; empty when
    that is not what the prompt holds, or the whole is longer than MAX_TURNS_CHARS."""
    try:
        messages, reply = json.loads(prompt or "[]"), json.loads(answer or "null")
    except ValueError:
        return []
    if not isinstance(messages, list) or first < 1 or len(messages) < first:
        return []
    turns = [_message(m) for m in [*messages[first - 1:], reply]]
    if any(t is None for t in turns) or turns[0]["role"] != "user" or turns[-1]["role"] != "assistant":
        return []
    return turns if len(json.dumps(turns)) <= MAX_TURNS_CHARS else []


def agent_examples(data: Path, agent: str, sha: str | None = None) -> list[Example]:
    """Every rewarded, complete rollout of ``agent`` in the lake (empty when the lake has no spans)."""
    if not any((lake_dir(data) / "spans").glob("*/*.parquet")):
        return []
    from spanrl.query import connect

    con = connect(Path(data), stage2=True)
    cursor = con.execute(SQL.read("agent_rollouts"), {"agent": agent, "sha": sha})
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    out = []
    for r in rows:
        try:
            answer = _content(json.loads(r["last_answer"] or "null"))
        except ValueError:
            answer = r["last_answer"] or ""
        first = int(r["first_prompt_messages"] or 0)
        out.append(Example(r["task_id"] or "", r["input"] or "", _steps(r["last_prompt"], first), _cut(answer),
                           float(r["reward"]), r["system_prompt"], r["prompt_version"], r["rollout_id"],
                           _turns(r["last_prompt"], r["last_answer"], first)))
    return out


def most_common_prompt(examples: list[Example]) -> str | None:
    """The system prompt most of the agent's rollouts ran with (its current prompt when the store has none)."""
    counts = Counter(e.system_prompt for e in examples if e.system_prompt)
    return counts.most_common(1)[0][0] if counts else None
