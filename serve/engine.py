"""The model side of ``spanrl serve``: one batched decoding loop plus LoRA adapters.

Why a hand-written loop instead of ``model.generate``: a batch mixes requests with different
temperature, top_p, seed and max_tokens. Here every row samples with its own parameters and its own
``torch.Generator`` (so a seeded request gives the same tokens whatever it is batched with, up to
float noise from padding), stops on its own, and records the log-probability of each sampled token
under the distribution it was actually drawn from. Prompts are left-padded; one forward per step
with the KV cache, as ``generate`` does.

Log-probs (``spanrl.response_logprobs`` and the API's ``logprobs``): log softmax(logits / T),
restricted to the top-p nucleus and renormalised: the *sampling* distribution. Greedy requests
(T = 0) report plain log softmax(logits). ``raw_logprobs`` always holds log softmax(logits) at
T = 1 without truncation: what a trainer's policy computes for the same weights.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("spanrl.serve")


@dataclass
class SamplingParams:
    """Per-row sampling settings (validated by the API layer)."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    top_logprobs: int = 0


@dataclass
class Sequence:
    """One choice being generated: prompt in, tokens + log-probs out."""

    prompt_ids: list[int]
    params: SamplingParams
    output_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    raw_logprobs: list[float] = field(default_factory=list)
    top: list[list[tuple[int, float]]] = field(default_factory=list)
    finish_reason: str | None = None
    stop_at: int | None = None  # char offset where a stop string begins in the decoded text


def pick_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is present, else ``cpu``."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def adapter_slot(adapter_id: str) -> str:
    """PEFT adapter names become module keys: keep only word characters."""
    return "a_" + re.sub(r"\W", "_", adapter_id)


class Engine:
    """Owns the model; every method runs on the single worker thread (never concurrently)."""

    def __init__(self, model_path: Path, device: str = "auto", threads: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:  # process-wide; on a busy small machine 1 thread beats 2 for small models
            torch.set_num_threads(threads)

        self.device = pick_device(device)
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model: Any = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).to(self.device).eval()
        config = self.model.config
        self.max_positions = int(getattr(config, "max_position_embeddings", 0) or 1 << 30)
        self.eos_ids = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else next(iter(self.eos_ids)))
        self.loaded: dict[str, str] = {}  # adapter id -> PEFT slot name

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for value in (getattr(self.model.generation_config, "eos_token_id", None), self.tokenizer.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list | tuple):
                ids.update(int(v) for v in value)
        if not ids:
            raise ValueError("the model defines no eos_token_id (generation_config or tokenizer)")
        return ids

    # ----------------------------------------------------------------- adapters
    def load_adapter(self, adapter_id: str, path: Path) -> None:
        """Load a PEFT adapter under ``adapter_id`` (replacing one of the same id)."""
        from peft import PeftModel

        slot = adapter_slot(adapter_id)
        if adapter_id in self.loaded:
            self.unload_adapter(adapter_id)
        if not isinstance(self.model, PeftModel):
            self.model = PeftModel.from_pretrained(self.model, str(path), adapter_name=slot, is_trainable=False)
        else:
            self.model.load_adapter(str(path), adapter_name=slot, is_trainable=False)
        self.model.eval()
        self.loaded[adapter_id] = slot

    def unload_adapter(self, adapter_id: str) -> None:
        slot = self.loaded.pop(adapter_id)
        if len(self.model.peft_config) > 1:
            other = next(s for s in self.model.peft_config if s != slot)
            self.model.set_adapter(other)
            self.model.delete_adapter(slot)
        else:  # last adapter: back to the plain base model
            self.model = self.model.unload()

    def _adapter_context(self, adapter_id: str | None):
        import contextlib

        from peft import PeftModel

        if not isinstance(self.model, PeftModel):
            return contextlib.nullcontext()
        if adapter_id is None:
            return self.model.disable_adapter()
        self.model.set_adapter(self.loaded[adapter_id])
        return contextlib.nullcontext()

    # ----------------------------------------------------------------- generation
    def generate(self, seqs: list[Sequence], adapter_id: str | None,
                 admit: Callable[[int], list[Sequence]] | None = None,
                 on_finish: Callable[[Sequence], None] | None = None) -> None:
        """Fill ``output_ids``/``logprobs``/``finish_reason`` of every sequence, in one batch.

        ``on_finish(seq)`` is called as soon as a row ends (so its request can be answered while
        the others go on). ``admit(live_rows)`` (continuous batching) is asked between decode steps
        for more sequences to join the running batch; they are prefilled and merged into the KV
        cache. Both run on this (the model) thread.
        """
        import torch

        with torch.inference_mode(), self._adapter_context(adapter_id):
            self._decode(list(seqs), admit, on_finish or (lambda _seq: None))

    def _prefill(self, seqs: list[Sequence]):
        """Left-padded prompts -> (last-position logits, KV cache, attention mask, next positions)."""
        import torch

        width = max(len(s.prompt_ids) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, width - len(s.prompt_ids):] = torch.tensor(s.prompt_ids)
            mask[i, width - len(s.prompt_ids):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1, :].float(), out.past_key_values, mask, positions[:, -1:] + 1

    def _decode(self, seqs: list[Sequence], admit: Callable[[int], list[Sequence]] | None,
                on_finish: Callable[[Sequence], None]) -> None:
        import torch

        logits, cache, mask, next_pos = self._prefill(seqs)
        generators = [self._generator(s.params.seed) for s in seqs]
        live = list(range(len(seqs)))  # which sequence each tensor row belongs to
        done: set[int] = set()

        def sample(rows: list[int], row_logits) -> list[int]:
            tokens = self._sample_step(row_logits, [seqs[i] for i in rows], [generators[i] for i in rows])
            for i in rows:
                if seqs[i].finish_reason and i not in done:
                    done.add(i)
                    on_finish(seqs[i])
            return tokens

        while True:
            tokens = sample(live, logits)
            keep = [k for k, i in enumerate(live) if not seqs[i].finish_reason]
            droppable = _can_drop_rows(cache)
            if len(keep) < len(live) and droppable:  # finished rows stop costing compute
                index = torch.tensor(keep, dtype=torch.long, device=self.device)
                for layer in cache.layers:
                    layer.batch_select_indices(index)
                mask, next_pos = mask[index], next_pos[index]
                tokens, live = [tokens[k] for k in keep], [live[k] for k in keep]
            new = admit(len(live)) if admit is not None and droppable and _can_merge(cache) else []
            if new:
                first = len(seqs)
                seqs.extend(new)
                generators.extend(self._generator(s.params.seed) for s in new)
                new_logits, new_cache, new_mask, new_pos = self._prefill(new)
                rows = list(range(first, len(seqs)))
                new_tokens = sample(rows, new_logits)
                alive = [k for k, i in enumerate(rows) if not seqs[i].finish_reason]
                if alive:
                    index = torch.tensor(alive, dtype=torch.long, device=self.device)
                    for layer in new_cache.layers:
                        layer.batch_select_indices(index)
                    if live:
                        mask, next_pos = _merge_rows(cache, mask, next_pos, new_cache, new_mask[index], new_pos[index])
                    else:
                        cache, mask, next_pos = new_cache, new_mask[index], new_pos[index]
                    tokens += [new_tokens[k] for k in alive]
                    live += [rows[k] for k in alive]
            if all(seqs[i].finish_reason for i in live):
                return
            step = torch.tensor(tokens, dtype=torch.long, device=self.device)[:, None]
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=self.device)], dim=1)
            out = self.model(input_ids=step, attention_mask=mask, position_ids=next_pos,
                             past_key_values=cache, use_cache=True)
            logits, next_pos = out.logits[:, -1, :].float(), next_pos + 1

    def _generator(self, seed: int | None):
        import torch

        gen = torch.Generator(device=self.device)
        if seed is None:
            gen.seed()
        else:
            gen.manual_seed(int(seed) & 0xFFFF_FFFF_FFFF_FFFF)
        return gen

    def _sample_step(self, logits, seqs: list[Sequence], generators: list) -> list[int]:
        """Sample one token per unfinished row; record its log-probs; update finish reasons."""
        import torch

        raw = torch.log_softmax(logits, dim=-1)
        temps = torch.tensor([s.params.temperature for s in seqs], device=logits.device)
        greedy = temps <= 1e-5
        dist = torch.log_softmax(logits / torch.where(greedy, torch.ones_like(temps), temps)[:, None], dim=-1)
        top_ps = [s.params.top_p for s in seqs]
        if any(p < 1.0 for p, g in zip(top_ps, greedy.tolist(), strict=True) if not g):
            dist = _nucleus(dist, torch.tensor(top_ps, device=logits.device), greedy)
        tokens: list[int] = []
        for i, s in enumerate(seqs):
            if s.finish_reason:
                tokens.append(self.pad_id)
                continue
            if greedy[i]:
                tok = int(torch.argmax(dist[i]))
            else:
                tok = int(torch.multinomial(dist[i].exp(), 1, generator=generators[i]))
            tokens.append(tok)
            self._append(s, tok, dist[i], raw[i])
        return tokens

    def _append(self, s: Sequence, tok: int, dist, raw) -> None:
        import torch

        s.output_ids.append(tok)
        s.logprobs.append(float(dist[tok]))
        s.raw_logprobs.append(float(raw[tok]))
        if s.params.top_logprobs:
            values, indices = torch.topk(dist, s.params.top_logprobs)
            s.top.append([(int(j), float(v)) for v, j in zip(values.tolist(), indices.tolist(), strict=True)])
        if tok in self.eos_ids:
            s.finish_reason = "stop"
        elif s.params.stop and self._hit_stop(s):
            s.finish_reason = "stop"
        elif len(s.output_ids) >= s.params.max_tokens:
            s.finish_reason = "length"
        elif len(s.prompt_ids) + len(s.output_ids) >= self.max_positions:
            s.finish_reason = "length"

    def _hit_stop(self, s: Sequence) -> bool:
        text = self.tokenizer.decode(s.output_ids, skip_special_tokens=True)
        longest = max(len(x) for x in s.params.stop)
        tail_start = max(0, len(text) - longest - 16)
        hits = [text.find(x, tail_start) for x in s.params.stop]
        hits = [h for h in hits if h >= 0]
        if hits:
            s.stop_at = min(hits)
        return bool(hits)


def _can_drop_rows(cache: Any) -> bool:
    """Plain per-layer KV caches (DynamicCache) can drop finished rows; others keep them as padding."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(hasattr(layer, "batch_select_indices") for layer in layers)


def _can_merge(cache: Any) -> bool:
    """New rows can join only a plain DynamicCache (full-attention layers holding keys/values)."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" and getattr(layer, "keys", None) is not None
                                for layer in layers)


def _merge_rows(cache: Any, mask, next_pos, new_cache: Any, new_mask, new_pos):
    """Append the rows of ``new_cache`` to ``cache`` (in place), left-padding the shorter history.

    Padded key/value slots are zeros under a zero attention mask, so they are never attended to;
    positions are per row, so the rotary phases already in the cache stay right.
    """
    import torch
    import torch.nn.functional as F

    old_len, new_len = mask.shape[1], new_mask.shape[1]
    width = max(old_len, new_len)
    for layer, new_layer in zip(cache.layers, new_cache.layers, strict=True):
        layer.keys = torch.cat([F.pad(layer.keys, (0, 0, width - old_len, 0)),
                                F.pad(new_layer.keys, (0, 0, width - new_len, 0))], dim=0)
        layer.values = torch.cat([F.pad(layer.values, (0, 0, width - old_len, 0)),
                                  F.pad(new_layer.values, (0, 0, width - new_len, 0))], dim=0)
    mask = torch.cat([F.pad(mask, (width - old_len, 0)), F.pad(new_mask, (width - new_len, 0))], dim=0)
    return mask, torch.cat([next_pos, new_pos], dim=0)


def _nucleus(dist, top_p, greedy):
    """Keep the smallest set of tokens whose probability reaches top_p (per row); renormalise."""
    import torch

    sorted_lp, order = torch.sort(dist, dim=-1, descending=True)
    probs = sorted_lp.exp()
    before = probs.cumsum(-1) - probs  # mass strictly before each token
    drop_sorted = (before >= top_p[:, None]) & ~greedy[:, None]
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return torch.log_softmax(dist.masked_fill(drop, float("-inf")), dim=-1)
