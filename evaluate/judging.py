"""``spanrl eval --judge``: rewards from the LLM judge of ``spanrl judge`` instead of a scorer command.

Each task's successful samples of every policy are judged together, as one group (the judge's
RULER-style prompt scores the members relative to each other), so all policies are scored on one scale
per task. The members are shuffled with a fixed seed so that no policy always comes first in the
prompt. A group the judge fails to score (after its retries) leaves that task unscored for every
policy: the paired comparison then uses the other tasks, and eval.json counts the rejection.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path

from spanrl.judge.client import JudgeClient
from spanrl.judge.config import JudgeConfig
from spanrl.judge.prompt import judge_messages
from spanrl.judge.runner import read_rubric, scores_with_retries
from spanrl.judge.trajectories import Group, Trajectory
from spanrl.rollout.runs import OK, RunLog
from spanrl.rollout.tasks import read_tasks

SEED = 0


@dataclass
class JudgeStats:
    """What the judging cost and what it could not score (eval.json ``judge``)."""

    model: str
    groups: int = 0
    judged: int = 0
    rejected: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    call_errors: int = 0  # judge calls that failed (retried)
    malformed: int = 0  # answers that did not parse (retried)


def sample_outputs(data: Path, run_id: str) -> dict[tuple[str, int], str]:
    """(task id, sample) -> what the agent printed, for the last successful attempt of each sample."""
    log = RunLog(data, run_id)
    last: dict[tuple[str, int], str] = {}
    for e in log.events:
        if e.get("event") == "end" and e.get("status") == OK:
            last[(e["task_id"], int(e["sample"]))] = e["rollout_id"]
    return {k: _read(log.log_paths(rid)[1]) for k, rid in sorted(last.items())}


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def judge_rewards(judge: JudgeConfig, tasks_file: Path, runs: dict[str, str]
                  ) -> tuple[dict[str, dict[str, list[float]]], JudgeStats]:
    """Policy name -> task id -> judge scores of its samples; ``runs``: policy name -> its run id."""
    inputs = {t.task_id: t.input for t in read_tasks(tasks_file)}
    members: dict[str, list[tuple[str, Trajectory]]] = {}
    for name, run_id in runs.items():
        for (task_id, sample), output in sample_outputs(judge.data, run_id).items():
            messages = [{"role": "user", "content": inputs.get(task_id, "")}, {"role": "assistant", "content": output}]
            digest = hashlib.sha256(f"{name}\0{task_id}\0{sample}\0{output}".encode()).hexdigest()
            members.setdefault(task_id, []).append(
                (name, Trajectory(f"{name}#{sample}", task_id, None, messages, digest)))
    for task_id, group in members.items():  # no fixed policy order in the prompt, the same on every run
        random.Random(f"{SEED}:{task_id}").shuffle(group)
    stats = JudgeStats(judge.judge_model, groups=len(members))
    scores = asyncio.run(_judge_all(judge, read_rubric(judge.rubric), members, stats))
    rewards: dict[str, dict[str, list[float]]] = {name: {} for name in runs}
    for task_id, values in sorted(scores.items()):
        for (name, _), value in zip(members[task_id], values, strict=True):
            rewards[name].setdefault(task_id, []).append(value)
    return rewards, stats


async def _judge_all(judge: JudgeConfig, rubric: str, members: dict[str, list[tuple[str, Trajectory]]],
                     stats: JudgeStats) -> dict[str, list[float]]:
    client = JudgeClient(judge.judge_url, judge.judge_model, judge.api_key(), judge.timeout_s, judge.temperature)
    gate = asyncio.Semaphore(judge.concurrency)
    out: dict[str, list[float]] = {}

    async def one(task_id: str, group: list[tuple[str, Trajectory]]) -> None:
        messages = judge_messages(Group(task_id, [t for _, t in group]), rubric, judge.max_tokens_per_trajectory)
        parsed, problem = await scores_with_retries(client, gate, messages, len(group), judge.retries, stats)
        if parsed is None:
            stats.rejected.append(f"task {task_id}: {problem}")
            return
        out[task_id] = [score for score, _ in parsed]
        stats.judged += 1

    try:
        await asyncio.gather(*(one(k, g) for k, g in members.items()))
    finally:
        await client.close()
    return out
