"""A run's identity and its log: which attempts started, which ended and how (the resume state).

``DATA/runs/<run_id>/attempts.jsonl`` gets one line when an attempt starts and one when it ends
(appended and flushed, so a killed runner loses at most the attempts in flight). Every attempt has
its own rollout id: a sample whose first attempt was cut off (crash, kill, timeout) is tried again
under ``<id>.a1``, so the spans of two attempts never mix in one rollout.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl.rollout.tasks import Task

OK, FAILED, TIMEOUT = "ok", "failed", "timeout"


def derive_run_id(tasks_file: Path, policy_id: str, command: list[str] | None = None) -> str:
    """Default ``--run-id``: the tasks file's bytes, the policy (its URL and adapter, or the served
    model and adapter) and the agent command, so the same command on the same tasks against the same
    adapter resumes, while another agent, another server or tomorrow's adapter samples again."""
    parts = [Path(tasks_file).read_bytes(), policy_id.encode(), json.dumps(command or []).encode()]
    digest = hashlib.sha256(b"\0".join(parts)).hexdigest()
    return f"run-{digest[:12]}"


def rollout_id_for(run_id: str, task_id: str, sample: int, attempt: int) -> str:
    base = f"{run_id}.{task_id}.{sample}"
    return base if attempt == 0 else f"{base}.a{attempt}"


@dataclass
class Attempt:
    """One execution of the agent for (task, sample); ``status`` is None until it ends."""

    task: Task
    sample: int
    attempt: int
    rollout_id: str
    status: str | None = None
    exit_code: int | None = None
    duration_s: float = 0.0
    stderr_tail: str = ""
    output_sha256: str | None = None
    score: float | None = None
    score_error: str | None = None
    agent_spans: int | None = None  # spans the agent sent (None: not counted, e.g. an external --otlp)
    extra: dict[str, Any] = field(default_factory=dict)

    def end_record(self) -> dict[str, Any]:
        return {"event": "end", "rollout_id": self.rollout_id, "task_id": self.task.task_id, "sample": self.sample,
                "attempt": self.attempt, "status": self.status, "exit_code": self.exit_code,
                "duration_s": round(self.duration_s, 3), "stderr_tail": self.stderr_tail or None,
                "output_sha256": self.output_sha256, "score": self.score, "score_error": self.score_error,
                "agent_spans": self.agent_spans, **self.extra, "ts": time.time()}


ATTEMPTS = "attempts.jsonl"  # one start and one end line per attempt: the resume state


class RunLog:
    """Appends start/end events; reads them back to plan a resumed run."""

    def __init__(self, data: Path, run_id: str) -> None:
        self.dir = Path(data) / "runs" / run_id
        self.logs = self.dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / ATTEMPTS
        self.events = self._read()

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        events = []
        for line in self.path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a kill mid-write: that attempt counts as never ended
        return events

    def write_run(self, info: dict[str, Any]) -> None:
        (self.dir / "run.json").write_text(json.dumps(info, indent=2, sort_keys=True, default=str) + "\n")

    def append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as fh:
            fh.write(json.dumps(record, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.events.append(record)

    def start(self, att: Attempt) -> None:
        self.append({"event": "start", "rollout_id": att.rollout_id, "task_id": att.task.task_id,
                     "sample": att.sample, "attempt": att.attempt, "ts": time.time()})

    def log_paths(self, rollout_id: str) -> tuple[Path, Path, Path]:
        """(stdin, stdout, stderr) files of one attempt; names hashed (task ids may hold any character)."""
        stem = hashlib.sha256(rollout_id.encode()).hexdigest()[:20]
        return self.logs / f"{stem}.in", self.logs / f"{stem}.out", self.logs / f"{stem}.err"

    def ended(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """End events per (task_id, sample), in order."""
        out: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        for e in self.events:
            if e.get("event") == "end":
                out[(e["task_id"], int(e["sample"]))].append(e)
        return out

    def started_count(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = defaultdict(int)
        for e in self.events:
            if e.get("event") == "start":
                out[(e["task_id"], int(e["sample"]))] += 1
        return out


@dataclass
class Plan:
    """What a (resumed) run still has to do, and what it found done."""

    todo: list[tuple[Task, int, int]]  # (task, sample, first attempt index)
    done_ok: int
    done_failed: int


def plan_run(log: RunLog, tasks: list[Task], n: int, retries: int, retry_failed: bool) -> Plan:
    """Samples without an ``ok`` end are to do, unless they already used every attempt (and
    ``retry_failed`` is off); attempt numbering continues after every attempt ever started."""
    ended, started = log.ended(), log.started_count()
    todo, ok, failed = [], 0, 0
    for task in tasks:
        for sample in range(n):
            ends = ended.get((task.task_id, sample), [])
            if any(e.get("status") == OK for e in ends):
                ok += 1
                continue
            if len(ends) > retries and not retry_failed:
                failed += 1
                continue
            todo.append((task, sample, started.get((task.task_id, sample), 0)))
    return Plan(todo=todo, done_ok=ok, done_failed=failed)


def heldout_runs(data: Path, tasks_sha256: str, run_id: str) -> list[str]:
    """The held-out runs (``--purpose eval``, ``spanrl eval``'s) on a tasks file of these very bytes:
    sampling them again for training trains on the held-out set."""
    found = []
    for path in sorted((Path(data) / "runs").glob("*/run.json")):
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if (isinstance(info, dict) and path.parent.name != run_id and info.get("tasks_sha256") == tasks_sha256
                and (info.get("purpose") == "eval" or path.parent.name.startswith("eval-"))):
            found.append(path.parent.name)
    return found
