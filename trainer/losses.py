"""Training objectives as small pure tensor functions: ``(inputs, params) -> (loss, metrics)``.

Every tensor is flat over the response tokens of a micro-batch, shape ``(N,)``: no padding and no
masks reach the maths. ``weight`` carries the aggregation (``aggregation_weights``): the weights of
one optimizer step sum to 1, so micro-batch losses simply add up under gradient accumulation and
across data-parallel ranks.

Notation: pi = policy being trained (``logp``), mu = behaviour policy that sampled the tokens
(``behaviour_logp``, NaN where unknown), pi_old = the policy at cycle start (``old_logp``),
ref = the base model with the adapter disabled (``ref_logp``). A = advantage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from spanrl.config import default_of
from spanrl.trainer.config import TrainConfig


@dataclass
class LossInputs:
    logp: Tensor  # (N,) log pi(y_t), carries the gradient
    advantage: Tensor  # (N,) the call's advantage, copied to each of its tokens
    weight: Tensor  # (N,) aggregation weight of each token
    behaviour_logp: Tensor | None = None  # (N,) log mu(y_t), NaN where the engine gave none
    old_logp: Tensor | None = None  # (N,) log pi_old(y_t) (ppo)
    ref_logp: Tensor | None = None  # (N,) log ref(y_t) (KL)


@dataclass
class LossParams:
    """The loss knobs of a ``TrainConfig``; their defaults are that config's (one home)."""

    is_cap: float = default_of(TrainConfig, "is_cap")
    clip_eps: float = default_of(TrainConfig, "clip_eps")
    clip_eps_high: float = default_of(TrainConfig, "clip_eps_high")
    kl_coef: float = default_of(TrainConfig, "kl_coef")


Metrics = dict[str, float]
LossFn = Callable[[LossInputs, LossParams], tuple[Tensor, Metrics]]


def aggregation_weights(n_tokens: list[int], groups: list[str], mode: str) -> list[float]:
    """Per-token weight of each sequence so that one step's weights sum to 1.

    ``rollout``: each rollout (group) weighs 1/R, split evenly over all its response tokens, so a
    12-call rollout does not weigh 12x (Agent Lightning's per-rollout mean). ``sequence``: each
    call weighs 1/S, split over its tokens. ``token``: every token weighs 1/T.
    """
    if mode == "token":
        total = sum(n_tokens)
        return [1.0 / total] * len(n_tokens)
    if mode == "sequence":
        return [1.0 / (len(n_tokens) * n) for n in n_tokens]
    if mode == "rollout":
        per_group: dict[str, int] = {}
        for n, g in zip(n_tokens, groups, strict=True):
            per_group[g] = per_group.get(g, 0) + n
        return [1.0 / (len(per_group) * per_group[g]) for g in groups]
    raise ValueError(f"aggregation mode {mode!r}: choose rollout, sequence or token")


def truncated_is_weight(logp_num: Tensor, logp_den: Tensor | None, cap: float) -> tuple[Tensor, Tensor]:
    """``min(exp(num - den), cap)`` without gradient; 1 where ``den`` is NaN (unknown -> on-policy).

    Returns ``(weight, ratio)``; ``ratio`` is the untruncated ratio (NaN where unknown) for metrics.
    """
    num = logp_num.detach()
    if logp_den is None:
        ones = torch.ones_like(num)
        return ones, torch.full_like(num, float("nan"))
    ratio = torch.exp(num - logp_den)
    weight = torch.where(torch.isnan(logp_den), torch.ones_like(num), ratio.clamp(max=cap))
    return weight, ratio


def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(pi || ref): ``exp(r) - r - 1`` with ``r = ref - logp``; >= 0, 0 at pi = ref."""
    r = ref_logp - logp
    return torch.exp(r) - r - 1.0


def _finish(per_token: Tensor, x: LossInputs, p: LossParams, metrics: Metrics) -> tuple[Tensor, Metrics]:
    """Add the KL term, aggregate with the weights, fill the common metrics."""
    if p.kl_coef > 0 and x.ref_logp is not None:
        kl = kl_k3(x.logp, x.ref_logp)
        per_token = per_token + p.kl_coef * kl
        metrics["kl"] = float(kl.detach().mean())
    loss = (per_token * x.weight).sum()
    metrics["adv_mean"] = float(x.advantage.mean())
    metrics["logp_mean"] = float(x.logp.detach().mean())
    return loss, metrics


def _ratio_metrics(ratio: Tensor, capped: Tensor) -> Metrics:
    known = ~torch.isnan(ratio)
    if not bool(known.any()):
        return {}
    r = ratio[known]
    return {"ratio_mean": float(r.mean()), "ratio_max": float(r.max()), "trunc_frac": float(capped[known].float().mean())}


def pg_loss(x: LossInputs, p: LossParams) -> tuple[Tensor, Metrics]:
    """Token-level policy gradient: ``-sg(min(pi/mu, C)) * A * log pi`` (REINFORCE + truncated IS).

    Where mu is unknown the weight is 1 (the data is taken as on-policy). The weight carries no
    gradient, so a capped token still moves log pi, just by at most C times its advantage.
    """
    weight, ratio = truncated_is_weight(x.logp, x.behaviour_logp, p.is_cap)
    per_token = -weight * x.advantage * x.logp
    return _finish(per_token, x, p, _ratio_metrics(ratio, ratio > p.is_cap))


def ppo_loss(x: LossInputs, p: LossParams) -> tuple[Tensor, Metrics]:
    """Clipped surrogate against pi_old: ``-min(rho A, clip(rho, 1-eps, 1+eps_high) A)``, rho = pi/pi_old.

    A ratio past the clip bound on the advantage's side (rho > 1+eps_high with A > 0, rho < 1-eps
    with A < 0) passes no gradient. With behaviour log-probs, each token is also weighted by the
    truncated ``min(pi_old/mu, C)`` (decoupled PPO), without gradient.
    """
    if x.old_logp is None:
        raise ValueError("ppo_loss needs old_logp (the policy's log-probs at cycle start)")
    rho = torch.exp(x.logp - x.old_logp)
    unclipped = rho * x.advantage
    clipped = rho.clamp(1.0 - p.clip_eps, 1.0 + p.clip_eps_high) * x.advantage
    per_token = -torch.minimum(unclipped, clipped)
    is_weight, mu_ratio = truncated_is_weight(x.old_logp, x.behaviour_logp, p.is_cap)
    per_token = per_token * is_weight
    metrics = {
        "ratio_mean": float(rho.detach().mean()),
        "ratio_max": float(rho.detach().max()),
        "clip_frac": float((clipped < unclipped).float().mean()),
    }
    mu = _ratio_metrics(mu_ratio, mu_ratio > p.is_cap)
    metrics.update({f"mu_{k}": v for k, v in mu.items()})
    return _finish(per_token, x, p, metrics)


def sft_loss(x: LossInputs, p: LossParams) -> tuple[Tensor, Metrics]:
    """Negative log-likelihood of the (already filtered) good responses; the advantage is ignored."""
    return _finish(-x.logp, x, p, {})


@dataclass(frozen=True)
class LossSpec:
    """A loss and what it needs, declared once: the training loop asks, never tests loss names.

    ``old_logp``: log-probs of the policy at cycle start (computed before the first step).
    ``good_rollouts_only``: the rows are filtered to good rollouts first (``--sft-min-return``,
    ``--sft-top-k``). The reference log-probs (adapter disabled) are needed by any loss when
    ``kl_coef > 0``.
    """

    fn: LossFn
    old_logp: bool = False
    good_rollouts_only: bool = False


LOSSES: dict[str, LossSpec] = {
    "pg": LossSpec(pg_loss),
    "ppo": LossSpec(ppo_loss, old_logp=True),
    "sft": LossSpec(sft_loss, good_rollouts_only=True),
}
