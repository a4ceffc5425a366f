"""What the judge keeps: its cache (``DATA/judge/cache.jsonl``) and the feedback rows it writes.

Relative scores depend on the whole group, so the cache key is the group's members with their
content hashes, the rubric hash, the judge model, the prompt version and the token budget: re-running
costs nothing, and a group that gained a member (or changed) is judged again. Scores leave as
feedback rows (``name = judge``) keyed by rollout_id, which the next ``spanrl ingest`` turns into
rewards; the rows carry the judge model, rubric hash and group key for audit.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spanrl.judge.trajectories import Group


def group_key(group: Group, rubric_hash: str, model: str, prompt_version: str, budget: int) -> str:
    members = sorted((t.rollout_id, t.content_hash) for t in group.members)
    doc = json.dumps({"members": members, "rubric": rubric_hash, "model": model, "prompt": prompt_version,
                      "budget": budget}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


class JudgeStore:
    def __init__(self, data: Path) -> None:
        self.cache_path = Path(data) / "judge" / "cache.jsonl"
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        self.feedback_path = Path(data) / "feedback" / f"judge-{stamp}-{os.getpid()}.jsonl"
        self.cache: dict[str, dict[str, Any]] = {}
        if self.cache_path.is_file():
            for line in self.cache_path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    self.cache[entry["key"]] = entry
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a torn last line: that group is judged again
        self.rows_written = 0

    def record(self, key: str, group: Group, scores: list[tuple[float, str]], model: str, rubric_hash: str) -> None:
        """Feedback rows first, then the cache entry: a crash between them judges the group again
        (a duplicate row with the same meaning), never leaves a cached group without rows."""
        ts = datetime.now(UTC).isoformat()
        rows = [{"rollout_id": t.rollout_id, "value": score, "name": "judge", "ts": ts, "judge_model": model,
                 "rubric_hash": rubric_hash, "group_key": key, "explanation": why}
                for t, (score, why) in zip(group.members, scores, strict=True)]
        _append(self.feedback_path, rows)
        self.rows_written += len(rows)
        entry = {"key": key, "task_id": group.task_id, "model": model, "rubric_hash": rubric_hash, "ts": ts,
                 "scores": {t.rollout_id: s for t, (s, _) in zip(group.members, scores, strict=True)}}
        _append(self.cache_path, [entry])
        self.cache[key] = entry


def _append(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        fh.flush()
        os.fsync(fh.fileno())
