"""One batch cycle: transition snapshot -> LoRA adapter (DESIGN §6). Reads top to bottom.

load (snapshot, tokenizer, sequences, base model + LoRA) -> log-probs at cycle start (ppo, KL)
-> loop over steps (lr, micro-batches forward/backward, all-reduce, clip, step, zero_grad, log)
-> save (adapter, training_state.json, metrics.jsonl, report.png, LATEST, cycles.jsonl) -> notify.

Data-parallel: under ``torchrun`` every rank reads the same snapshot and plans the same steps, takes
every world-th micro-batch of each step, and the LoRA gradients are summed with one all-reduce
(the aggregation weights of a step already sum to 1 over all ranks). Rank 0 writes.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl import __version__
from spanrl.errors import InputError
from spanrl.trainer.adapter import (
    append_cycle_line,
    base_model_hash,
    check_local_model,
    check_parent,
    lora_targets,
    next_cycle_id,
    notify_vllm,
    read_latest,
    save_cycle,
    trained_rollout_ids,
)
from spanrl.trainer.config import TrainConfig
from spanrl.trainer.data import (
    DataStats,
    Sequence,
    bucket_by_tokens,
    build_sequences,
    collate,
    plan_steps,
    select_sft,
)
from spanrl.trainer.logprobs import response_logprobs
from spanrl.trainer.losses import LOSSES, LossInputs, LossParams
from spanrl.transitions.snapshot import read_snapshot

SUM_KEYS = ("adv_mean", "logp_mean", "kl", "ratio_mean", "trunc_frac", "clip_frac", "mu_ratio_mean", "mu_trunc_frac")
MAX_KEYS = ("ratio_max", "mu_ratio_max")


@dataclass
class TrainResult:
    cycle_id: str | None  # None on ranks other than 0
    folder: Path | None
    steps: int
    response_tokens: int
    loss: float
    seconds: float
    stats: DataStats
    weights_sha256: str
    warnings: list[str] = field(default_factory=list)


class AlreadyTrained(Exception):
    """adapters/LATEST was trained on this very snapshot content: a nightly ``ingest`` that found
    nothing new followed by ``train`` must not train the same rollouts twice."""


def train(cfg: TrainConfig, notify: str | None = None, progress: bool = True) -> TrainResult:
    """Run one cycle; raises InputError for anything the user can fix."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own bar is the one progress display
    t0 = time.time()
    rank, world, device = _init_distributed(torch)

    # ---- load: base model, snapshot, parent adapter, sequences
    base_path = check_local_model(cfg.model)
    base_hash = base_model_hash(base_path)
    table, manifest = read_snapshot(cfg.data, cfg.snapshot)
    snapshot_id = manifest["snapshot_id"]
    if table.num_rows == 0:
        raise InputError(f"snapshot {snapshot_id} has no transitions; ingest more rollouts, then train")
    root = cfg.adapters_root
    parent = None if cfg.fresh else read_latest(root)
    already_trained_rows = 0  # rows left out by --new-only
    if parent is not None:
        check_parent(parent, base_path, base_hash)
        trained = parent[2].get("snapshot_content_hash")
        if not cfg.retrain and trained and trained == manifest.get("content_hash"):
            raise AlreadyTrained(
                f"adapters/LATEST ({parent[0]}) was already trained on snapshot {parent[2].get('snapshot_id')}, "
                f"whose rows equal {snapshot_id}'s; ingest new rollouts first, or pass --retrain")
        if cfg.new_only:
            import pyarrow as pa
            import pyarrow.compute as pc

            seen = trained_rollout_ids(cfg.data, root, parent)
            before = table.num_rows
            table = table.filter(pc.invert(pc.is_in(table["rollout_id"], value_set=pa.array(sorted(seen), pa.string()))))
            if table.num_rows == 0:
                raise AlreadyTrained(f"snapshot {snapshot_id} holds no rollout that adapters/LATEST ({parent[0]}) "
                                     "and its parents have not trained on (--new-only)")
            already_trained_rows = before - table.num_rows
    tokenizer = AutoTokenizer.from_pretrained(base_path, local_files_only=True)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    seqs, stats = build_sequences(table, tokenizer, cfg.max_prompt_tokens, cfg.max_response_tokens, _stop_ids(base_path, tokenizer))
    if cfg.loss == "sft":
        kept = select_sft(seqs, cfg.sft_min_return, cfg.sft_top_k)
        stats.sft_dropped, seqs = len(seqs) - len(kept), kept
    if not seqs:
        raise InputError(
            f"snapshot {snapshot_id}: no trainable transitions ({stats.summary()}); "
            + ("loosen --sft-min-return/--sft-top-k" if cfg.loss == "sft" and stats.sft_dropped
               else "the model's chat template failed on the text rows (does its tokenizer have one?)"
               if stats.template_error else "check the snapshot rows")
        )
    epochs = cfg.resolved_epochs
    steps = plan_steps(seqs, cfg.rollouts_per_step, epochs, cfg.seed, cfg.loss_agg, cfg.tokens_per_batch)

    on_gpu = device.type == "cuda"
    torch.manual_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(
        base_path, local_files_only=True, dtype=torch.bfloat16 if on_gpu else torch.float32, attn_implementation="sdpa"
    ).to(device)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if parent is not None:
        model = PeftModel.from_pretrained(model, parent[1], is_trainable=True)
    else:
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, target_modules=lora_targets(model),
                          lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lora)
    model.train()
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if on_gpu else nullcontext

    # ---- log-probs at cycle start: pi_old (ppo) and the base with the adapter disabled (KL)
    old = _sequence_logprobs(torch, model, seqs, cfg.tokens_per_batch, pad_id, device, rank, world, autocast) if cfg.loss == "ppo" else None
    ref = None
    if cfg.kl_coef > 0:
        with model.disable_adapter():
            ref = _sequence_logprobs(torch, model, seqs, cfg.tokens_per_batch, pad_id, device, rank, world, autocast)

    # ---- loop
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.resolved_lr, betas=(0.9, 0.99), weight_decay=0.0)
    loss_fn, loss_params = LOSSES[cfg.loss], LossParams(cfg.is_cap, cfg.clip_eps, cfg.clip_eps_high, cfg.kl_coef)
    total_rollouts, done_rollouts = sum(s.n_rollouts for s in steps), 0
    metrics: list[dict[str, Any]] = []
    bar = _Progress(len(steps), enabled=progress and rank == 0)
    response_tokens = 0
    for n, step in enumerate(steps):
        t_step, cpu_step = time.time(), time.process_time()
        lr = _lr_at(done_rollouts, total_rollouts, cfg.resolved_lr, cfg.lr_schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        sums = torch.zeros(2 + 2 * len(SUM_KEYS), dtype=torch.float64)  # loss, tokens, (value*tokens, tokens) per key
        maxes = torch.full((len(MAX_KEYS),), -math.inf, dtype=torch.float64)
        for idx in step.batches[rank::world]:
            b = {k: v.to(device) for k, v in collate(seqs, idx, pad_id, step.weights).items()}
            with autocast():
                logp = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"],
                                         inv_temperature=b["inv_temperature"])
            x = LossInputs(
                logp=logp.float(), advantage=b["advantage"], weight=b["weight"], behaviour_logp=b["behaviour_logp"],
                old_logp=torch.cat([old[i] for i in idx]).to(device) if old is not None else None,
                ref_logp=torch.cat([ref[i] for i in idx]).to(device) if ref is not None else None,
            )
            loss, m = loss_fn(x, loss_params)
            loss.backward()
            _accumulate(sums, maxes, float(loss.detach()), int(logp.numel()), m)
        _all_reduce_grads(torch, params, sums, maxes, world)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else float("inf"))
        opt.step()
        opt.zero_grad(set_to_none=True)
        done_rollouts += step.n_rollouts
        response_tokens += int(sums[1])
        row = _metrics_row(n, lr, step.n_rollouts, float(grad_norm), sums, maxes, time.time() - t_step,
                           time.process_time() - cpu_step)
        metrics.append(row)
        bar.advance(row)
    bar.close()

    # ---- save (rank 0), then tell the server
    digest = _weights_digest(torch, model)
    if world > 1:
        digests: list[Any] = [None] * world
        torch.distributed.all_gather_object(digests, digest)
        if len(set(digests)) != 1:
            raise RuntimeError(f"data-parallel ranks disagree on the adapter weights: {digests}")
    mean_loss = sum(r["loss"] for r in metrics) / len(metrics)
    result = TrainResult(None, None, len(steps), response_tokens, mean_loss, time.time() - t0, stats, digest)
    if rank == 0:
        cycle, cycle_id = next_cycle_id(parent[2] if parent else None)
        reward = _mean_final_reward(table)
        line = {
            "cycle": cycle, "cycle_id": cycle_id, "snapshot_id": snapshot_id, "mean_final_reward": reward,
            "rollouts": len({s.rollout_id for s in seqs}), "transitions": len(seqs), "loss": cfg.loss,
            "train_loss": mean_loss, "response_tokens": response_tokens, "time_s": round(time.time() - t0, 3),
        }
        state = {
            **line, "parent": parent[0] if parent else None, "base_model": str(base_path), "base_model_hash": base_hash,
            "snapshot_content_hash": manifest.get("content_hash"), "config": cfg.to_dict(), "seed": cfg.seed,
            "steps": len(steps), "epochs": epochs, "data": vars(stats),
            "already_trained_rows": already_trained_rows, "world_size": world, "weights_sha256": digest,
            "lora": _lora_summary(model), "spanrl_version": __version__, "versions": _versions(),
        }
        history = _read_cycles(root) + [line]

        def report(path: Path) -> None:
            from spanrl.trainer.plots import write_cycle_report

            write_cycle_report(path, metrics, history, f"cycle {cycle_id} - snapshot {snapshot_id} - {cfg.loss}")

        folder = save_cycle(root, cycle_id, model, state, metrics, report)
        append_cycle_line(root, line)
        result.cycle_id, result.folder = cycle_id, folder
        if notify:
            warning = notify_vllm(notify, cycle_id, folder)
            if warning:
                result.warnings.append(warning)
    if world > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return result


# ---- helpers (small, in the order the cycle uses them)


def _init_distributed(torch: Any) -> tuple[int, int, Any]:
    """(rank, world, device). torchrun sets WORLD_SIZE/RANK/LOCAL_RANK; gloo on CPU, nccl on GPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    if world > 1:
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
        if cuda:
            torch.cuda.set_device(device)
        else:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    return rank, world, device


def _stop_ids(base_path: Path, tokenizer: Any) -> set[int]:
    """End-of-turn ids: the tokenizer's eos plus generation_config's eos list."""
    import json

    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    gen = base_path / "generation_config.json"
    if gen.is_file():
        eos = json.loads(gen.read_text()).get("eos_token_id")
        ids |= set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    return ids


def _sequence_logprobs(torch: Any, model: Any, seqs: list[Sequence], budget: int, pad_id: int, device: Any,
                       rank: int, world: int, autocast: Any) -> list[Any]:
    """Per-sequence response log-probs under the current weights, no grad; ranks split the work."""
    offsets = [0]
    for s in seqs:
        offsets.append(offsets[-1] + s.n_response)
    flat = torch.zeros(offsets[-1], dtype=torch.float32)
    batches = bucket_by_tokens({i: len(s.ids) for i, s in enumerate(seqs)}, budget)
    with torch.no_grad():
        for idx in batches[rank::world]:
            b = {k: v.to(device) for k, v in collate(seqs, idx, pad_id).items()}
            with autocast():
                logp = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"],
                                         inv_temperature=b["inv_temperature"])
            logp, pos = logp.float().cpu(), 0
            for i in idx:
                n = seqs[i].n_response
                flat[offsets[i] : offsets[i] + n] = logp[pos : pos + n]
                pos += n
    if world > 1:
        _all_reduce_cpu(torch, flat, device)  # each position was filled by exactly one rank
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(seqs))]


def _lr_at(done: int, total: int, base: float, schedule: str) -> float:
    """Learning rate as a function of rollouts already trained on (not of transitions)."""
    if schedule == "constant":
        return base
    frac, warm = done / max(total, 1), 0.05
    if frac < warm:
        return base * (frac + 1.0 / max(total, 1)) / warm
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (frac - warm) / (1 - warm))))


def _accumulate(sums: Any, maxes: Any, loss: float, tokens: int, m: dict[str, float]) -> None:
    sums[0] += loss
    sums[1] += tokens
    for k, key in enumerate(SUM_KEYS):
        if key in m:
            sums[2 + 2 * k] += m[key] * tokens
            sums[3 + 2 * k] += tokens
    for k, key in enumerate(MAX_KEYS):
        if key in m:
            maxes[k] = max(float(maxes[k]), m[key])


def _all_reduce_grads(torch: Any, params: list[Any], sums: Any, maxes: Any, world: int) -> None:
    """Sum LoRA grads (one flat buffer) and the step's metric sums over the ranks."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if world == 1:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    torch.distributed.all_reduce(flat)
    pos = 0
    for p in params:
        p.grad.copy_(flat[pos : pos + p.numel()].view_as(p))
        pos += p.numel()
    _all_reduce_cpu(torch, sums, flat.device)
    _all_reduce_cpu(torch, maxes, flat.device, op=torch.distributed.ReduceOp.MAX)


def _all_reduce_cpu(torch: Any, tensor: Any, device: Any, op: Any = None) -> None:
    """All-reduce a CPU tensor in place; nccl only reduces GPU tensors, so go through ``device``."""
    work = tensor.to(device)
    torch.distributed.all_reduce(work, op=op or torch.distributed.ReduceOp.SUM)
    tensor.copy_(work.cpu())


def _metrics_row(n: int, lr: float, rollouts: int, grad_norm: float, sums: Any, maxes: Any, seconds: float,
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


def _weights_digest(torch: Any, model: Any) -> str:
    h = hashlib.sha256()
    for name, p in sorted((n, p) for n, p in model.named_parameters() if p.requires_grad):
        h.update(name.encode())
        h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _mean_final_reward(table: Any) -> float | None:
    """Mean of final_reward over rollouts (one value per rollout, not per call)."""
    per = table.group_by("rollout_id").aggregate([("final_reward", "max")]).column("final_reward_max").to_pylist()
    vals = [v for v in per if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else None


def _lora_summary(model: Any) -> dict[str, Any]:
    c = model.peft_config["default"]
    return {"r": c.r, "alpha": c.lora_alpha, "target_modules": sorted(c.target_modules)}


def _versions() -> dict[str, str]:
    import peft
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}


def _read_cycles(root: Path) -> list[dict[str, Any]]:
    import json

    path = root / "cycles.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class _Progress:
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
            self.bar.update(self.task, advance=1, info=info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
