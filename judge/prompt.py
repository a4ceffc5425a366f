"""The judge's prompt (RULER-style: the whole group at once, scores relative to each other) and the
strict reading of its answer: every trajectory scored exactly once, a finite number in [0, 1].
Anything else is malformed; the caller retries, then rejects the group. Nothing is guessed."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from spanrl.judge.trajectories import Group, render, task_text

PROMPT_VERSION = "1"  # part of the cache key: a changed prompt judges every group again

SYSTEM = """You evaluate AI agents. You get one task and several trajectories: independent attempts \
by an agent at that same task, each with its messages, tool calls and tool results.

Score every trajectory from 0 to 1 against the rubric below. Compare the trajectories with each \
other: a better trajectory gets a higher score, equally good ones get equal scores, and the scores \
should spread over the range when the trajectories differ in quality.

Rubric:
{rubric}

Answer with one JSON object and nothing else:
{{"scores": [{{"trajectory_id": "1", "explanation": "one short sentence", "score": 0.0}}, ...]}}
with one entry per trajectory."""


def judge_messages(group: Group, rubric: str, max_tokens: int) -> list[dict[str, str]]:
    parts = [f"Task:\n{task_text(group)}\n"]
    for i, member in enumerate(group.members, 1):
        parts.append(f'<trajectory id="{i}">\n{render(member, max_tokens)}\n</trajectory>')
    return [{"role": "system", "content": SYSTEM.format(rubric=rubric.strip())},
            {"role": "user", "content": "\n".join(parts)}]


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_scores(text: str | None, n: int) -> tuple[list[tuple[float, str]] | None, str | None]:
    """([(score, explanation)] in trajectory order, None) or (None, what was wrong)."""
    if not text:
        return None, "empty answer"
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None, "no JSON object in the answer"
    try:
        doc = json.loads(body[start:end + 1])
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg})"
    entries = doc.get("scores") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        return None, "no `scores` list"
    found: dict[int, tuple[float, str]] = {}
    for entry in entries:
        parsed = _entry(entry, n)
        if isinstance(parsed, str):
            return None, parsed
        index, score, why = parsed
        if index in found:
            return None, f"trajectory {index} scored twice"
        found[index] = (score, why)
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        return None, f"trajectories {missing} not scored"
    return [found[i] for i in range(1, n + 1)], None


def _entry(entry: Any, n: int) -> tuple[int, float, str] | str:
    if not isinstance(entry, dict):
        return "a `scores` entry is not an object"
    try:
        index = int(str(entry.get("trajectory_id")).strip())
    except ValueError:
        return f"trajectory_id {entry.get('trajectory_id')!r} is not one of 1..{n}"
    if not 1 <= index <= n:
        return f"trajectory_id {index} is not one of 1..{n}"
    score = entry.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not 0.0 <= score <= 1.0:
        return f"score {score!r} of trajectory {index} is not a number in [0, 1]"
    return index, float(score), str(entry.get("explanation") or "")[:500]
