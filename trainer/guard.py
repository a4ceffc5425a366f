"""The update guard (``--max-kl``, docs/trainer.md "Update guard"): an optimizer step that moves the
policy too far from where the cycle started is rolled back.

Why this guard: a user's pg run at lr 3e-4 reached grad norm 50 and a KL of 23 to the base by step 5,
and the adapter then emitted garbage. The grad-norm clip does not bound that: AdamW normalises the
gradient, so a step moves every LoRA weight by about lr whatever the norm, and the norm only explodes
once the policy is already wrecked. What wrecks a policy is its distance from the policy that
sampled the data, so that is what is measured: the mean per-token k3 KL between the policy a step
leaves and the policy at cycle start (pi_old, the behaviour policy of on-policy data; the base model
itself for a fresh adapter). It is read off the next step's training forward, on that step's tokens
(``kl_start``, free: the forward runs anyway), and for the last step by one no-grad forward of its own
tokens. Above the limit, or not finite, the LoRA weights and the AdamW state go back to what they were
before the step, as if it never happened; the next step, whose gradient was taken at the rolled-back
weights, is skipped, and training goes on from the step after. What it costs: a copy of the LoRA
weights and AdamW moments per step, pi_old once per cycle (free for ppo, which computes it anyway) and
one forward of the last step's batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spanrl.trainer.losses import kl_k3


@dataclass
class UpdateGuard:
    """Saves the LoRA weights and optimizer state before a step; restores them when the step's KL trips.

    ``max_kl`` 0 = off: nothing is saved or measured and training is exactly what it was without it.
    """

    torch: Any
    params: list[Any]
    opt: Any
    max_kl: float
    rolled_back: list[dict[str, float]] = field(default_factory=list)
    kl_max_accepted: float = 0.0
    _saved: tuple[list[Any], dict[Any, dict[str, Any]]] | None = None

    @property
    def on(self) -> bool:
        return self.max_kl > 0

    def save(self) -> None:
        """Copy the trainable weights and AdamW's moments (a LoRA's worth: small next to the model)."""
        if not self.on:
            return
        weights = [p.detach().clone() for p in self.params]
        state = {p: {k: v.clone() if self.torch.is_tensor(v) else v for k, v in s.items()}
                 for p, s in self.opt.state.items()}
        self._saved = (weights, state)

    def judge(self, row: dict[str, Any] | None, kl: float) -> bool:
        """The verdict on the step last taken (its metrics ``row``, updated in place) from the policy's KL
        measured after it; True when it was rolled back. A step that was not taken (skipped) has none."""
        if row is None or self._saved is None:
            return False
        row.update(self.check(row["step"], kl))
        return bool(row["rolled_back"])

    def check(self, step: int, kl: float) -> dict[str, Any]:
        """Keep the step or roll it back; returns the step-log fields (``guard_kl``, ``rolled_back``)."""
        if not self.on or self._saved is None:
            return {}
        tripped = not math.isfinite(kl) or kl > self.max_kl
        if tripped:
            weights, state = self._saved
            with self.torch.no_grad():
                for p, w in zip(self.params, weights, strict=True):
                    p.copy_(w)
            self.opt.state.clear()
            self.opt.state.update(state)
            self.rolled_back.append({"step": step, "kl": kl})
        else:
            self.kl_max_accepted = max(self.kl_max_accepted, kl)
        self._saved = None
        return {"guard_kl": kl, "rolled_back": int(tripped)}

    def summary(self, steps: int) -> dict[str, Any]:
        """What the cycle summary (training_state.json, cycles.jsonl, the console line) records."""
        return {"max_kl": self.max_kl, "steps": steps, "rolled_back_steps": len(self.rolled_back),
                "rolled_back": self.rolled_back, "kl_max_accepted": self.kl_max_accepted if self.on else None}


def step_kl(torch: Any, logp_of: Callable[[list[int]], Any], batches: list[list[int]], old: list[Any],
            all_reduce: Callable[[Any], None] | None) -> float:
    """Mean per-token k3 KL(pi || pi_old) over the response tokens of ``batches`` (this rank's share).

    ``logp_of(idx)`` gives the current policy's response log-probs of sequences ``idx`` (flat, in
    order); ``old`` the per-sequence log-probs at cycle start. Token sum and count are all-reduced so
    every rank takes the same decision. The same estimator as the ``kl`` metric (``losses.kl_k3``).
    """
    total = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for idx in batches:
            logp = logp_of(idx).float().cpu()
            ref = torch.cat([old[i] for i in idx])
            total[0] += float(kl_k3(logp, ref).double().sum())
            total[1] += logp.numel()
    if all_reduce is not None:
        all_reduce(total)
    return float(total[0] / total[1]) if total[1] > 0 else 0.0
