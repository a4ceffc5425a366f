"""``spanrl rollout``: run an unmodified agent command N times per task, each sample a rollout.

Reads like the run: resolve the policy and the collector -> plan (what a previous run of the same
id left to do) -> run attempts under a concurrency limit (retrying failures) -> score -> summary.
Every attempt ends as one line in ``DATA/runs/<run_id>/attempts.jsonl`` and one ``spanrl.rollout``
span in the lake; a scorer's number becomes a feedback row in ``DATA/feedback/``. With the embedded
collector the runner also counts each attempt's own spans: an attempt whose agent sent none is
counted and named in the summary and in ``run.json`` (it would otherwise look like a good rollout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from spanrl.integrity import sha256_file
from spanrl.layout import latest_adapter_id
from spanrl.rollout.config import RolloutConfig
from spanrl.rollout.process import agent_env, otlp_protocol, run_attempt, run_scorer
from spanrl.rollout.reaper import reap_orphans
from spanrl.rollout.runs import OK, Attempt, RunLog, derive_run_id, heldout_runs, plan_run, rollout_id_for
from spanrl.rollout.services import (
    Otlp,
    embedded_collector,
    gateway_info,
    is_spanrl_serve,
    policy_id,
    running_collector,
    started_server,
)
from spanrl.rollout.spans import PURPOSE_KEY, attempt_request, new_span_ids, post_spans, traceparent
from spanrl.rollout.tasks import Task, read_tasks


@dataclass
class RunSummary:
    """What one invocation did (and what it found done from earlier ones)."""

    run_id: str
    tasks: int
    n: int
    skipped_ok: int = 0
    skipped_failed: int = 0
    statuses: Counter = field(default_factory=Counter)  # per attempt of this invocation: ok / failed / timeout
    samples_ok: int = 0
    samples_failed: int = 0
    retried: int = 0
    scored: int = 0
    score_failures: int = 0
    identical_groups: list[str] = field(default_factory=list)
    span_errors: list[str] = field(default_factory=list)
    failures: list[Attempt] = field(default_factory=list)
    run_dir: Path | None = None
    feedback_file: Path | None = None
    otlp: str | None = None  # where the agents' spans went, and over which protocol
    otlp_protocol: str | None = None
    spans_checked: bool = False  # the runner's own collector counted each attempt's spans
    agent_spans: dict[str, int] = field(default_factory=dict)  # rollout id -> spans its agent sent (this run)
    ok_ids: set[str] = field(default_factory=set)
    spans_without_rollout_id: int = 0  # agent spans the collector got with no rollout id (not attributable)
    output_bytes: int = 0  # what this invocation's agents printed (stdout + stderr), and how much of it was kept
    output_kept: int = 0
    descendants_killed: int = 0  # processes an attempt left running (setsid ones included), killed at its end
    orphans_stopped: list[str] = field(default_factory=list)  # a dead runner's agents stopped before resuming
    gateway: str | None = None  # the policy is a spanrl gateway (its root URL): each attempt gets its own base URL
    attempt_root: str | None = None  # the root of the spanrl serve this run started: per-attempt base URLs too
    purpose: str | None = None  # eval: held out of training snapshots (--purpose eval)
    mean_score: float | None = None  # over the scored samples of the whole run (each sample's last scored attempt)
    n_scored: int = 0
    heldout_runs: list[str] = field(default_factory=list)  # held-out (eval) runs on these very tasks

    @property
    def without_agent_spans(self) -> list[str]:
        """Attempts of this invocation whose agent sent no span at all (only the runner's own)."""
        return sorted(rid for rid, n in self.agent_spans.items() if n == 0)

    @property
    def nothing_succeeded(self) -> bool:
        """No attempt of this invocation succeeded, or (nothing left to run) none ever did: exit 1."""
        if self.statuses:
            return self.samples_ok == 0
        return self.skipped_ok == 0 and self.skipped_failed > 0

    def as_dict(self) -> dict[str, object]:
        """What ``run.json`` records of the last invocation."""
        missing = self.without_agent_spans
        return {"samples_ok": self.samples_ok, "samples_failed": self.samples_failed,
                "attempts": dict(self.statuses), "retried": self.retried, "skipped_ok": self.skipped_ok,
                "skipped_failed": self.skipped_failed, "scored": self.scored, "score_failures": self.score_failures,
                "identical_groups": self.identical_groups, "runner_spans_not_delivered": len(self.span_errors),
                "otlp": self.otlp, "otlp_protocol": self.otlp_protocol, "agent_spans_checked": self.spans_checked,
                "attempts_without_agent_spans": len(missing) if self.spans_checked else None,
                "ok_attempts_without_agent_spans": (len([r for r in missing if r in self.ok_ids])
                                                    if self.spans_checked else None),
                "without_agent_spans": missing[:100] if self.spans_checked else None,
                "spans_without_rollout_id": self.spans_without_rollout_id if self.spans_checked else None,
                "output_bytes": self.output_bytes, "output_kept": self.output_kept,
                "descendants_killed": self.descendants_killed, "orphans_stopped": self.orphans_stopped,
                "gateway": self.gateway, "nothing_succeeded": self.nothing_succeeded, "purpose": self.purpose,
                "mean_score": self.mean_score, "n_scored": self.n_scored}


@contextlib.contextmanager
def _endpoints(cfg: RolloutConfig, log_dir: Path, gateway: dict | None = None) -> Iterator[tuple[Otlp, str]]:
    """(where the spans go, policy /v1 URL): the user's, or ones this run starts and stops. A
    ``spanrl gateway`` or ``spanrl collector`` writing this data root holds its collector lock: its
    collector is ours too (its URL is in the lock file)."""
    with contextlib.ExitStack() as stack:
        shared = (gateway or {}).get("otlp") if (gateway or {}).get("data") == str(Path(cfg.data).resolve()) else None
        otlp = (Otlp(cfg.otlp, otlp_protocol(cfg.otlp, cfg.otlp_protocol)) if cfg.otlp
                else Otlp(str(shared)) if shared
                else running_collector(cfg.data) or stack.enter_context(embedded_collector(cfg.data)))
        policy = cfg.policy_url
        if policy is None:
            assert cfg.model is not None  # RolloutConfig guarantees one of the two
            policy = stack.enter_context(started_server(cfg.data, cfg.model, otlp, cfg.temperature,
                                                        cfg.served_model_names, log_dir / "serve.log",
                                                        cfg.serve_adapter, cfg.threads))
        yield otlp, policy


def resolve_run_id(cfg: RolloutConfig) -> str:
    """``--run-id``, else a hash of the tasks' content, the agent command and the policy: its URL and
    adapter (``--adapter-id``, else asked from the server), or the started server's model, served
    names, temperature and adapter; ``eval-`` before it for a held-out run (``--purpose eval``, what
    ``spanrl eval`` runs), so a baseline and a training run of the same agent are two runs."""
    if cfg.run_id:
        return cfg.run_id
    if cfg.policy_url is None:  # the server we start serves adapters/LATEST of this data root
        policy = json.dumps({"model": str(cfg.model), "served": cfg.served_model_names, "temperature": cfg.temperature,
                             "adapter": cfg.adapter_id or _served_adapter(cfg)})
    else:
        policy = json.dumps({"url": cfg.policy_url.rstrip("/"), "adapter": cfg.adapter_id or policy_id(cfg.policy_url)})
    run_id = derive_run_id(cfg.tasks, policy, cfg.command)
    return f"eval-{run_id}" if cfg.purpose == "eval" else run_id  # held out: never the training run's samples


def _served_adapter(cfg: RolloutConfig) -> str:
    """The adapter id the started server serves (``serve_adapter`` pinned, else LATEST's), or base."""
    if cfg.serve_adapter not in (None, "LATEST"):
        return cfg.serve_adapter
    return latest_adapter_id(cfg.data) or "base"


def run_rollouts(cfg: RolloutConfig, on_plan: Callable[[int], None] | None = None,
                 on_done: Callable[[Attempt], None] | None = None) -> RunSummary:
    """The whole run; callbacks feed a progress bar (``on_plan(total attempts)``, ``on_done``)."""
    tasks = read_tasks(cfg.tasks)
    run_id = resolve_run_id(cfg)
    log = RunLog(cfg.data, run_id)
    plan = plan_run(log, tasks, cfg.n, cfg.retries, cfg.retry_failed)
    summary = RunSummary(run_id, len(tasks), cfg.n, plan.done_ok, plan.done_failed, run_dir=log.dir,
                         purpose=cfg.purpose)
    info = {"run_id": run_id, "tasks": str(cfg.tasks), "n": cfg.n, "command": cfg.command,
            "policy_url": cfg.policy_url, "model": cfg.model, "served_model_names": cfg.served_model_names,
            "purpose": cfg.purpose, "tasks_sha256": sha256_file(cfg.tasks), "updated": datetime.now(UTC).isoformat()}
    if cfg.purpose != "eval":
        summary.heldout_runs = heldout_runs(cfg.data, info["tasks_sha256"], run_id)
    log.write_run(info)
    if on_plan:
        on_plan(len(plan.todo))
    if plan.todo:
        summary.orphans_stopped = reap_orphans(run_id)  # a killed runner's agents, before their samples rerun
        gateway = gateway_info(cfg.policy_url) if cfg.policy_url else None
        summary.gateway = cfg.policy_url.rstrip("/").removesuffix("/v1") if gateway and cfg.policy_url else None
        with _endpoints(cfg, log.dir, gateway) as (otlp, policy):
            summary.otlp, summary.otlp_protocol = otlp.endpoint, otlp.protocol
            summary.spans_checked = otlp.counts is not None
            if not summary.gateway and (cfg.policy_url is None or is_spanrl_serve(policy)):  # a spanrl serve takes
                summary.attempt_root = policy.rstrip("/").removesuffix("/v1")  # the gateway's per-attempt URL too
            asyncio.run(_run_all(cfg, log, plan.todo, otlp, policy, summary, on_done))
        if otlp.counts is not None:  # the collector has stopped: every span that arrived is counted
            summary.agent_spans = {rid: otlp.counts.get(rid) for rid in summary.agent_spans}
            summary.spans_without_rollout_id = otlp.counts.unkeyed
    summary.identical_groups = identical_groups(log, tasks)
    summary.mean_score, summary.n_scored = mean_score(log, tasks)
    log.write_run({**info, "updated": datetime.now(UTC).isoformat(), "last_invocation": summary.as_dict()})
    return summary


async def _run_all(cfg: RolloutConfig, log: RunLog, todo: list[tuple[Task, int, int]], otlp: Otlp, policy: str,
                   summary: RunSummary, on_done: Callable[[Attempt], None] | None) -> None:
    gate = asyncio.Semaphore(cfg.concurrency)
    feedback = cfg.data / "feedback" / f"rollout-{summary.run_id}.jsonl"

    async def sample(task: Task, index: int, first_attempt: int) -> None:
        for attempt in range(first_attempt, first_attempt + cfg.retries + 1):
            att = Attempt(task, index, attempt, rollout_id_for(summary.run_id, task.task_id, index, attempt))
            async with gate:
                await _one_attempt(cfg, log, att, otlp, policy, summary)
            summary.statuses[att.status] += 1
            if att.status == OK:
                summary.samples_ok += 1
                summary.ok_ids.add(att.rollout_id)
                if cfg.score:
                    await _score(cfg, log, att, feedback, summary)
                if on_done:
                    on_done(att)
                return
            summary.failures.append(att)
            if on_done:
                on_done(att)
            if attempt < first_attempt + cfg.retries:
                summary.retried += 1
        summary.samples_failed += 1

    await asyncio.gather(*(sample(t, i, a) for t, i, a in todo))


async def _one_attempt(cfg: RolloutConfig, log: RunLog, att: Attempt, otlp: Otlp, policy: str,
                       summary: RunSummary) -> None:
    log.start(att)
    ids = new_span_ids()
    if root := summary.gateway or summary.attempt_root:  # every call of this attempt under its rollout id and our
        policy = f"{root}/r/{quote(att.rollout_id, safe='')}/{traceparent(ids)}/v1"  # span, no help from the agent
    base = {**os.environ, **cfg.env}
    if cfg.purpose:  # the agent's own spans say it too (an instrumented agent's rollout has no runner span yet)
        base["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(
            a for a in (base.get("OTEL_RESOURCE_ATTRIBUTES", "").strip(","), f"{PURPOSE_KEY}={cfg.purpose}") if a)
    env = agent_env(base, att, otlp.endpoint, policy, otlp.protocol, run_id=summary.run_id)
    start_ns, end_ns = await run_attempt(att, cfg.command, env, log.log_paths(att.rollout_id), cfg.timeout_s,
                                         cfg.kill_grace_s)
    summary.output_bytes += att.extra.get("stdout_bytes", 0) + att.extra.get("stderr_bytes", 0)
    summary.output_kept += att.extra.get("stdout_kept", 0) + att.extra.get("stderr_kept", 0)
    summary.descendants_killed += att.extra.get("descendants_killed", 0)
    if otlp.counts is not None:  # the process has exited: whatever its SDK flushed is on disk and counted
        att.agent_spans = summary.agent_spans[att.rollout_id] = otlp.counts.get(att.rollout_id)
    error = await asyncio.to_thread(post_spans, otlp.endpoint, attempt_request(att, summary.run_id, start_ns, end_ns, ids,
                                                                               cfg.purpose), protocol=otlp.protocol)
    if error:
        summary.span_errors.append(f"{att.rollout_id}: {error}")
    if att.status != OK or not cfg.score:
        log.append(att.end_record())


async def _score(cfg: RolloutConfig, log: RunLog, att: Attempt, feedback: Path, summary: RunSummary) -> None:
    """Scorer number -> feedback row keyed by rollout_id; a failure is recorded, never guessed."""
    output = log.log_paths(att.rollout_id)[1].read_text(errors="replace")
    att.score, att.score_error = await run_scorer(cfg.score or "", att.task, output, cfg.timeout_s)
    if att.score is not None:
        feedback.parent.mkdir(parents=True, exist_ok=True)
        row = {"rollout_id": att.rollout_id, "value": att.score, "name": "score",
               "ts": datetime.now(UTC).isoformat(), "run_id": summary.run_id}
        with open(feedback, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        summary.scored += 1
        summary.feedback_file = feedback
    else:
        summary.score_failures += 1
    log.append(att.end_record())


def identical_groups(log: RunLog, tasks: list[Task]) -> list[str]:
    """Tasks whose successful samples (two or more) all printed the same output: no diversity in
    the group, so its advantages are all zero."""
    outputs: dict[str, set[str]] = defaultdict(set)
    counts: Counter = Counter()
    for e in log.events:
        if e.get("event") == "end" and e.get("status") == OK and e.get("output_sha256"):
            outputs[e["task_id"]].add(e["output_sha256"])
            counts[e["task_id"]] += 1
    return [t.task_id for t in tasks if counts[t.task_id] >= 2 and len(outputs[t.task_id]) == 1]


def mean_score(log: RunLog, tasks: list[Task]) -> tuple[float | None, int]:
    """(mean, count) of the run's scores: each sample's last scored ok attempt, of these tasks."""
    ids = {t.task_id for t in tasks}
    last: dict[tuple[str, int], float] = {}
    for e in log.events:
        if e.get("event") == "end" and e.get("status") == OK and e.get("score") is not None and e["task_id"] in ids:
            last[(e["task_id"], int(e["sample"]))] = float(e["score"])
    return (sum(last.values()) / len(last) if last else None), len(last)
