"""``spanrl eval``'s run: each policy through the rollout runner on the same tasks, then statistics.

Each policy is one ``spanrl rollout`` run (run id ``eval-...``, resumable like any run) whose agents
get ``spanrl.rollout.purpose=eval`` in OTEL_RESOURCE_ATTRIBUTES, so their spans are tagged as
evaluation in the lake. Rewards are the scorer's numbers the runner records per attempt.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from spanrl.errors import InputError
from spanrl.evaluate.config import EvalConfig
from spanrl.evaluate.stats import compare, summarize_policy
from spanrl.judge.config import JudgeConfig
from spanrl.layout import adapters_dir, latest_adapter_id
from spanrl.rollout.config import RolloutConfig
from spanrl.rollout.runner import RunSummary, resolve_run_id, run_rollouts
from spanrl.rollout.runs import OK, RunLog

BASE = "base"  # --policy base: the base model without adapter
PURPOSE = "spanrl.rollout.purpose=eval"  # resource attribute on every evaluation agent span
RESAMPLES, SEED = 10_000, 0


def split_policy(policy: str) -> tuple[str, str]:
    """``NAME=URL`` -> (NAME, URL), e.g. ``0004-2026...=http://127.0.0.1:8001/v1`` so eval.json names the
    adapter id that ``spanrl adapters promote ID --if-better`` looks for; a bare URL is its own name."""
    name, sep, url = policy.partition("=")
    return (name, url) if sep and "://" not in name else (policy, policy)


def served_adapter(data: Path, policy: str) -> str:
    """What ``spanrl serve`` must load for a policy that is not a URL: ``base``, or an adapter id
    (``LATEST`` is pinned to the id it names now, so a cycle finishing mid-eval does not change it)."""
    if policy == BASE:
        return BASE
    adapter = latest_adapter_id(data) if policy == "LATEST" else policy
    if adapter is None:
        raise InputError(f"--policy LATEST: {adapters_dir(data)} has no LATEST yet; train a cycle first, or "
                         f"evaluate the base model with --policy base")
    if not (adapters_dir(data) / adapter).is_dir():
        known = sorted(p.name for p in adapters_dir(data).glob("[0-9]*") if p.is_dir())
        raise InputError(f"--policy {policy!r}: no adapter {adapter} in {adapters_dir(data)} "
                         f"(`spanrl adapters list`: {', '.join(known[-5:]) or 'none'}); or give a /v1 URL")
    return adapter


def rollout_config(cfg: EvalConfig, policy: str) -> RolloutConfig:
    """The runner's options for one policy: a URL is ``--policy-url``; an adapter id, ``LATEST`` or
    ``base`` starts ``spanrl serve --model MODEL`` on that adapter for this policy's run."""
    policy = split_policy(policy)[1]
    attrs = ",".join(a for a in (cfg.env.get("OTEL_RESOURCE_ATTRIBUTES"), PURPOSE) if a)
    common = dict(tasks=cfg.tasks, n=cfg.n, command=list(cfg.command), data=cfg.data, concurrency=cfg.concurrency,
                  timeout_s=cfg.timeout_s, score=cfg.score, env={**cfg.env, "OTEL_RESOURCE_ATTRIBUTES": attrs},
                  purpose="eval", otlp=cfg.otlp)
    if policy.startswith(("http://", "https://")):
        rc = RolloutConfig(**common, policy_url=policy, adapter_id=policy)
    elif cfg.model is None:
        raise InputError(f"--policy {policy!r}: an adapter id, LATEST or base is served by `spanrl serve`, which "
                         "needs --model BASE_MODEL_FOLDER; or start a server yourself and pass its /v1 URL")
    else:
        adapter = served_adapter(cfg.data, policy)
        rc = RolloutConfig(**common, model=cfg.model, serve_adapter=adapter, adapter_id=adapter,
                           served_model_names=list(cfg.served_model_names), threads=cfg.threads)
    rc.run_id = resolve_run_id(rc)[:64]  # eval-...: purpose eval
    return rc


def judge_config(cfg: EvalConfig) -> JudgeConfig | None:
    """``--judge``: the judge's own config (its checks and defaults: retries, timeout, token budget)."""
    if cfg.judge_url is None:
        return None
    return JudgeConfig(judge_url=cfg.judge_url, judge_model=cfg.judge_model or "", data=cfg.data, rubric=cfg.rubric)


def sample_rewards(data: Path, run_id: str) -> dict[str, list[float]]:
    """Task id -> the scored rewards of its successful samples (the last attempt of each sample)."""
    last: dict[tuple[str, int], float] = {}
    for e in RunLog(data, run_id).events:
        if e.get("event") == "end" and e.get("status") == OK and e.get("score") is not None:
            last[(e["task_id"], e["sample"])] = float(e["score"])
    out: dict[str, list[float]] = defaultdict(list)
    for (task, _), value in sorted(last.items()):
        out[task].append(value)
    return dict(out)


def evaluate(cfg: EvalConfig, run=run_rollouts) -> dict[str, object]:  # noqa: ANN001 - the runner, swappable
    """Run every policy, compute the statistics, write ``OUT/eval.json``; returns its content."""
    runs: dict[str, RunSummary] = {}
    rewards: dict[str, dict[str, list[float]]] = {}
    names = [split_policy(p)[0] for p in cfg.policies]
    if len(set(names)) != len(names):
        raise InputError(f"--policy names repeat ({', '.join(names)}): give each policy its own NAME=URL")
    judge = judge_config(cfg)  # checked before any agent runs
    for policy, name in zip(cfg.policies, names, strict=True):
        rc = rollout_config(cfg, policy)
        runs[name] = run(rc)
        rewards[name] = sample_rewards(cfg.data, rc.run_id or "")
    judged = None
    if judge is not None:
        from spanrl.evaluate.judging import judge_rewards

        rewards, judged = judge_rewards(judge, cfg.tasks, {p: runs[p].run_id for p in names})
    for policy, name in zip(cfg.policies, names, strict=True):
        if not rewards[name]:
            raise InputError(f"--policy {policy}: no scored sample (run {runs[name].run_id}); see the failures above "
                             f"and {runs[name].run_dir}/logs")
    base = names[0]
    doc = {
        "config": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items() if k != "env"},
                   "resamples": RESAMPLES, "seed": SEED, "baseline": base},
        "policies": {p: {"run_id": runs[p].run_id, "rewards": rewards[p],
                         **summarize_policy(rewards[p], cfg.level, RESAMPLES, SEED)} for p in names},
        "comparisons": [{"baseline": base, "candidate": p, **compare(rewards[base], rewards[p], cfg.level, RESAMPLES,
                                                                     SEED)} for p in names[1:]],
    }
    if judged is not None:
        doc["judge"] = asdict(judged)
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "eval.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc
