"""Statistics of ``spanrl eval``: per-policy means with intervals, paired differences, verdicts.

Pure functions, no I/O. Tasks are the unit of resampling: each task's reward is the mean over its N
samples, and a pair of policies is compared on the tasks both completed (a paired design removes the
task-difficulty variance that an unpaired comparison would count as noise).
"""

from __future__ import annotations

import random
from statistics import fmean

BETTER, WORSE, NO_DIFFERENCE = "better", "worse", "no detectable difference"


def task_means(samples: dict[str, list[float]]) -> dict[str, float]:
    """Task id -> mean of its sample rewards (tasks without any scored sample are left out)."""
    return {task: fmean(values) for task, values in samples.items() if values}


def bootstrap_interval(values: list[float], level: float = 0.95, resamples: int = 10_000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling the values (tasks) with replacement.
    Seeded, so the same rewards always give the same interval."""
    if not values:
        raise ValueError("no values to resample: every task lacks a scored sample")
    rng = random.Random(seed)
    k = len(values)
    means = sorted(fmean(rng.choices(values, k=k)) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = means[int(tail * (resamples - 1))]
    hi = means[int(round((1.0 - tail) * (resamples - 1)))]
    return lo, hi


def verdict(interval: tuple[float, float]) -> str:
    """``better`` when the interval of (candidate - baseline) lies above 0, ``worse`` below, else none."""
    lo, hi = interval
    if lo > 0:
        return BETTER
    if hi < 0:
        return WORSE
    return NO_DIFFERENCE


def summarize_policy(samples: dict[str, list[float]], level: float, resamples: int, seed: int) -> dict[str, object]:
    """Mean reward over tasks and its bootstrap interval (over tasks)."""
    means = task_means(samples)
    values = list(means.values())
    lo, hi = bootstrap_interval(values, level, resamples, seed)
    return {"mean": fmean(values), "ci": [lo, hi], "tasks": len(values),
            "samples": sum(len(v) for v in samples.values())}


def compare(baseline: dict[str, list[float]], candidate: dict[str, list[float]], level: float,
            resamples: int, seed: int) -> dict[str, object]:
    """Paired difference candidate - baseline over the tasks both scored, its interval and verdict."""
    a, b = task_means(baseline), task_means(candidate)
    common = sorted(set(a) & set(b))
    if not common:
        raise ValueError("the two policies share no scored task; nothing to compare")
    diffs = [b[t] - a[t] for t in common]
    interval = bootstrap_interval(diffs, level, resamples, seed)
    return {"diff": fmean(diffs), "ci": list(interval), "tasks": len(common), "level": level,
            "verdict": verdict(interval)}
