"""Transitions -> token sequences -> optimizer steps of length-bucketed micro-batches.

Two ways to get tokens, per row:
- ``engine``: ``prompt_token_ids + response_token_ids`` exactly as the serving engine saw and
  sampled them; the behaviour log-probs line up with the response ids.
- ``text``: ``prompt_messages`` (+ ``tools``) rendered by ``spanrl.trainer.render``, the renderer
  ``spanrl serve`` uses: the prompt ids are the ids the server computes for that request, and the
  response is what follows them in the render of prompt + response (its tool calls in the format the
  server wrote them in), tokenised separately as an engine would and cut at the first end-of-turn
  token. A render of prompt + response that does not start with the prompt is a *template mismatch*
  and is skipped (never misaligned); a render that raises is a *template error*, counted by its
  reason. Behaviour log-probs are dropped (they belong to the engine's tokens, not ours).

Trajectory merging (Agent Lightning's trajectory aggregation): when a call's tokens start with the
previous call's prompt + response (the agent appended the reply and a tool result and asked again),
the two are one sequence with two response segments (``Part``); the shared prefix is run through
the model once. Each segment keeps its own call's advantage, behaviour log-probs, temperature and
aggregation weight, so the loss equals the unmerged one (a causal model scores a token from the
tokens before it only); ``tests/trainer/test_data.py`` checks the log-probs match.

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
from spanrl.trainer.render import failure_reason, render_turn, tokenize


@dataclass
class Part:
    """One call's response inside a (merged) sequence: ``ids[start:end]``, with that call's own values."""

    start: int
    end: int
    advantage: float
    behaviour: list[float] | None
    temperature: float


@dataclass
class Sequence:
    """One transition as tokens: ``ids[n_prompt:]`` is the response (the only tokens with loss).

    A merged trajectory has ``parts``: several calls' responses, each with its own advantage;
    the tokens between them (tool results, the next prompt's template) carry no loss.
    """

    ids: list[int]
    n_prompt: int
    advantage: float
    ret: float
    reward: float  # the rollout's final reward (sft top-k, reports)
    rollout_id: str
    task_id: str
    behaviour: list[float] | None = None  # mu log-probs of the response tokens
    temperature: float = 1.0  # the sampling temperature: pi is scored at the same temperature as mu
    parts: list[Part] | None = None  # merged calls (None: one call, ``ids[n_prompt:]``)
    cut: bool = False  # the engine stopped the reply at its token limit (finish_reason): no example to imitate

    @property
    def response_parts(self) -> list[Part]:
        if self.parts is not None:
            return self.parts
        return [Part(self.n_prompt, len(self.ids), self.advantage, self.behaviour, self.temperature)]

    @property
    def n_response(self) -> int:
        return sum(p.end - p.start for p in self.response_parts)


@dataclass
class DataStats:
    """What happened to every row: counted, never logged one by one."""

    rows: int = 0
    engine: int = 0
    text: int = 0
    template_mismatch: int = 0  # prompt render is not a prefix of the full render
    template_error: int = 0  # the template raised, or the JSON columns did not parse (reasons: template_errors)
    template_errors: dict[str, int] = field(default_factory=dict)  # reason -> rows: what to fix, not just how many
    bad_token_ids: int = 0  # engine ids outside the tokenizer's vocabulary
    empty: int = 0  # no prompt or no response tokens
    no_prompt: int = 0  # text rows whose prompt was not captured (coverage.missing_input): never an empty prompt
    boundary_retokenised: int = 0  # text path: tokenising prompt+response at once differs
    # text rows the engine cut at its token limit (finish_reason 'length'): trained without the
    # end-of-turn token the template would add, since the model never produced one
    cut_at_length: int = 0
    # engine rows that also carry text: how many were checked, and how many the text path would have
    # tokenised differently from the engine's ids (tokenizer drift: what training on text would get wrong)
    drift_checked: int = 0
    drift: int = 0
    prompt_truncated: int = 0
    merged_calls: int = 0  # calls trained inside the previous call's sequence (shared prefix computed once)
    response_truncated: int = 0
    behaviour_dropped: int = 0  # log-probs present but unusable (length, NaN, text path)
    sft_dropped: int = 0
    sft_cut: int = 0  # calls never imitated, whatever their rollout: replies the engine cut at its token limit

    @property
    def skipped(self) -> int:
        return self.template_mismatch + self.template_error + self.bad_token_ids + self.empty + self.no_prompt

    def summary(self) -> str:
        parts = [f"{k}={v}" + (f" ({self.error_reasons()})" if k == "template_error" else "")
                 for k, v in vars(self).items() if v and k != "template_errors"]
        return ", ".join(parts) or "no rows"

    def count_error(self, reason: str) -> None:
        """One more row that could not be rendered; the first few distinct reasons are kept by name."""
        self.template_error += 1
        key = reason if reason in self.template_errors or len(self.template_errors) < _MAX_REASONS else "other reasons"
        self.template_errors[key] = self.template_errors.get(key, 0) + 1

    def error_reasons(self) -> str:
        """``reason xN`` for each counted render failure, the commonest first."""
        ranked = sorted(self.template_errors.items(), key=lambda kv: (-kv[1], kv[0]))
        return "; ".join(f"{reason} x{n}" for reason, n in ranked)


_MAX_REASONS = 8
# "cut at the token limit": OpenAI/vLLM, Anthropic and Gemini (lower-cased), the Responses API's incomplete reason
CUT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


def is_cut(row: dict[str, Any]) -> bool:
    return str(row.get("finish_reason") or "").lower() in CUT_REASONS


def _f(value: Any, default: float = 0.0) -> float:
    return default if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _json_column(row: dict[str, Any], name: str, default: str) -> Any:
    try:
        return json.loads(row.get(name) or default)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} is not JSON") from exc


def _render_text(row: dict[str, Any], tokenizer: Any, stop_ids: set[int], stats: DataStats) -> tuple[list[int], int] | None:
    """Text path: (ids, n_prompt) or None when the row must be skipped (counted in ``stats``)."""
    try:
        messages = _json_column(row, "prompt_messages", "[]")
        tools = _json_column(row, "tools", "null")
        response = _json_column(row, "response_message", "null")
        if not isinstance(messages, list) or not isinstance(response, dict):
            raise ValueError("prompt_messages must be a JSON list and response_message a JSON object")
        if not messages:  # the call's input was not captured (hidden, cut, a capture switch off): the model
            stats.no_prompt += 1  # saw something, not nothing; trained on an empty prompt it would learn a lie
            return None
        prompt_text, full_text = render_turn(tokenizer, messages, tools, response)
    except Exception as exc:  # noqa: BLE001 - any template or JSON failure skips the row, counted by reason
        stats.count_error(failure_reason(exc))
        return None
    if not full_text.startswith(prompt_text):
        stats.template_mismatch += 1
        return None
    prompt_ids = tokenize(tokenizer, prompt_text)  # == render_prompt(tokenizer, messages, tools): serve's ids
    rest = full_text[len(prompt_text) :]
    rest_ids = tokenize(tokenizer, rest)
    end = next((i for i, t in enumerate(rest_ids) if t in stop_ids), None)
    cut = is_cut(row)  # the template's closing token is not the model's: it never sampled one
    stats.cut_at_length += cut
    response_ids = rest_ids[: end + (not cut)] if end is not None else tokenize(tokenizer, rest.rstrip())
    joint = tokenize(tokenizer, full_text)
    if joint[: len(prompt_ids) + len(response_ids)] != prompt_ids + response_ids:
        stats.boundary_retokenised += 1
    return prompt_ids + response_ids, len(prompt_ids)


def _count_drift(row: dict[str, Any], engine_ids: list[int], tokenizer: Any, stop_ids: set[int],
                 stats: DataStats) -> None:
    """An engine row with messages: does re-tokenising its text give the engine's ids? Counted only
    (the engine's ids are what trains); a row whose text cannot be rendered is not checked."""
    if not row.get("prompt_messages") or not row.get("response_message"):
        return
    rendered = _render_text(row, tokenizer, stop_ids, DataStats())
    if rendered is None:
        return
    stats.drift_checked += 1
    stats.drift += rendered[0] != engine_ids


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
            _count_drift(row, ids, tokenizer, stop_ids, stats)
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
                cut=is_cut(row),
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
    final reward, both when both are set; with neither, the calls with a positive advantage. A reply the
    engine cut at its token limit is never imitated, even in a good rollout (``Sequence.cut``)."""
    if min_return is None and top_k is None:
        return [s for s in seqs if s.advantage > 0 and not s.cut]
    keep = [s for s in seqs if not s.cut]
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


def merge_trajectories(seqs: list[Sequence]) -> tuple[list[Sequence], int]:
    """Merge each call into the previous call of its rollout when its tokens extend that call's
    prompt + response (``ids`` starts with them, the response inside the new prompt). Order kept;
    returns the sequences and how many calls were merged into another. Calls whose prompt was
    re-rendered differently (another template, a truncated prompt) are left as they are."""
    out: list[Sequence] = []
    merged = 0
    for s in seqs:
        prev = out[-1] if out else None
        if (prev is not None and prev.rollout_id == s.rollout_id and s.n_prompt >= len(prev.ids)
                and s.ids[: len(prev.ids)] == prev.ids):
            out[-1] = Sequence(ids=s.ids, n_prompt=prev.n_prompt, advantage=prev.advantage, ret=prev.ret,
                               reward=prev.reward, rollout_id=prev.rollout_id, task_id=prev.task_id,
                               behaviour=prev.behaviour, temperature=prev.temperature,
                               parts=prev.response_parts + s.response_parts)
            merged += 1
        else:
            out.append(s)
    return out, merged


@dataclass
class Step:
    """One optimizer step: whole rollouts, packed into micro-batches of sequence indices."""

    n_rollouts: int
    batches: list[list[int]]
    weights: dict[int, list[float]] = field(default_factory=dict)  # per-token weight of each part of each sequence


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
            # weights per call (part), as if unmerged: a merged trajectory weighs what its calls did
            parts = [(i, p.end - p.start) for i in idx for p in seqs[i].response_parts]
            flat = aggregation_weights([n for _, n in parts], [seqs[i].rollout_id for i, _ in parts], agg)
            weights: dict[int, list[float]] = {}
            for (i, _), w in zip(parts, flat, strict=True):
                weights.setdefault(i, []).append(w)
            steps.append(
                Step(
                    n_rollouts=len(chunk),
                    batches=bucket_by_tokens({i: len(seqs[i].ids) for i in idx}, tokens_per_batch),
                    weights=weights,
                )
            )
    return steps


def collate(seqs: list[Sequence], idx: list[int], pad_id: int,
            weights: dict[int, list[float]] | None = None) -> dict[str, torch.Tensor]:
    """Right-padded ids + the flat per-response-token tensors the losses take.

    ``pos_t`` is the position that predicts each response token (one before it); a merged
    sequence contributes each of its parts in order, with that part's advantage and weight.
    """
    width = max(len(seqs[i].ids) for i in idx)
    input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(idx), width), dtype=torch.long)
    pos_b, pos_t, adv, wts, behaviour, inv_temp = [], [], [], [], [], []
    for b, i in enumerate(idx):
        s = seqs[i]
        input_ids[b, : len(s.ids)] = torch.tensor(s.ids)
        attention[b, : len(s.ids)] = 1
        for k, part in enumerate(s.response_parts):
            n = part.end - part.start
            pos_b += [b] * n
            pos_t += range(part.start - 1, part.end - 1)
            adv += [part.advantage] * n
            wts += [(weights or {}).get(i, [0.0] * (k + 1))[k]] * n
            behaviour += part.behaviour if part.behaviour is not None else [math.nan] * n
            inv_temp += [1.0 / part.temperature] * n
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
