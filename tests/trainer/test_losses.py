"""Loss maths against values computed by hand (small tensors, no model)."""

from __future__ import annotations

import math

import pytest
import torch

from spanrl.trainer.logprobs import selective_log_softmax
from spanrl.trainer.losses import (
    LOSSES,
    LossInputs,
    LossParams,
    aggregation_weights,
    kl_k3,
    pg_loss,
    ppo_loss,
    sft_loss,
    truncated_is_weight,
)

NAN = float("nan")


def _logp(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, requires_grad=True)


def test_pg_loss_matches_hand_computation_and_gradient() -> None:
    logp = _logp([-1.0, -2.0, -0.5])
    x = LossInputs(logp=logp, advantage=torch.tensor([1.0, -1.0, 2.0]), weight=torch.tensor([0.5, 0.25, 0.25]))
    loss, metrics = pg_loss(x, LossParams())
    # -(0.5*1*-1 + 0.25*-1*-2 + 0.25*2*-0.5) = -(-0.5 + 0.5 - 0.25) = 0.25
    assert float(loss) == pytest.approx(0.25)
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-0.5, 0.25, -0.5])  # -w*A
    assert metrics["adv_mean"] == pytest.approx(2 / 3)


def test_pg_zero_advantage_gives_zero_gradient() -> None:
    logp = _logp([-1.0, -3.0])
    loss, _ = pg_loss(LossInputs(logp, torch.zeros(2), torch.tensor([0.5, 0.5])), LossParams())
    loss.backward()
    assert logp.grad.abs().sum() == 0


def test_pg_importance_weight_is_truncated_at_cap_without_gradient_through_it() -> None:
    logp = _logp([-1.0, -1.0, -1.0])
    behaviour = torch.tensor([-1.0 - math.log(4.0), -1.0 + math.log(2.0), NAN])  # ratios 4 (capped), 0.5, unknown
    x = LossInputs(logp, torch.ones(3), torch.ones(3) / 3, behaviour_logp=behaviour)
    loss, metrics = pg_loss(x, LossParams(is_cap=2.0))
    loss.backward()
    # weights: min(4, 2) = 2, 0.5, 1 (unknown -> on-policy); gradient = -w*A*weight, weight detached
    assert logp.grad.tolist() == pytest.approx([-2 / 3, -0.5 / 3, -1 / 3])
    assert float(loss) == pytest.approx(-(2 * -1 + 0.5 * -1 + 1 * -1) / 3)
    assert metrics["trunc_frac"] == pytest.approx(0.5)
    assert metrics["ratio_max"] == pytest.approx(4.0)


def test_truncated_is_weight_without_behaviour_is_one() -> None:
    w, ratio = truncated_is_weight(torch.tensor([-1.0, -2.0]), None, 2.0)
    assert w.tolist() == [1.0, 1.0]
    assert torch.isnan(ratio).all()


@pytest.mark.parametrize(
    ("ratio", "adv", "grad_zero"),
    [
        (1.5, 1.0, True),  # past 1+eps_high on the advantage's side: clipped, no gradient
        (0.5, -1.0, True),  # below 1-eps with A<0: clipped, no gradient
        (1.1, 1.0, False),  # inside the band
        (0.5, 1.0, False),  # below 1-eps but A>0: the unclipped term is the min, gradient flows
        (1.5, -1.0, False),  # above 1+eps_high but A<0: unclipped is the min, gradient flows
    ],
)
def test_ppo_clipping(ratio: float, adv: float, grad_zero: bool) -> None:
    old = torch.tensor([-1.0])
    logp = _logp([-1.0 + math.log(ratio)])
    x = LossInputs(logp, torch.tensor([adv]), torch.ones(1), old_logp=old)
    loss, metrics = ppo_loss(x, LossParams(clip_eps=0.2, clip_eps_high=0.28))
    loss.backward()
    if grad_zero:
        assert float(logp.grad) == 0.0
        assert metrics["clip_frac"] == 1.0
        bound = 1.28 if ratio > 1 else 0.8
        assert float(loss) == pytest.approx(-bound * adv)
    else:
        # d/dlogp of -rho*A = -rho*A
        assert float(logp.grad) == pytest.approx(-ratio * adv)
        assert float(loss) == pytest.approx(-ratio * adv)


def test_ppo_decoupled_weight_uses_truncated_old_over_behaviour() -> None:
    old = torch.tensor([-1.0])
    logp = _logp([-1.0])  # rho = 1
    mu = torch.tensor([-1.0 - math.log(3.0)])  # pi_old/mu = 3 -> capped at 2
    loss, _ = ppo_loss(LossInputs(logp, torch.tensor([1.0]), torch.ones(1), behaviour_logp=mu, old_logp=old),
                       LossParams(is_cap=2.0))
    loss.backward()
    assert float(loss) == pytest.approx(-2.0)
    assert float(logp.grad) == pytest.approx(-2.0)


def test_ppo_requires_old_logprobs() -> None:
    with pytest.raises(ValueError, match="old_logp"):
        ppo_loss(LossInputs(_logp([-1.0]), torch.ones(1), torch.ones(1)), LossParams())


def test_sft_loss_is_weighted_nll_ignoring_advantage() -> None:
    logp = _logp([-1.0, -3.0])
    loss, _ = sft_loss(LossInputs(logp, torch.tensor([-5.0, 5.0]), torch.tensor([0.25, 0.75])), LossParams())
    assert float(loss) == pytest.approx(0.25 + 2.25)
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-0.25, -0.75])


def test_kl_k3_zero_at_reference_positive_elsewhere_and_added_with_coef() -> None:
    ref = torch.tensor([-1.0, -2.0])
    assert kl_k3(ref.clone(), ref).tolist() == [0.0, 0.0]
    logp = _logp([-1.0, -2.0])
    loss, metrics = sft_loss(LossInputs(logp, torch.zeros(2), torch.ones(2) / 2, ref_logp=ref), LossParams(kl_coef=0.5))
    loss.backward()
    assert metrics["kl"] == 0.0
    assert logp.grad.tolist() == pytest.approx([-0.5, -0.5])  # KL gradient is 0 at pi = ref
    r = torch.tensor(-1.0 - -1.5)  # logp = -1.5, ref = -1
    assert float(kl_k3(torch.tensor([-1.5]), torch.tensor([-1.0]))) == pytest.approx(float(torch.exp(r) - r - 1))
    assert float(kl_k3(torch.tensor([-1.5]), torch.tensor([-1.0]))) > 0


def test_aggregation_weights_per_rollout_sequence_token() -> None:
    n_tokens, groups = [3, 1, 2], ["a", "a", "b"]  # rollout a: 2 calls, 4 tokens; rollout b: 1 call, 2 tokens
    w = aggregation_weights(n_tokens, groups, "rollout")
    assert w == pytest.approx([1 / 8, 1 / 8, 1 / 4])
    per_rollout = {"a": 3 * w[0] + 1 * w[1], "b": 2 * w[2]}
    assert per_rollout == pytest.approx({"a": 0.5, "b": 0.5})  # each rollout weighs the same
    assert aggregation_weights(n_tokens, groups, "sequence") == pytest.approx([1 / 9, 1 / 3, 1 / 6])
    assert aggregation_weights(n_tokens, groups, "token") == pytest.approx([1 / 6] * 3)
    with pytest.raises(ValueError):
        aggregation_weights(n_tokens, groups, "bogus")


def test_loss_registry_keys_match_cli_choices() -> None:
    from spanrl.trainer.config import LOSS_CHOICES

    assert set(LOSSES) == set(LOSS_CHOICES)


def test_selective_log_softmax_equals_naive() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 11, generator=g)
    targets = torch.randint(0, 11, (7,), generator=g)
    naive = torch.log_softmax(logits, -1).gather(-1, targets[:, None]).squeeze(-1)
    assert torch.allclose(selective_log_softmax(logits, targets), naive, atol=1e-6)
