"""spanrl's token-aggregated SFT loss equals TRL's completion-only loss on the same batch (varied lengths).

Why: bench/train.py quotes spanrl's speed against TRL's SFTTrainer; the ratio only means something if both
optimise the same objective. TRL (completion_only_loss, per-batch token count) averages the cross-entropy
over every completion token of the padded batch; computed here by hand from the same logits (TRL is not a
test dependency).
"""

from __future__ import annotations

import torch

from spanrl.trainer.losses import LossInputs, LossParams, aggregation_weights, sft_loss


def test_token_agg_sft_equals_trl_completion_only_mean_with_varied_lengths() -> None:
    gen = torch.Generator().manual_seed(0)
    vocab, lengths, prompts = 11, [9, 4, 7, 2], [3, 1, 4, 1]
    width = max(lengths)
    ids = torch.randint(0, vocab, (len(lengths), width), generator=gen)
    logits = torch.randn(len(lengths), width, vocab, generator=gen)
    # TRL: labels shifted by one, prompt and padding masked with -100, sum / number of completion tokens
    labels = torch.full((len(lengths), width), -100)
    for r, (n, p) in enumerate(zip(lengths, prompts, strict=True)):
        labels[r, p:n] = ids[r, p:n]
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab), labels[:, 1:].reshape(-1),
                                           ignore_index=-100, reduction="sum")
    trl = ce / (labels[:, 1:] != -100).sum()
    # spanrl: per-token log-probs of each response, token aggregation weights (1/T each)
    logp_all = torch.log_softmax(logits, dim=-1)
    per_seq = [logp_all[r, p - 1 : n - 1].gather(-1, ids[r, p:n, None]).squeeze(-1)
               for r, (n, p) in enumerate(zip(lengths, prompts, strict=True))]
    n_tokens = [len(x) for x in per_seq]
    w = aggregation_weights(n_tokens, ["a", "b", "c", "d"], "token")
    weight = torch.cat([torch.full((n,), wi) for n, wi in zip(n_tokens, w, strict=True)])
    logp = torch.cat(per_seq)
    ours, _ = sft_loss(LossInputs(logp=logp, advantage=torch.zeros_like(logp), weight=weight), LossParams(kl_coef=0.0))
    assert torch.allclose(ours, trl, atol=1e-6)
    # the per-sequence mean (``sequence``) is a different objective once lengths vary: the test can fail
    w_seq = aggregation_weights(n_tokens, ["a", "b", "c", "d"], "sequence")
    weight_seq = torch.cat([torch.full((n,), wi) for n, wi in zip(n_tokens, w_seq, strict=True)])
    other, _ = sft_loss(LossInputs(logp=logp, advantage=torch.zeros_like(logp), weight=weight_seq), LossParams(kl_coef=0.0))
    assert not torch.allclose(other, trl, atol=1e-3)
