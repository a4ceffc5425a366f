"""Scoring a stored prompt version: the unmodified agent run by the rollout runner behind a
``spanrl gateway --prompts`` through the version's pinned URL (``GATEWAY/p/<agent>/<version>/v1``),
rewards from the scorer, as ``spanrl eval`` runs a policy (its runs are ``eval-…`` runs whose
rollouts are tagged ``spanrl.rollout.purpose = eval``: kept out of training snapshots).

The budget counts agent attempts; a version scored again with more samples resumes its run (the run
id does not depend on ``n``), so only the new samples run and count (successive halving). The run id
names what the samples measure (agent, version and its text, split, command, and the model behind the
gateway), not the gateway's URL: a gateway started on a free port for each ``optimize`` would
otherwise make a re-run after a stop score everything again.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from urllib.parse import quote

from spanrl.errors import InputError
from spanrl.evaluate.run import EvalConfig, rollout_config, sample_rewards
from spanrl.processes import stop_group
from spanrl.prompts.store import read_version, text_sha256, turns_sha256
from spanrl.rollout.runner import run_rollouts
from spanrl.rollout.runs import RunLog, derive_run_id
from spanrl.rollout.services import gateway_info

GATEWAY_START_S = 120.0
_READY = re.compile(r"spanrl gateway: (http://\S+)/v1 ->")


@dataclass
class Score:
    """One version's rewards on one split: task id -> the scored samples."""

    version: str
    split: str
    n: int = 0
    rewards: dict[str, list[float]] = field(default_factory=dict)
    run_id: str = ""

    @property
    def mean(self) -> float | None:
        means = [fmean(v) for v in self.rewards.values() if v]
        return fmean(means) if means else None


@contextlib.contextmanager
def started_gateway(data: Path, upstream: str, log_path: Path) -> Iterator[str]:
    """``spanrl gateway --prompts --upstream URL`` on a free port writing ``data``; yields its root URL."""
    cmd = [sys.executable, "-m", "spanrl", "gateway", "--prompts", "--data", str(data), "--upstream", upstream,
           "--port", "0"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        start = log.tell()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + GATEWAY_START_S
        while True:
            text = log_path.read_bytes()[start:].decode(errors="replace")
            if match := _READY.search(text):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise InputError(f"`spanrl gateway --prompts` did not start (log: {log_path}):\n{text[-1500:]}")
            time.sleep(0.2)
        yield match.group(1)
    finally:
        stop_group(proc, grace_s=30.0)


def pinned_url(root: str, agent: str, version: str) -> str:
    return f"{root.rstrip('/')}/p/{quote(agent, safe='')}/{version}/v1"


def check_gateway(root: str, data: Path, agent: str, version: str) -> None:
    """A ``--gateway`` given by the user must apply pinned versions (``--prompts``) from this data root."""
    info = gateway_info(pinned_url(root, agent, version))
    if info is None:
        raise InputError(f"--gateway {root}: no spanrl gateway with --prompts answers at {pinned_url(root, agent, version)}"
                         "; start it with `spanrl gateway --prompts --data DATA --upstream URL`")
    if info.get("data") != str(Path(data).resolve()):
        raise InputError(f"--gateway {root} reads prompts from {info.get('data')}, not {Path(data).resolve()}; "
                         "start it with the same --data")


class Scorer:
    """Runs versions on splits within a budget of agent attempts. ``policy`` names the model the
    gateway forwards to (``--upstream``, else the ``--gateway`` given) for the run ids."""

    def __init__(self, base: EvalConfig, agent: str, root: str, splits: dict[str, Path], budget: int,
                 policy: str | None = None) -> None:
        self.base, self.agent, self.root, self.splits, self.budget = base, agent, root, splits, budget
        self.policy = (policy or root).rstrip("/")
        self.used = 0
        self.scores: dict[tuple[str, str], Score] = {}
        self.tasks = {name: sum(1 for line in path.read_text().splitlines() if line.strip())
                      for name, path in splits.items()}

    def cost(self, version: str, split: str, n: int) -> int:
        """Attempts still to run for ``n`` samples per task of ``split`` (retries not counted)."""
        have = self.scores.get((version, split))
        return self.tasks[split] * max(0, n - (have.n if have else 0))

    def fit(self, versions: list[str], split: str, n: int, reserve: int = 0) -> list[str]:
        """The versions, in order, whose runs fit the budget together (``reserve`` kept for later)."""
        out, planned = [], self.used + reserve
        for v in versions:
            if planned + self.cost(v, split, n) <= self.budget:
                out.append(v)
                planned += self.cost(v, split, n)
        return out

    def score(self, version: str, split: str, n: int, concurrency: int | None = None) -> Score:
        cost = self.cost(version, split, n)
        cfg = EvalConfig(**{**self.base.__dict__, "tasks": self.splits[split], "n": n,
                            "concurrency": concurrency or self.base.concurrency,
                            "policies": [pinned_url(self.root, self.agent, version)]})
        rc = rollout_config(cfg, cfg.policies[0])
        rc.run_id = self.run_id(version, split)
        started = time.monotonic()
        summary = run_rollouts(rc)
        self.used += cost
        score = Score(version, split, n, sample_rewards(self.base.data, summary.run_id), summary.run_id)
        self.scores[(version, split)] = score
        mean = score.mean
        print(f"  version {version} on {split}: {'no scored sample' if mean is None else f'mean reward {mean:.3f}'} "
              f"({sum(len(v) for v in score.rewards.values())} samples, {time.monotonic() - started:.1f} s, "
              f"{self.used}/{self.budget} of the budget)",
              flush=True)
        return score

    def run_id(self, version: str, split: str) -> str:
        """``eval-…`` (held out of training) from the version's text, not the gateway's port."""
        stored = read_version(self.base.data, self.agent, version)
        key = json.dumps({"agent": self.agent, "version": version, "upstream": self.policy,
                          "prompt_sha256": text_sha256(stored.text),
                          **({"turns_sha256": turns_sha256(stored.turns)} if stored.turns else {})}, sort_keys=True)
        return f"eval-{derive_run_id(self.splits[split], key, list(self.base.command))}"

    def score_all(self, versions: list[str], split: str, n: int) -> list[Score]:
        """Several versions at once (one run each, in threads sharing ``concurrency``): the slow part of
        a run is its agent processes, not this process."""
        if len(versions) <= 1:
            return [self.score(v, split, n) for v in versions]
        from concurrent.futures import ThreadPoolExecutor

        share = max(1, self.base.concurrency // len(versions))
        with ThreadPoolExecutor(len(versions)) as pool:
            return list(pool.map(lambda v: self.score(v, split, n, share), versions))

    def rollout_ids(self, version: str) -> list[str]:
        """The rollouts a version was scored on (every split), for its meta.json."""
        ids = []
        for (v, _), s in sorted(self.scores.items()):
            if v == version:
                ids += [e["rollout_id"] for e in RunLog(self.base.data, s.run_id).events
                        if e.get("event") == "end" and e.get("score") is not None]
        return ids
