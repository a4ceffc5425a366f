"""Transitions -> token sequences -> optimizer steps of length-bucketed micro-batches.

Two ways to get tokens, per row:
- ``engine``: ``prompt_token_ids + response_token_ids`` exactly as the serving engine saw and
  sampled them; the behaviour log-probs line up with the response ids.
- ``text``: the chat template over ``prompt_messages`` (+ ``tools``) with
  ``add_generation_prompt=True`` gives the prompt; the same template over prompt + response (as the
  assistant turn) must start with that prompt text, else the row is a *template mismatch* and is
  skipped (never misaligned). The prompt and the rest are tokenised separately, as an engine would,
  and the response ends at the first end-of-turn token. Behaviour log-probs are dropped (they
  belong to the engine's tokens, not ours).

Steps are counted in rollouts: each step takes ``rollouts_per_step`` whole rollouts (all their
calls), and its micro-batches are packed by a padded-token budget after sorting by length.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import torch

from spanrl.trainer.losses import aggregation_weights


@dataclass
class Sequence:
    """One transition as tokens: ``ids[n_prompt:]`` is the response (the only tokens with loss)."""

    ids: list[int]
    n_prompt: int
    advantage: float
    ret: float
    reward: float  # the rollout's final reward (sft top-k, reports)
    rollout_id: str
    task_id: str
    behaviour: list[float] | None = None  # mu log-probs of the response tokens
    temperature: float = 1.0  # the sampling temperature: pi is scored at the same temperature as mu

    @property
    def n_response(self) -> int:
        return len(self.ids) - self.n_prompt


@dataclass
class DataStats:
    """What happened to every row: counted, never logged one by one."""

    rows: int = 0
    engine: int = 0
    text: int = 0
    template_mismatch: int = 0  # prompt render is not a prefix of the full render
    template_error: int = 0  # the template raised, or the JSON columns did not parse
    bad_token_ids: int = 0  # engine ids outside the tokenizer's vocabulary
    empty: int = 0  # no prompt or no response tokens
    boundary_retokenised: int = 0  # text path: tokenising prompt+response at once differs
    prompt_truncated: int = 0
    response_truncated: int = 0
    behaviour_dropped: int = 0  # log-probs present but unusable (length, NaN, text path)
    sft_dropped: int = 0

    @property
    def skipped(self) -> int:
        return self.template_mismatch + self.template_error + self.bad_token_ids + self.empty

    def summary(self) -> str:
        parts = [f"{k}={v}" for k, v in vars(self).items() if v]
        return ", ".join(parts) or "no rows"


def _f(value: Any, default: float = 0.0) -> float:
    return default if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _render_text(row: dict[str, Any], tokenizer: Any, stop_ids: set[int], stats: DataStats) -> tuple[list[int], int] | None:
    """Text path: (ids, n_prompt) or None when the row must be skipped (counted in ``stats``)."""
    try:
        messages = json.loads(row["prompt_messages"] or "[]")
        tools = json.loads(row["tools"]) if row.get("tools") else None
        response = json.loads(row["response_message"] or "null")
        if not isinstance(messages, list) or not isinstance(response, dict):
            raise ValueError("prompt_messages must be a JSON list and response_message a JSON object")
        response = {**response, "role": "assistant"}
        kwargs = {"tools": tools or None, "tokenize": False}
        prompt_text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, **kwargs)
        full_text = tokenizer.apply_chat_template([*messages, response], add_generation_prompt=False, **kwargs)
    except Exception:  # noqa: BLE001 - any template or JSON failure skips the row, counted
        stats.template_error += 1
        return None
    if not full_text.startswith(prompt_text):
        stats.template_mismatch += 1
        return None
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    rest_ids = tokenizer(full_text[len(prompt_text) :], add_special_tokens=False)["input_ids"]
    end = next((i for i, t in enumerate(rest_ids) if t in stop_ids), None)
    if end is not None:
        response_ids = rest_ids[: end + 1]
    else:
        response_ids = tokenizer(full_text[len(prompt_text) :].rstrip(), add_special_tokens=False)["input_ids"]
    joint = tokenizer(full_text, add_special_tokens=False)["input_ids"]
    if joint[: len(prompt_ids) + len(response_ids)] != prompt_ids + response_ids:
        stats.boundary_retokenised += 1
    return prompt_ids + response_ids, len(prompt_ids)


def build_sequences(
    table: pa.Table,
    tokenizer: Any,
    max_prompt_tokens: int,
    max_response_tokens: int,
    stop_ids: set[int] | None = None,
) -> tuple[list[Sequence], DataStats]:
    """Turn snapshot rows into token sequences; bad rows are counted and skipped."""
    stats = DataStats(rows=table.num_rows)
    vocab = len(tokenizer)
    if stop_ids is None:
        stop_ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    seqs: list[Sequence] = []
    for row in table.to_pylist():
        p_ids, r_ids = row.get("prompt_token_ids"), row.get("response_token_ids")
        behaviour = row.get("response_logprobs")
        if row.get("token_source") == "engine" and p_ids and r_ids:
            if min(p_ids + r_ids) < 0 or max(p_ids + r_ids) >= vocab:
                stats.bad_token_ids += 1
                continue
            stats.engine += 1
            ids, n_prompt = list(p_ids) + list(r_ids), len(p_ids)
            if behaviour is not None and (len(behaviour) != len(r_ids) or any(math.isnan(v) for v in behaviour)):
                stats.behaviour_dropped += 1
                behaviour = None
        else:
            rendered = _render_text(row, tokenizer, stop_ids, stats)
            if rendered is None:
                continue
            stats.text += 1
            ids, n_prompt = rendered
            if behaviour is not None:
                stats.behaviour_dropped += 1
            behaviour = None
        prompt, response = ids[:n_prompt], ids[n_prompt:]
        if not prompt or not response:
            stats.empty += 1
            continue
        if len(prompt) > max_prompt_tokens:
            prompt = prompt[-max_prompt_tokens:]
            stats.prompt_truncated += 1
        if len(response) > max_response_tokens:
            response = response[:max_response_tokens]
            behaviour = behaviour[:max_response_tokens] if behaviour is not None else None
            stats.response_truncated += 1
        ret = _f(row.get("return"), _f(row.get("final_reward")))
        seqs.append(
            Sequence(
                ids=prompt + response,
                n_prompt=len(prompt),
                advantage=_f(row.get("advantage"), ret),
                ret=ret,
                reward=_f(row.get("final_reward"), ret),
                rollout_id=str(row["rollout_id"]),
                task_id=str(row.get("task_id") or row["rollout_id"]),
                behaviour=list(behaviour) if behaviour is not None else None,
                temperature=_sampling_temperature(row.get("temperature")),
            )
        )
    return seqs, stats


def _sampling_temperature(value: Any) -> float:
    """The temperature the behaviour policy sampled at; greedy (0) or unknown scores at 1.

    The agent samples from softmax(logits / T), so that is the policy whose log-probs the
    importance ratio and the gradient must use (verl divides logits by the rollout temperature too).
    """
    t = _f(value, 1.0)
    return t if 0.05 <= t <= 10.0 else 1.0


def select_sft(seqs: list[Sequence], min_return: float | None, top_k: int | None) -> list[Sequence]:
    """Good rollouts only (RAFT/ReST): ``return >= min_return``, the ``top_k`` rollouts per task by
    final reward, both when both are set; with neither, the calls with a positive advantage."""
    if min_return is None and top_k is None:
        return [s for s in seqs if s.advantage > 0]
    keep = seqs
    if min_return is not None:
        keep = [s for s in keep if s.ret >= min_return]
    if top_k is not None:
        best: dict[str, dict[str, float]] = {}
        for s in seqs:
            best.setdefault(s.task_id, {})[s.rollout_id] = s.reward
        chosen = {
            rid
            for rollouts in best.values()
            for rid, _ in sorted(rollouts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]
        }
        keep = [s for s in keep if s.rollout_id in chosen]
    return keep


@dataclass
class Step:
    """One optimizer step: whole rollouts, packed into micro-batches of sequence indices."""

    n_rollouts: int
    batches: list[list[int]]
    weights: dict[int, float] = field(default_factory=dict)  # per-token weight of each sequence


def bucket_by_tokens(lengths: dict[int, int], budget: int) -> list[list[int]]:
    """Sort by length (longest first) and cut greedily so ``max_len * n <= budget`` (one over-long
    sequence still gets a batch of its own). Neighbours have similar lengths: little padding."""
    order = sorted(lengths, key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and lengths[current[0]] * (len(current) + 1) > budget:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def plan_steps(seqs: list[Sequence], rollouts_per_step: int, epochs: int, seed: int, agg: str, tokens_per_batch: int) -> list[Step]:
    """Shuffle rollouts per epoch (seeded), group them into steps, weight and bucket each step."""
    by_rollout: dict[str, list[int]] = {}
    for i, s in enumerate(seqs):
        by_rollout.setdefault(s.rollout_id, []).append(i)
    rollouts = sorted(by_rollout)
    steps: list[Step] = []
    for epoch in range(epochs):
        order = rollouts[:]
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        for start in range(0, len(order), rollouts_per_step):
            chunk = order[start : start + rollouts_per_step]
            idx = [i for rid in chunk for i in by_rollout[rid]]
            weights = aggregation_weights([seqs[i].n_response for i in idx], [seqs[i].rollout_id for i in idx], agg)
            steps.append(
                Step(
                    n_rollouts=len(chunk),
                    batches=bucket_by_tokens({i: len(seqs[i].ids) for i in idx}, tokens_per_batch),
                    weights=dict(zip(idx, weights, strict=True)),
                )
            )
    return steps


def collate(seqs: list[Sequence], idx: list[int], pad_id: int, weights: dict[int, float] | None = None) -> dict[str, torch.Tensor]:
    """Right-padded ids + the flat per-response-token tensors the losses take.

    ``pos_t`` is the position that predicts each response token (one before it).
    """
    width = max(len(seqs[i].ids) for i in idx)
    input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(idx), width), dtype=torch.long)
    pos_b, pos_t, adv, wts, behaviour, inv_temp = [], [], [], [], [], []
    for b, i in enumerate(idx):
        s = seqs[i]
        input_ids[b, : len(s.ids)] = torch.tensor(s.ids)
        attention[b, : len(s.ids)] = 1
        n = s.n_response
        pos_b += [b] * n
        pos_t += range(s.n_prompt - 1, len(s.ids) - 1)
        adv += [s.advantage] * n
        wts += [(weights or {}).get(i, 0.0)] * n
        behaviour += s.behaviour if s.behaviour is not None else [math.nan] * n
        inv_temp += [1.0 / s.temperature] * n
    pos_b_t, pos_t_t = torch.tensor(pos_b), torch.tensor(pos_t)
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "pos_b": pos_b_t,
        "pos_t": pos_t_t,
        "targets": input_ids[pos_b_t, pos_t_t + 1],
        "advantage": torch.tensor(adv, dtype=torch.float32),
        "weight": torch.tensor(wts, dtype=torch.float32),
        "behaviour_logp": torch.tensor(behaviour, dtype=torch.float32),
        "inv_temperature": torch.tensor(inv_temp, dtype=torch.float32),
    }
