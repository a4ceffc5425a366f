"""What each optimizer step logs: token-weighted metric sums (all-reducible), the metrics.jsonl row,
and the progress bar on rank 0."""

from __future__ import annotations

import math
from typing import Any

SUM_KEYS = ("adv_mean", "logp_mean", "kl", "ratio_mean", "trunc_frac", "clip_frac", "mu_ratio_mean", "mu_trunc_frac",
            "kl_start")  # kl_start: KL to the cycle start, the update guard's measurement (guard.py)
MAX_KEYS = ("ratio_max", "mu_ratio_max")


def new_sums(torch: Any) -> tuple[Any, Any]:
    """(sums, maxes): loss, tokens, then (value*tokens, tokens) per SUM_KEYS entry; a max per MAX_KEYS."""
    return (torch.zeros(2 + 2 * len(SUM_KEYS), dtype=torch.float64),
            torch.full((len(MAX_KEYS),), -math.inf, dtype=torch.float64))


def accumulate(sums: Any, maxes: Any, loss: float, tokens: int, m: dict[str, float]) -> None:
    sums[0] += loss
    sums[1] += tokens
    for k, key in enumerate(SUM_KEYS):
        if key in m:
            sums[2 + 2 * k] += m[key] * tokens
            sums[3 + 2 * k] += tokens
    for k, key in enumerate(MAX_KEYS):
        if key in m:
            maxes[k] = max(float(maxes[k]), m[key])


def token_mean(sums: Any, key: str) -> float:
    """The token-weighted mean of one SUM_KEYS metric over the step (all ranks once all-reduced); 0 if none."""
    k = SUM_KEYS.index(key)
    return float(sums[2 + 2 * k] / sums[3 + 2 * k]) if sums[3 + 2 * k] > 0 else 0.0


def metrics_row(n: int, lr: float, rollouts: int, grad_norm: float, sums: Any, maxes: Any, seconds: float,
                cpu_seconds: float) -> dict[str, Any]:
    row: dict[str, Any] = {"step": n + 1, "lr": lr, "rollouts": rollouts, "loss": float(sums[0]),
                           "response_tokens": int(sums[1]), "grad_norm": grad_norm, "seconds": round(seconds, 4),
                           "cpu_s": round(cpu_seconds, 4),
                           "tokens_per_s": round(float(sums[1]) / max(seconds, 1e-9), 1)}
    for k, key in enumerate(SUM_KEYS):
        if sums[3 + 2 * k] > 0:
            row[key] = float(sums[2 + 2 * k] / sums[3 + 2 * k])
    for k, key in enumerate(MAX_KEYS):
        if maxes[k] > -math.inf:
            row[key] = float(maxes[k])
    return row


class StepProgress:
    """A rich progress bar with steps, response tokens/s and ETA (stderr; off on other ranks)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("train"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                            TimeRemainingColumn(), console=Console(stderr=True), transient=False)
        self.task = self.bar.add_task("train", total=total, info="")
        self.bar.start()

    def advance(self, row: dict[str, Any]) -> None:
        if self.bar is not None:
            info = f"loss {row['loss']:.4f}  {row['tokens_per_s']:.0f} tok/s"
            if row.get("rolled_back"):  # the update guard undid this step (--max-kl)
                info += f"  rolled back (KL {row['guard_kl']:.3g})"
            self.bar.update(self.task, advance=1, info=info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
