"""One batch cycle: transition snapshot -> LoRA adapter (docs/trainer.md). Reads top to bottom.

load (snapshot rows, parent adapter, tokenizer, sequences, base model + LoRA)
-> log-probs at cycle start (what the loss declares it needs: pi_old, the reference for KL)
-> loop over steps (lr, micro-batches forward/backward, all-reduce, clip, step, zero_grad, update guard, log)
-> save (adapter, training_state.json, metrics.jsonl, report.png, LATEST, cycles.jsonl) -> notify.

Data-parallel plumbing is in ``distributed.py``; what a step logs is in ``step_log.py``; the update guard
(``--max-kl``: a step that moves the policy too far from the cycle start is rolled back) in ``guard.py``.
"""

from __future__ import annotations

import json
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
    Parent,
    append_cycle_line,
    base_model_hash,
    check_local_model,
    check_parent,
    lora_targets,
    next_cycle_id,
    notify_vllm,
    read_cycles,
    read_latest,
    save_cycle,
    trained_rollout_ids,
)
from spanrl.trainer.config import TrainConfig
from spanrl.trainer.data import DataStats, build_sequences, merge_trajectories, plan_steps, select_sft
from spanrl.trainer.distributed import (
    all_reduce_cpu,
    all_reduce_grads,
    finish_distributed,
    init_distributed,
    weights_digest,
)
from spanrl.trainer.guard import UpdateGuard, step_kl
from spanrl.trainer.logprobs import batch_logprobs, sequence_logprobs
from spanrl.trainer.losses import LOSSES, LossInputs, LossParams, kl_k3
from spanrl.trainer.step_log import StepProgress, accumulate, metrics_row, new_sums, token_mean
from spanrl.trainer.tracking import Tracker, finish_trackers, log_step, start_trackers
from spanrl.transitions.snapshot import read_snapshot


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
    guard: dict[str, Any] = field(default_factory=dict)  # UpdateGuard.summary: steps rolled back (--max-kl)


class AlreadyTrained(Exception):
    """adapters/LATEST was trained on this very snapshot content: a nightly ``ingest`` that found
    nothing new followed by ``train`` must not train the same rollouts twice."""


@dataclass
class CycleInputs:
    """What a cycle trains on, decided before any model is loaded."""

    table: Any  # pyarrow.Table of transition rows (after --new-only)
    manifest: dict[str, Any]
    parent: Parent | None
    base_path: Path
    base_hash: str
    already_trained_rows: int = 0


def train(cfg: TrainConfig, notify: str | None = None, progress: bool = True, promote: bool = True) -> TrainResult:
    """Run one cycle; raises InputError for anything the user can fix. ``promote=False`` saves the
    adapter as a candidate: adapters/LATEST stays until ``promote_adapter`` (``spanrl adapters promote``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own bar is the one progress display
    t0 = time.time()
    rank, world, device = init_distributed(torch)
    spec = LOSSES[cfg.loss]

    # ---- load: snapshot rows, parent adapter, sequences, policy
    inputs = load_cycle_inputs(cfg)
    snapshot_id = inputs.manifest["snapshot_id"]
    trackers = _start_tracking(cfg, inputs) if rank == 0 else []  # a missing library fails before the model loads
    tokenizer = AutoTokenizer.from_pretrained(inputs.base_path, local_files_only=True)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    seqs, stats = build_sequences(inputs.table, tokenizer, cfg.max_prompt_tokens, cfg.max_response_tokens,
                                  _stop_ids(inputs.base_path, tokenizer))
    if spec.good_rollouts_only:
        kept = select_sft(seqs, cfg.sft_min_return, cfg.sft_top_k)
        stats.sft_cut = sum(s.cut for s in seqs)
        stats.sft_dropped, seqs = len(seqs) - len(kept) - stats.sft_cut, kept
    if not seqs:
        raise InputError(f"snapshot {snapshot_id}: no trainable transitions ({stats.summary()}); "
                         + _nothing_to_train_hint(cfg, stats))
    n_transitions = len(seqs)
    if cfg.merge_calls:  # a call that extends the previous one trains inside its sequence
        seqs, stats.merged_calls = merge_trajectories(seqs)
    steps = plan_steps(seqs, cfg.rollouts_per_step, cfg.resolved_epochs, cfg.seed, cfg.loss_agg, cfg.tokens_per_batch)
    model = load_policy(torch, cfg, inputs, device)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if device.type == "cuda" else nullcontext

    # ---- log-probs at cycle start: pi_old (losses that declare it, and the update guard) and the reference (KL)
    def logprobs_now() -> list[Any]:
        return sequence_logprobs(model, seqs, cfg.tokens_per_batch, pad_id, device, rank, world, autocast)

    def policy_logp(idx: list[int]) -> Any:  # the update guard's measurement after a step
        return batch_logprobs(model, seqs, idx, pad_id, device, autocast)[0]

    ref = None
    if cfg.kl_coef > 0:
        with model.disable_adapter():
            ref = logprobs_now()
    old = None
    if spec.old_logp or cfg.max_kl > 0:  # a fresh LoRA adds exactly 0 (B = 0): pi_old is the base, already scored
        old = ref if ref is not None and inputs.parent is None else logprobs_now()

    # ---- loop
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.resolved_lr, betas=(0.9, 0.99), weight_decay=0.0)
    guard = UpdateGuard(torch, params, opt, cfg.max_kl)
    reduce = (lambda t: all_reduce_cpu(torch, t, device)) if world > 1 else None
    loss_params = LossParams(cfg.is_cap, cfg.clip_eps, cfg.clip_eps_high, cfg.kl_coef)
    total_rollouts, done_rollouts, response_tokens = sum(s.n_rollouts for s in steps), 0, 0
    metrics: list[dict[str, Any]] = []
    bar = StepProgress(len(steps), enabled=progress and rank == 0)

    def log(row: dict[str, Any]) -> None:
        metrics.append(row)
        log_step(trackers, row["step"], row)
        bar.advance(row)

    pending: dict[str, Any] | None = None  # the last step's row, logged once the update guard judged it
    for n, step in enumerate(steps):
        t_step, cpu_step = time.time(), time.process_time()
        lr = lr_at(done_rollouts, total_rollouts, cfg.resolved_lr, cfg.lr_schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        sums, maxes = new_sums(torch)
        for idx in step.batches[rank::world]:
            logp, b = batch_logprobs(model, seqs, idx, pad_id, device, autocast, step.weights)
            x = LossInputs(
                logp=logp, advantage=b["advantage"], weight=b["weight"], behaviour_logp=b["behaviour_logp"],
                old_logp=torch.cat([old[i] for i in idx]).to(device) if old is not None else None,
                ref_logp=torch.cat([ref[i] for i in idx]).to(device) if ref is not None else None,
            )
            loss, m = spec.fn(x, loss_params)
            if guard.on:  # this step's tokens under the weights the last step left: the guard's measure of it
                m["kl_start"] = float(kl_k3(logp.detach(), x.old_logp).mean())
            loss.backward()
            accumulate(sums, maxes, float(loss.detach()), int(logp.numel()), m)
        all_reduce_grads(torch, params, sums, maxes, world)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else float("inf"))
        undone = guard.judge(pending, token_mean(sums, "kl_start")) if guard.on else False
        if pending is not None:
            log(pending)
        if not undone:
            guard.save()
            opt.step()  # else this gradient was taken at the weights just rolled back: the step is skipped
        opt.zero_grad(set_to_none=True)
        done_rollouts += step.n_rollouts
        response_tokens += int(sums[1])
        row = metrics_row(n, lr, step.n_rollouts, float(grad_norm), sums, maxes, time.time() - t_step,
                          time.process_time() - cpu_step)
        if guard.on:
            row["skipped"], pending = int(undone), row
        else:
            log(row)
    if pending is not None:  # the last step is judged on its own tokens: one no-grad forward
        if not pending["skipped"]:
            guard.judge(pending, step_kl(torch, policy_logp, steps[-1].batches[rank::world], old, reduce))
        log(pending)
    bar.close()

    # ---- save (rank 0), then tell the server
    digest = weights_digest(torch, model, world)
    mean_loss = sum(r["loss"] for r in metrics) / len(metrics)
    result = TrainResult(None, None, len(steps), response_tokens, mean_loss, time.time() - t0, stats, digest,
                         guard=guard.summary(len(steps)))
    if rank == 0:
        run = {"steps": len(steps), "epochs": cfg.resolved_epochs, "data": vars(stats), "world_size": world,
               "guard": result.guard, "rolled_back_steps": len(guard.rolled_back),
               "weights_sha256": digest, "rollouts": len({s.rollout_id for s in seqs}), "transitions": n_transitions,
               "train_loss": mean_loss, "response_tokens": response_tokens, "time_s": round(time.time() - t0, 3)}
        result.cycle_id, result.folder = save_adapter(cfg, inputs, model, metrics, run, promote)
        finish_trackers(trackers, result.folder, {**run, "mean_final_reward": _mean_final_reward(inputs.table)},
                        {"cycle_id": result.cycle_id, "snapshot_id": snapshot_id, "promoted": str(promote)})
        if notify:
            warning = notify_vllm(notify, result.cycle_id, result.folder)
            if warning:
                result.warnings.append(warning)
    finish_distributed(torch, world)
    return result


# ---- the phases above, in the order the cycle runs them


def load_cycle_inputs(cfg: TrainConfig) -> CycleInputs:
    """The snapshot rows this cycle trains on and the adapter it continues from.

    Refuses (``AlreadyTrained``) a snapshot whose content LATEST was trained on, unless
    ``--retrain``; ``--new-only`` drops rollouts any cycle of LATEST's chain trained on.
    """
    base_path = check_local_model(cfg.model)
    base_hash = base_model_hash(base_path)
    table, manifest = read_snapshot(cfg.data, cfg.snapshot)
    snapshot_id = manifest["snapshot_id"]
    if table.num_rows == 0:
        raise InputError(f"snapshot {snapshot_id} has no transitions; ingest more rollouts, then train")
    if cfg.agent is not None:
        table = agent_rows(table, cfg.agent, snapshot_id)
    parent = None if cfg.fresh else read_latest(cfg.adapters_root)
    inputs = CycleInputs(table, manifest, parent, base_path, base_hash)
    if parent is None:
        return inputs
    check_parent(parent, base_path, base_hash)
    trained = parent.state.get("snapshot_content_hash")
    if not cfg.retrain and trained and trained == manifest["content_hash_read"]:
        raise AlreadyTrained(
            f"adapters/LATEST ({parent.cycle_id}) was already trained on snapshot {parent.state.get('snapshot_id')}, "
            f"whose rows equal {snapshot_id}'s; ingest new rollouts first, or pass --retrain")
    if cfg.new_only:
        import pyarrow as pa
        import pyarrow.compute as pc

        seen = trained_rollout_ids(cfg.data, cfg.adapters_root, parent)
        new = table.filter(pc.invert(pc.is_in(table["rollout_id"], value_set=pa.array(sorted(seen), pa.string()))))
        if new.num_rows == 0:
            raise AlreadyTrained(f"snapshot {snapshot_id} holds no rollout that adapters/LATEST ({parent.cycle_id}) "
                                 "and its parents have not trained on (--new-only)")
        inputs.table, inputs.already_trained_rows = new, table.num_rows - new.num_rows
    return inputs


def agent_rows(table: Any, agent: str, snapshot_id: str) -> Any:
    """The rows of one agent (``--agent``): its own chain learns only its own calls."""
    import pyarrow.compute as pc

    rows = table.filter(pc.equal(table["agent_name"], agent))
    if rows.num_rows == 0:
        names = sorted(n for n in table["agent_name"].unique().to_pylist() if n is not None)
        raise InputError(f"--agent {agent}: snapshot {snapshot_id} has no transitions of that agent; its agents: "
                         f"{names or 'none named (instrument the agent, or drop --agent)'}")
    return rows


def load_policy(torch: Any, cfg: TrainConfig, inputs: CycleInputs, device: Any) -> Any:
    """The base model with LoRA: the parent adapter, trainable, or a fresh all-linear LoRA."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(
        inputs.base_path, local_files_only=True, dtype=torch.bfloat16 if device.type == "cuda" else torch.float32,
        attn_implementation="sdpa",
    ).to(device)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if inputs.parent is not None:
        model = PeftModel.from_pretrained(model, inputs.parent.folder, is_trainable=True)
    else:
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, target_modules=lora_targets(model),
                          lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lora)
    model.train()
    return model


def lr_at(done: int, total: int, base: float, schedule: str) -> float:
    """Learning rate as a function of rollouts already trained on (not of transitions)."""
    if schedule == "constant":
        return base
    frac, warm = done / max(total, 1), 0.05
    if frac < warm:
        return base * (frac + 1.0 / max(total, 1)) / warm
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (frac - warm) / (1 - warm))))


def save_adapter(cfg: TrainConfig, inputs: CycleInputs, model: Any, metrics: list[dict[str, Any]],
                 run: dict[str, Any], promote: bool = True) -> tuple[str, Path]:
    """Write the cycle's adapter folder (atomically, then LATEST unless a candidate) and its line in cycles.jsonl."""
    root, parent, snapshot_id = cfg.adapters_root, inputs.parent, inputs.manifest["snapshot_id"]
    cycle, cycle_id = next_cycle_id(parent.state if parent else None)
    line = {"cycle": cycle, "cycle_id": cycle_id, "snapshot_id": snapshot_id, "loss": cfg.loss,
            "mean_final_reward": _mean_final_reward(inputs.table), "promoted": promote,
            **{k: run[k] for k in ("rollouts", "transitions", "train_loss", "response_tokens", "time_s",
                                   "rolled_back_steps")}}
    state = {
        **line, **{k: run[k] for k in ("steps", "epochs", "data", "world_size", "weights_sha256", "guard")},
        "parent": parent.cycle_id if parent else None, "base_model": str(inputs.base_path),
        "base_model_hash": inputs.base_hash, "snapshot_content_hash": inputs.manifest["content_hash_read"],
        "config": cfg.to_dict(), "seed": cfg.seed, "already_trained_rows": inputs.already_trained_rows,
        "lora": _lora_summary(model), "spanrl_version": __version__, "versions": _versions(),
    }
    history = read_cycles(root) + [line]

    def report(path: Path) -> None:
        from spanrl.trainer.cycle_report import write_cycle_report

        write_cycle_report(path, metrics, history, f"cycle {cycle_id} - snapshot {snapshot_id} - {cfg.loss}")

    folder = save_cycle(root, cycle_id, model, state, metrics, report, promote=promote)
    append_cycle_line(root, line)
    return cycle_id, folder


# ---- small helpers


def _start_tracking(cfg: TrainConfig, inputs: CycleInputs) -> list[Tracker]:
    """``--report-to``: one run per cycle, its params the resolved config and what the cycle trains on."""
    if not cfg.report_to or cfg.report_to == "none":
        return []
    m, parent = inputs.manifest, inputs.parent
    params = {**cfg.to_dict(), "snapshot_id": m["snapshot_id"], "snapshot_content_hash": m["content_hash_read"],
              "base_model_hash": inputs.base_hash, "parent": parent.cycle_id if parent else None}
    cycle = next_cycle_id(parent.state if parent else None)[0]
    return start_trackers(cfg.report_to, cfg.data, f"cycle-{cycle:04d}-{m['snapshot_id']}", params)


def _nothing_to_train_hint(cfg: TrainConfig, stats: DataStats) -> str:
    if LOSSES[cfg.loss].good_rollouts_only and stats.sft_cut and not stats.sft_dropped:
        return ("the good rollouts' replies were cut at the engine's token limit (finish_reason length) and are not "
                "imitated: raise the agent's or the server's max_tokens")
    if LOSSES[cfg.loss].good_rollouts_only and stats.sft_dropped:
        return "loosen --sft-min-return/--sft-top-k"
    if stats.no_prompt:
        return ("the text rows' prompts were not captured: turn message content on in the agent's instrumentation "
                "(README, capture table) or record through `spanrl gateway`; spanrl sql \"select * from coverage\"")
    if stats.template_error:  # the counted reasons, not a guess: a missing template is one of them only when it is
        return f"the text rows could not be rendered with the model's chat template: {stats.error_reasons()}"
    return "check the snapshot rows"


def _stop_ids(base_path: Path, tokenizer: Any) -> set[int]:
    """End-of-turn ids: the tokenizer's eos plus generation_config's eos list."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    gen = base_path / "generation_config.json"
    if gen.is_file():
        eos = json.loads(gen.read_text()).get("eos_token_id")
        ids |= set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    return ids


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
