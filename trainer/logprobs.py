"""Log-probs of response tokens only, in chunks: never a full ``T x V`` float32 logits tensor.

The decoder runs once over the padded micro-batch; we keep the hidden states at the positions
that predict a response token, then apply the output head chunk by chunk and take a selective
log-softmax (``logit[target] - logsumexp(logits)``). Under autograd each chunk is checkpointed, so
backward recomputes one ``chunk x V`` block at a time instead of keeping them all (TRL's
``chunked_nll`` idea). Prompt positions never reach the head at all.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from spanrl.trainer.data import Sequence, bucket_by_tokens, collate
from spanrl.trainer.distributed import all_reduce_cpu

CHUNK_ELEMENTS = 1 << 25  # logits per chunk: 128 MiB in float32
MIN_CHUNK_ROWS = 256


def selective_log_softmax(logits: Tensor, targets: Tensor) -> Tensor:
    """``log_softmax(logits)[i, targets[i]]`` without keeping the full log-softmax.

    Same as ``torch.log_softmax(logits.float(), -1).gather(-1, targets[:, None]).squeeze(-1)``;
    the fused cross-entropy kernel is the fastest way to it on CPU and GPU.
    """
    return -F.cross_entropy(logits.float(), targets, reduction="none")


def _head_logp(hidden: Tensor, targets: Tensor, head: nn.Module, inv_temperature: Tensor | None = None) -> Tensor:
    logits = head(hidden)
    if inv_temperature is not None:
        logits = logits.float() * inv_temperature[:, None]
    return selective_log_softmax(logits, targets)


def causal_lm_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """The decoder (hidden states) and the output head of a (peft-wrapped) causal LM."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def response_logprobs(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    pos_b: Tensor,
    pos_t: Tensor,
    targets: Tensor,
    chunk: int | None = None,
    inv_temperature: Tensor | None = None,
) -> Tensor:
    """Flat ``(N,)`` log-probs of ``targets``, predicted from hidden state ``[pos_b, pos_t]``.

    ``pos_t`` is the position *before* each response token (causal shift done by the caller).
    ``chunk`` rows go through the head at once (default: about 128 MiB of float32 logits).
    ``inv_temperature`` (N,) scores each token under softmax(logits / T), the distribution the
    engine sampled from, so ratios against its log-probs are 1 on-policy. Gradients flow when grad mode is on; the LoRA layers live inside the decoder, so peft's
    ``disable_adapter()`` context applies here as it does to ``model(...)``.
    """
    decoder, head = causal_lm_parts(model)
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    picked = hidden[pos_b, pos_t]  # (N, H)
    if chunk is None:
        chunk = max(MIN_CHUNK_ROWS, CHUNK_ELEMENTS // head.weight.shape[0])
    # one chunk holds all its logits anyway; checkpointing pays only when there are several
    recompute = torch.is_grad_enabled() and picked.requires_grad and picked.shape[0] > chunk
    out = []
    for start in range(0, picked.shape[0], chunk):
        h, t = picked[start : start + chunk], targets[start : start + chunk]
        it = inv_temperature[start : start + chunk] if inv_temperature is not None else None
        if recompute:
            out.append(checkpoint(_head_logp, h, t, head, it, use_reentrant=False))
        else:
            out.append(_head_logp(h, t, head, it))
    return torch.cat(out) if out else picked.new_zeros(0)


def batch_logprobs(model: nn.Module, seqs: list[Sequence], idx: list[int], pad_id: int, device: torch.device,
                   autocast: Any, weights: dict[int, list[float]] | None = None) -> tuple[Tensor, dict[str, Tensor]]:
    """One micro-batch through the model: its response log-probs (float32, flat) and the collated
    tensors on ``device``. One function for the training forward, the no-grad passes at cycle start
    and the update guard's measurement, so all three score the same tokens the same way."""
    b = {k: v.to(device) for k, v in collate(seqs, idx, pad_id, weights).items()}
    with autocast():
        logp = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"],
                                 inv_temperature=b["inv_temperature"])
    return logp.float(), b


def sequence_logprobs(model: nn.Module, seqs: list[Sequence], budget: int, pad_id: int, device: torch.device,
                      rank: int, world: int, autocast: Any) -> list[Tensor]:
    """Per-sequence response log-probs under the current weights, no grad; ranks split the work."""
    offsets = [0]
    for s in seqs:
        offsets.append(offsets[-1] + s.n_response)
    flat = torch.zeros(offsets[-1], dtype=torch.float32)
    batches = bucket_by_tokens({i: len(s.ids) for i, s in enumerate(seqs)}, budget)
    with torch.no_grad():
        for idx in batches[rank::world]:
            logp, pos = batch_logprobs(model, seqs, idx, pad_id, device, autocast)[0].cpu(), 0
            for i in idx:
                n = seqs[i].n_response
                flat[offsets[i] : offsets[i] + n] = logp[pos : pos + n]
                pos += n
    if world > 1:
        all_reduce_cpu(torch, flat, device)  # each position was filled by exactly one rank
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(seqs))]
