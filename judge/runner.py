"""``spanrl judge``: rewards from an LLM judge, relative within each task group.

Reads like the run: load the rubric -> the snapshot's groups (rollouts without a reward, or all) ->
for each group not in the cache, ask the judge (a malformed answer is retried, then the group is
rejected and counted) -> feedback rows + cache entry -> the spend report.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from spanrl.judge.client import JudgeClient
from spanrl.judge.config import JudgeConfig
from spanrl.judge.prompt import PROMPT_VERSION, judge_messages, parse_scores
from spanrl.judge.store import JudgeStore, group_key
from spanrl.judge.trajectories import Group, load_groups


@dataclass
class JudgeReport:
    """Counts and spend of one run."""

    snapshot_id: str | None = None
    groups: int = 0
    cached: int = 0
    judged: int = 0
    rejected: int = 0
    rollouts_scored: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    call_errors: int = 0
    rejections: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    feedback_file: Path | None = None
    rubric_hash: str = ""


def read_rubric(path: Path | None) -> str:
    if path is not None:
        return Path(path).read_text()
    return resources.files("spanrl.judge").joinpath("rubric_default.md").read_text()


def run_judge(cfg: JudgeConfig) -> JudgeReport:
    rubric = read_rubric(cfg.rubric)
    report = JudgeReport(rubric_hash=hashlib.sha256(rubric.encode()).hexdigest()[:16])
    groups, info = load_groups(cfg.data, cfg.snapshot, cfg.all_rollouts, cfg.min_group)
    report.snapshot_id, report.groups = info["snapshot_id"], len(groups)
    report.skipped = {"with_reward": 0 if cfg.all_rollouts else info["with_reward"],
                      "in_small_groups": info["in_small_groups"]}
    store = JudgeStore(cfg.data)
    todo = []
    for group in groups:
        key = group_key(group, report.rubric_hash, cfg.judge_model, PROMPT_VERSION, cfg.max_tokens_per_trajectory)
        if key in store.cache:
            report.cached += 1
        else:
            todo.append((key, group))
    if todo:
        asyncio.run(_judge_all(cfg, rubric, todo, store, report))
    report.feedback_file = store.feedback_path if store.rows_written else None
    return report


async def _judge_all(cfg: JudgeConfig, rubric: str, todo: list[tuple[str, Group]], store: JudgeStore,
                     report: JudgeReport) -> None:
    client = JudgeClient(cfg.judge_url, cfg.judge_model, cfg.api_key(), cfg.timeout_s, cfg.temperature)
    gate = asyncio.Semaphore(cfg.concurrency)

    async def judge_group(key: str, group: Group) -> None:
        messages = judge_messages(group, rubric, cfg.max_tokens_per_trajectory)
        scores, problem = await scores_with_retries(client, gate, messages, len(group.members), cfg.retries, report)
        if scores is None:
            report.rejected += 1
            report.rejections.append(f"task {group.task_id}: {problem}")
            return
        store.record(key, group, scores, cfg.judge_model, report.rubric_hash)
        report.judged += 1
        report.rollouts_scored += len(scores)

    try:
        await asyncio.gather(*(judge_group(k, g) for k, g in todo))
    finally:
        await client.close()


async def scores_with_retries(client: JudgeClient, gate: asyncio.Semaphore, messages: list[dict[str, Any]],
                              n_members: int, retries: int, tally: Any) -> tuple[Any, str]:
    """One group's scores from the judge: a failed call or a malformed answer is asked again (backing
    off) up to ``retries`` times, never guessed. ``tally`` counts calls, tokens, call errors and
    malformed answers (``JudgeReport``, or ``spanrl eval``'s stats). (None, the last problem) when
    every attempt failed."""
    problem = ""
    for attempt in range(retries + 1):
        if attempt:
            await asyncio.sleep(min(8.0, 0.5 * 2 ** attempt))
        async with gate:
            answer = await client.chat(messages)
        tally.calls += 1
        tally.prompt_tokens += answer.prompt_tokens
        tally.completion_tokens += answer.completion_tokens
        if answer.error:
            tally.call_errors += 1
            problem = answer.error
            continue
        scores, problem = parse_scores(answer.text, n_members)
        if scores is not None:
            return scores, problem
        tally.malformed += 1
    return None, problem
