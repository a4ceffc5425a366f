"""``spanrl prompts optimize``: better system prompts for an unmodified agent, from the lake.

Reads like the run: the agent's current prompt (its LATEST, else the system prompt most of its
rollouts in the lake ran with, stored as version ``original``) -> candidates (demonstrations from the
best rollouts of other tasks; with an optimizer model, APO critique -> rewrites, a beam over
``rounds``) staged as non-LATEST versions -> each scored by the agent run behind ``spanrl gateway
--prompts`` on the train split, successive halving (survivors get twice the samples) within the
budget -> the best against the current prompt on the validation split, paired over tasks
(``spanrl.evaluate.stats``) -> promoted only on a ``better`` verdict. docs/prompts.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from typing import Any

from spanrl.errors import InputError
from spanrl.evaluate.run import RESAMPLES, SEED, EvalConfig
from spanrl.evaluate.stats import BETTER, compare
from spanrl.prompts.candidates import Optimizer, as_turns, demo_sets, with_demos
from spanrl.prompts.config import OptimizeConfig
from spanrl.prompts.lake import Example, agent_examples, most_common_prompt
from spanrl.prompts.scoring import Score, Scorer, check_gateway, started_gateway
from spanrl.prompts.store import (
    PromptVersion,
    add_version,
    agent_dir,
    latest_version,
    promote_version,
    read_version,
    record_evidence,
    text_sha256,
)
from spanrl.rollout.tasks import Task, read_tasks


def split_tasks(tasks: list[Task], val_fraction: float, seed: int) -> tuple[list[Task], list[Task]]:
    """A seeded shuffle cut into train and validation (each at least one task)."""
    if len(tasks) < 2:
        raise InputError(f"{len(tasks)} task(s): optimizing needs at least 2 (a train and a validation split)")
    order = sorted(tasks, key=lambda t: t.task_id)
    random.Random(seed).shuffle(order)
    n_val = min(len(order) - 1, max(1, round(len(order) * val_fraction)))
    return order[n_val:], order[:n_val]


def current_prompt(cfg: OptimizeConfig, examples: list[Example]) -> PromptVersion:
    """The agent's LATEST, else the prompt its rollouts ran with, stored (and made LATEST: the gateway then
    puts in what the agent sends anyway) as the original the candidates are compared with."""
    if latest_version(cfg.data, cfg.agent) is not None:
        return read_version(cfg.data, cfg.agent)
    text = most_common_prompt(examples)
    if text is None:
        raise InputError(f"agent {cfg.agent!r}: no prompt in {agent_dir(cfg.data, cfg.agent)} and no rewarded rollout "
                         "in the lake whose calls name it (x-spanrl-agent, the model) with a system prompt; run the agent "
                         "through `spanrl gateway` with rewards (`spanrl rollout --score`), then `spanrl ingest`")
    return add_version(cfg.data, cfg.agent, text, {"parent": None, "method": "original",
                                                   "original_sha256": text_sha256(text)}, promote=True)


def _stage(cfg: OptimizeConfig, parent: PromptVersion, text: str, method: str, extra: dict[str, Any],
           turns: list[dict[str, Any]] | None = None) -> PromptVersion:
    """A candidate into the store (staged: LATEST does not move); its turns are the parent's unless given."""
    meta = {"parent": parent.version, "method": method,
            "original_sha256": parent.meta.get("original_sha256") or parent.meta.get("sha256"), **extra}
    return add_version(cfg.data, cfg.agent, text, meta, turns=parent.turns if turns is None else turns)


def _halve(scorer: Scorer, pool: list[str], n: int, reserve: int, keep: int) -> list[str]:
    """Successive halving on the train split: keep the better half, twice the samples, while affordable
    and more than ``keep`` (the beam) are left; the survivors, best first."""
    survivors = [v for v in pool if scorer.scores.get((v, "train"))]
    while len(survivors) > keep:
        survivors = sorted(survivors, key=lambda v: -(scorer.scores[(v, "train")].mean or 0.0))
        survivors = survivors[:math.ceil(len(survivors) / 2)]
        n *= 2
        if scorer.fit(survivors, "train", n, reserve) != survivors:
            break
        scorer.score_all(survivors, "train", n)
    return sorted(survivors, key=lambda v: -(scorer.scores[(v, "train")].mean or 0.0))


def optimize(cfg: OptimizeConfig) -> dict[str, Any]:
    """The whole optimization; returns the report (also ``DATA/prompts/<agent>/_optimize/report.json``)."""
    tasks = read_tasks(cfg.tasks)
    train, val = split_tasks(tasks, cfg.val_fraction, cfg.seed)
    work = agent_dir(cfg.data, cfg.agent) / "_optimize"
    work.mkdir(parents=True, exist_ok=True)
    splits = {"train": work / "train.jsonl", "validation": work / "validation.jsonl"}
    for name, part in (("train", train), ("validation", val)):
        splits[name].write_text("".join(json.dumps(t.line) + "\n" for t in part))
    started = time.monotonic()
    examples = agent_examples(cfg.data, cfg.agent)
    current = current_prompt(cfg, examples)
    if not examples:
        examples = agent_examples(cfg.data, cfg.agent, current.meta.get("original_sha256"))
    print(f"spanrl prompts optimize: read the lake in {time.monotonic() - started:.1f} s", flush=True)
    reserve = 2 * len(val) * cfg.n  # the final paired comparison on the validation split
    if cfg.budget_rollouts < reserve + 2 * len(train) * cfg.n:
        raise InputError(f"--budget-rollouts {cfg.budget_rollouts}: scoring the current prompt and one candidate on "
                         f"{len(train)} train and {len(val)} validation task(s) at --n {cfg.n} takes "
                         f"{reserve + 2 * len(train) * cfg.n}; raise it or give fewer tasks")
    optimizer = Optimizer(cfg.optimizer_url, cfg.optimizer_model) if cfg.optimizer_url and cfg.optimizer_model else None
    base = EvalConfig(tasks=cfg.tasks, policies=["-"], command=list(cfg.command), score=cfg.score, n=cfg.n,
                      data=cfg.data, level=cfg.level, concurrency=cfg.concurrency, timeout_s=cfg.timeout_s, env=cfg.env)
    with contextlib.ExitStack() as stack:
        root = cfg.gateway or stack.enter_context(started_gateway(cfg.data, cfg.upstream or "", work / "gateway.log"))
        if cfg.gateway:
            check_gateway(root, cfg.data, cfg.agent, current.version)
        scorer = Scorer(base, cfg.agent, root, splits, cfg.budget_rollouts, cfg.upstream or cfg.gateway)
        report = _search(cfg, scorer, current, examples, optimizer, {t.input.strip() for t in tasks} |
                         {t.task_id for t in tasks}, reserve)
    (work / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _search(cfg: OptimizeConfig, scorer: Scorer, current: PromptVersion, examples: list[Example],
            optimizer: Optimizer | None, scored_tasks: set[str], reserve: int) -> dict[str, Any]:
    staged: dict[str, PromptVersion] = {}
    critiques: dict[str, str] = {}
    for i, picked in enumerate(demo_sets(examples, scored_tasks, cfg.demos, cfg.demo_sets, cfg.seed)):
        meta = {"demonstrations": len(picked), "demo_set": i + 1, "rollout_ids": [e.rollout_id for e in picked]}
        if cfg.demo_form in ("text", "both"):
            v = _stage(cfg, current, with_demos(current.text, picked), "demonstrations", meta)
            staged[v.version] = v
        shown = [e for e in picked if e.turns]  # a rollout the lake cannot give as chat is left out, and said so
        if cfg.demo_form in ("turns", "both") and shown:
            v = _stage(cfg, current, current.text, "demonstration turns",
                       {**meta, "demonstrations": len(shown), "rollout_ids": [e.rollout_id for e in shown],
                        "left_out": [e.rollout_id for e in picked if not e.turns]},
                       turns=current.turns + as_turns(shown))
            staged[v.version] = v
    print(f"spanrl prompts optimize: agent {cfg.agent!r}, current version {current.version}, "
          f"{len(examples)} rewarded rollout(s) in the lake", flush=True)
    parents, new, first = [current], list(staged), [current.version]
    for round_ in range(cfg.rounds):
        if optimizer is not None:
            for parent in parents:
                own = [e for e in examples if e.system_prompt == parent.text] or examples
                critique, texts = optimizer.expand(parent.text, own, cfg.candidates)
                for text in texts:
                    v = _stage(cfg, parent, text, "apo", {"critique": critique, "round": round_ + 1,
                                                          "optimizer_model": cfg.optimizer_model})
                    critiques[v.version] = critique
                    if v.version not in staged and v.version != current.version:
                        staged[v.version] = v
                        new.append(v.version)
        scorer.score_all(scorer.fit([*first, *new], "train", cfg.n, reserve), "train", cfg.n)
        first = []
        pool = [v for v in staged if (v, "train") in scorer.scores]
        beam = _halve(scorer, pool, cfg.n, reserve, cfg.beam)[:cfg.beam] if pool else []
        parents, new = [staged[v] for v in beam], []
        if optimizer is None:
            break
    return _decide(cfg, scorer, current, staged, critiques)


def _decide(cfg: OptimizeConfig, scorer: Scorer, current: PromptVersion, staged: dict[str, PromptVersion],
            critiques: dict[str, str]) -> dict[str, Any]:
    cur_train = scorer.scores[(current.version, "train")]
    ranked = sorted((v for v in staged if (v, "train") in scorer.scores),
                    key=lambda v: (-(scorer.scores[(v, "train")].mean or 0.0), int(v)))
    report: dict[str, Any] = {"agent": cfg.agent, "current": current.version, "budget_rollouts": cfg.budget_rollouts,
                              "used_rollouts": scorer.used, "train": {v: _summary(s) for (v, sp), s in
                                                                      scorer.scores.items() if sp == "train"},
                              "winner": None, "verdict": None, "promoted": False}
    if not ranked:
        report["verdict"] = "no candidate (no optimizer, and no rewarded rollout of another task for demonstrations)"
        print(f"spanrl prompts optimize: {report['verdict']}; LATEST stays {current.version}")
        return report
    best = ranked[0]
    report["winner"] = best
    if (scorer.scores[(best, "train")].mean or 0.0) <= (cur_train.mean or 0.0):
        report["verdict"] = "not better on the train split"
    else:
        cur_val, best_val = scorer.score_all([current.version, best], "validation", cfg.n)
        try:
            comparison = compare(cur_val.rewards, best_val.rewards, cfg.level, RESAMPLES, SEED)
        except ValueError as exc:
            comparison = {"verdict": f"not compared: {exc}"}
        report["validation"] = {"current": _summary(cur_val), "candidate": _summary(best_val), "comparison": comparison}
        report["verdict"] = comparison["verdict"]
    evidence = {"verdict": report["verdict"], "baseline": current.version, "train": {
        "current": _summary(cur_train), "candidate": _summary(scorer.scores[(best, "train")])},
        **({"validation": report["validation"]} if "validation" in report else {}),
        "rollout_ids": scorer.rollout_ids(best), "baseline_rollout_ids": scorer.rollout_ids(current.version)}
    record_evidence(cfg.data, cfg.agent, best, evidence)
    report["used_rollouts"] = scorer.used  # the validation runs included
    if report["verdict"] == BETTER and cfg.promote_if_better:
        promote_version(cfg.data, cfg.agent, best)
        report["promoted"] = True
    cmp = report.get("validation", {}).get("comparison", {})
    print(f"spanrl prompts optimize: best candidate {best} ({staged[best].meta.get('method')}) vs {current.version}: "
          f"{report['verdict']}" + (f", diff {cmp['diff']:+.3f} [{cmp['ci'][0]:+.3f}, {cmp['ci'][1]:+.3f}]"
                                    if "diff" in cmp else "")
          + (f"; promoted, LATEST = {best}" if report["promoted"] else f"; LATEST stays {current.version}"), flush=True)
    return report


def _summary(score: Score) -> dict[str, Any]:
    return {"mean": score.mean, "tasks": len(score.rewards), "samples": sum(len(v) for v in score.rewards.values()),
            "run_id": score.run_id}
