"""bench/train: response tokens/s of ``spanrl train --loss sft`` vs TRL's SFTTrainer (README, Performance).

Same base model, same LoRA (r=16, alpha=32, all linear layers but the head), same token sequences
(the transitions are rendered once by spanrl's data path and the very same ids, with a completion
mask, are handed to TRL), same optimizer step (8 sequences, lr 2e-4, AdamW betas (0.9, 0.99),
grad clip 1.0, token-mean loss), same number of steps, fp32 on CPU, no gradient checkpointing on
either side. TRL runs one padded batch of 8 per step (its defaults: pad to the longest, full
logits); spanrl splits the same 8 into length-bucketed micro-batches of ``--tokens-per-batch``
padded tokens and computes log-probs at response positions only. Lengths are ``varied`` by
default (spread over [L/4, L], as agent calls are), ``fixed`` on request.

Each side runs in its own subprocess (so its peak RSS is its own), alternating for ``--rounds``;
the best round of each side counts. Figures: response tokens per wall second and per CPU second
of the training steps (setup excluded on both sides); on a machine shared with other jobs the
CPU-second figure is the stable one, hence 1 thread per side by default.

    .venv/bin/python bench/train.py                 # tiny model, then the demo model (SmolLM2-135M)
    .venv/bin/python bench/train.py --models tiny --steps 20 --lengths fixed
    .venv/bin/python bench/train.py --multi-call 4  # trajectory merging on vs off (spanrl only)

``--multi-call K``: rollouts of K chained calls (each prompt = the previous prompt + response + a tool
result, as an agent's conversation grows), trained by spanrl with ``merge_calls`` on (one sequence
per rollout, the shared prefix computed once) against off (K sequences); same steps, same tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ("the agent called the tool and the result was added to the answer with 12 and 30 giving 42 "
         "then it checked the JSON output {\"ok\": true} before replying to the user politely").split()


def make_rows(tokenizer, n: int, seq_len: int, varied: bool) -> list[dict]:
    """n single-call rollouts (engine token ids), mostly response tokens. ``varied``: lengths
    spread evenly over [seq_len/4, seq_len] in a shuffled order, as agent calls are; else all seq_len."""
    from tests.helpers.tiny_model import transition_row

    rows = []
    for i in range(n):
        target = seq_len - ((i * 37) % n) * (3 * seq_len // 4) // max(n - 1, 1) if varied else seq_len
        messages = [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": f"Task {i}: explain what happened in step {i % 7}."}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        words, r_ids = [], []
        k = i
        while len(p_ids) + len(r_ids) < target - 1:
            words.append(WORDS[k % len(WORDS)])
            k += 1
            r_ids = tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]
        r_ids = r_ids[: max(1, target - 1 - len(p_ids))] + [tokenizer.eos_token_id]
        rows.append(transition_row(
            rollout_id=f"r{i}", task_id=f"t{i}", prompt_messages=json.dumps(messages),
            response_message=json.dumps({"role": "assistant", "content": " ".join(words)}),
            prompt_token_ids=p_ids, response_token_ids=r_ids, token_source="engine",
            final_reward=1.0, advantage=1.0, **{"return": 1.0},
        ))
    return rows


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_chained_rows(tokenizer, n: int, calls: int, seq_len: int) -> list[dict]:
    """n rollouts of ``calls`` engine calls each; call t+1's prompt extends call t's prompt + response."""
    from tests.helpers.tiny_model import transition_row

    rows = []
    per_call = max(8, seq_len // (2 * calls))  # response tokens per call: the last call stays near seq_len
    for i in range(n):
        messages = [{"role": "user", "content": f"Task {i}: work it out with the tool, step by step."}]
        prompt = tokenizer(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
                           add_special_tokens=False)["input_ids"]
        for t in range(calls):
            words = " ".join(WORDS[(i + t + k) % len(WORDS)] for k in range(per_call))
            response = tokenizer(words, add_special_tokens=False)["input_ids"][: per_call - 1] + [tokenizer.eos_token_id]
            rows.append(transition_row(
                rollout_id=f"r{i:04d}", task_id=f"t{i}", step=t, n_steps=calls, is_last=t == calls - 1,
                prompt_token_ids=prompt, response_token_ids=response, token_source="engine",
                final_reward=1.0, advantage=1.0, **{"return": 1.0}))
            tool = tokenizer(f"\ntool: result {i * 31 + t} ok\nassistant:", add_special_tokens=False)["input_ids"]
            prompt = prompt + response + tool
    return rows


def worker_spanrl(model: Path, data: Path, steps: int, batch: int, seq_len: int, budget: int,
                  merge: bool = True) -> dict:
    from spanrl.trainer.config import TrainConfig
    from spanrl.trainer.train import train

    cfg = TrainConfig(model=model, data=data, loss="sft", loss_agg="token", lr=2e-4, epochs=1,
                      rollouts_per_step=batch, tokens_per_batch=budget, max_prompt_tokens=seq_len,
                      max_response_tokens=seq_len, out=data / "bench-adapters", fresh=True, merge_calls=merge)
    result = train(cfg, progress=False)
    rows = [json.loads(x) for x in (result.folder / "metrics.jsonl").read_text().splitlines()][:steps]
    seconds = sum(r["seconds"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    tokens = sum(r["response_tokens"] for r in rows)
    return {"steps": len(rows), "response_tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
            "tokens_per_cpu_s": tokens / cpu, "cpu_s": cpu, "final_loss": rows[-1]["loss"],
            "losses": [r["loss"] for r in rows]}


def worker_trl(model: Path, data: Path, steps: int, batch: int, seq_len: int, budget: int) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import SFTConfig, SFTTrainer

    from spanrl.trainer.adapter import lora_targets

    hf_logging.disable_progress_bar()
    seqs = json.loads((data / "sequences.json").read_text())[: steps * batch]
    ds = Dataset.from_list([{"input_ids": s["ids"], "completion_mask": [0] * s["n_prompt"] + [1] * (len(s["ids"]) - s["n_prompt"])}
                            for s in seqs])
    tokenizer = AutoTokenizer.from_pretrained(model)
    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32, attn_implementation="sdpa")
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=lora_targets(base), lora_dropout=0.0, bias="none",
                      task_type="CAUSAL_LM")
    args = SFTConfig(output_dir=str(data / "trl-out"), per_device_train_batch_size=batch, gradient_accumulation_steps=1,
                     max_steps=steps, learning_rate=2e-4, lr_scheduler_type="constant", warmup_steps=0,
                     logging_steps=1, report_to=[], save_strategy="no", max_length=seq_len, packing=False,
                     bf16=False, fp16=False, gradient_checkpointing=False, dataloader_num_workers=0,
                     disable_tqdm=True, seed=0, completion_only_loss=True, max_grad_norm=1.0,
                     adam_beta2=0.99, weight_decay=0.0)
    step_times: list[float] = []
    step_cpu: list[float] = []

    class StepTimer(TrainerCallback):
        """Time each optimizer step like spanrl's metrics do (setup excluded on both sides)."""

        def on_step_begin(self, *a, **k):
            self.t, self.cpu = time.perf_counter(), time.process_time()

        def on_step_end(self, *a, **k):
            step_times.append(time.perf_counter() - self.t)
            step_cpu.append(time.process_time() - self.cpu)

    class InOrderSFTTrainer(SFTTrainer):
        """Read sequences.json in its order (spanrl's step order), not Trainer's own random order."""

        def _get_train_sampler(self, *a, **k):
            return torch.utils.data.SequentialSampler(self.train_dataset)

    trainer = InOrderSFTTrainer(model=base, args=args, train_dataset=ds, processing_class=tokenizer, peft_config=lora,
                         callbacks=[StepTimer()])
    out = trainer.train()
    seconds = sum(step_times)
    tokens = sum(len(s["ids"]) - s["n_prompt"] for s in seqs)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"steps": out.global_step, "response_tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
            "tokens_per_cpu_s": tokens / sum(step_cpu), "cpu_s": sum(step_cpu), "final_loss": losses[-1], "losses": losses}


def prepare(name: str, work: Path, steps: int, batch: int, seq_len: int, varied: bool,
            calls: int = 0) -> tuple[Path, Path]:
    """Base model folder + a data root holding the snapshot and the rendered sequences."""
    import pyarrow as pa
    from transformers import AutoTokenizer

    from spanrl.trainer.config import TrainConfig
    from spanrl.trainer.data import build_sequences, plan_steps
    from spanrl.transitions import TRANSITION_SCHEMA
    from tests.helpers.tiny_model import make_tiny_model, write_rows_snapshot

    if name == "tiny":
        model = make_tiny_model(work / "tiny-model")
    else:
        from spanrl.serve.models import prepare_demo_model

        model = prepare_demo_model(Path(os.environ.get("SPANRL_BENCH_CACHE", Path(tempfile.gettempdir()) / "spanrl-bench")))
    tokenizer = AutoTokenizer.from_pretrained(model)
    rows = make_chained_rows(tokenizer, steps * batch, calls, seq_len) if calls else make_rows(tokenizer, steps * batch, seq_len, varied)
    data = work / f"data-{name}"
    write_rows_snapshot(data, rows)
    seqs, stats = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 1 << 16, seq_len)
    assert stats.skipped == 0 and len(seqs) == len(rows)
    # spanrl shuffles rollouts into steps (seeded); TRL must see the same sequences at the same step, or the
    # per-step losses compare different batches (with varied lengths: 1.998 vs 1.494 at the last step)
    plan = plan_steps(seqs, batch, 1, TrainConfig.seed, "token", 1 << 30)
    ordered = [seqs[i] for step in plan for mb in step.batches for i in sorted(mb)]
    (data / "sequences.json").write_text(json.dumps([{"ids": s.ids, "n_prompt": s.n_prompt} for s in ordered]))
    return model, data


def run_worker(side: str, model: Path, data: Path, steps: int, batch: int, seq_len: int, budget: int,
               threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", side, "--model-dir", str(model), "--data", str(data),
           "--steps", str(steps), "--batch", str(batch), "--seq-len", str(seq_len), "--tokens-per-batch", str(budget)]
    if side.startswith("spanrl-"):  # merged / unmerged
        cmd[3] = "spanrl"
        cmd += ["--multi-call", "1" if side == "spanrl-merged" else "0"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{side} worker failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="tiny,demo", help="comma list: tiny, demo")
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per side (default 20 tiny, 3 demo)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--tokens-per-batch", type=int, default=512, help="spanrl micro-batch budget (padded tokens)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads per side (1: stable figures on a shared machine; CPU time is what counts)")
    ap.add_argument("--lengths", choices=["varied", "fixed"], default="varied",
                    help="varied: lengths spread over [L/4, L] like agent calls; fixed: every sequence L tokens")
    ap.add_argument("--rounds", type=int, default=2, help="alternate the two sides this often; best of each counts")
    ap.add_argument("--multi-call", type=int, default=0,
                    help="K > 1: rollouts of K chained calls, spanrl with trajectory merging vs without")
    ap.add_argument("--worker", choices=["spanrl", "trl"], help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        if a.worker == "spanrl":  # in a worker, --multi-call is 1 (merge) or 0 (don't)
            res = worker_spanrl(a.model_dir, a.data, a.steps, a.batch, a.seq_len, a.tokens_per_batch, a.multi_call != 0)
        else:
            res = worker_trl(a.model_dir, a.data, a.steps, a.batch, a.seq_len, a.tokens_per_batch)
        res["peak_rss_mb"] = round(peak_rss_mb(), 1)
        print(json.dumps(res))
        return
    if a.multi_call > 1:
        return bench_merging(a)
    print(f"bench/train: {a.batch} sequences/step, {a.lengths} lengths <= {a.seq_len} tokens, LoRA r=16 all-linear, "
          f"fp32 CPU, {a.threads} thread(s), spanrl --tokens-per-batch {a.tokens_per_batch}, best of {a.rounds} alternating rounds")
    with tempfile.TemporaryDirectory(prefix="spanrl-bench-train-") as tmp:
        for name in a.models.split(","):
            steps = a.steps or (20 if name == "tiny" else 3)
            model, data = prepare(name, Path(tmp), steps, a.batch, a.seq_len, a.lengths == "varied")
            runs, best = alternate_rounds(("spanrl", "trl"), a, model, data, steps)
            for side, r in best.items():
                print(f"  {name:5s} {side:7s} {r['steps']:3d} steps  {r['response_tokens']:7d} resp tokens  "
                      f"{r['seconds']:8.2f} s  {r['tokens_per_s']:9.1f} resp tok/s  peak RSS {r['peak_rss_mb']:8.1f} MB  "
                      f"last-step loss {r['final_loss']:.3f}  (all rounds: "
                      + ", ".join(f"{x['tokens_per_s']:.0f}" for x in runs[side]) + ")")
                print(f"  {name:5s} {side:7s} per-step losses " + " ".join(f"{v:.4f}" for v in r["losses"])
                      + f"  CPU s of the steps {r['cpu_s']:.1f}")
            ratio = best["spanrl"]["tokens_per_s"] / best["trl"]["tokens_per_s"]
            cpu_ratio = (max(r["tokens_per_cpu_s"] for r in runs["spanrl"])
                         / max(r["tokens_per_cpu_s"] for r in runs["trl"]))
            rss = best["spanrl"]["peak_rss_mb"] / best["trl"]["peak_rss_mb"]
            print(f"  {name:5s} ratio spanrl/TRL response tokens/s: {ratio:.2f}x wall, {cpu_ratio:.2f}x per CPU-second "
                  f"(goal >= 1.3); peak RSS ratio {rss:.2f}")


def alternate_rounds(sides: tuple[str, ...], a: argparse.Namespace, model: Path, data: Path,
                     steps: int) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    """Run the sides in alternation ``--rounds`` times (so machine noise hits both alike); every
    run per side, and each side's best run by response tokens/s."""
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    for _ in range(a.rounds):
        for side in sides:
            runs[side].append(run_worker(side, model, data, steps, a.batch, a.seq_len, a.tokens_per_batch, a.threads))
    best = {side: max(rs, key=lambda r: r["tokens_per_s"]) for side, rs in runs.items()}
    return runs, best


def bench_merging(a: argparse.Namespace) -> None:
    """spanrl on multi-call rollouts, trajectory merging on vs off; best of ``--rounds`` each."""
    print(f"bench/train --multi-call {a.multi_call}: {a.batch} rollouts/step of {a.multi_call} chained calls "
          f"(last call <= ~{a.seq_len} tokens), LoRA r=16, fp32 CPU, {a.threads} thread(s), "
          f"--tokens-per-batch {a.tokens_per_batch}, best of {a.rounds} alternating rounds")
    with tempfile.TemporaryDirectory(prefix="spanrl-bench-merge-") as tmp:
        for name in a.models.split(","):
            steps = a.steps or (10 if name == "tiny" else 3)
            model, data = prepare(name, Path(tmp), steps, a.batch, a.seq_len, False, a.multi_call)
            runs, best = alternate_rounds(("spanrl-merged", "spanrl-unmerged"), a, model, data, steps)
            for side, r in best.items():
                print(f"  {name:5s} {side:15s} {r['steps']:3d} steps  {r['response_tokens']:7d} resp tokens  "
                      f"{r['seconds']:8.2f} s  {r['tokens_per_s']:9.1f} resp tok/s  {r['tokens_per_cpu_s']:9.1f} per CPU-s  "
                      f"loss {r['final_loss']:.4f}")
            ratio = best["spanrl-merged"]["tokens_per_s"] / best["spanrl-unmerged"]["tokens_per_s"]
            cpu = (max(r["tokens_per_cpu_s"] for r in runs["spanrl-merged"])
                   / max(r["tokens_per_cpu_s"] for r in runs["spanrl-unmerged"]))
            print(f"  {name:5s} merged/unmerged response tokens/s: {ratio:.2f}x wall, {cpu:.2f}x per CPU-second")


if __name__ == "__main__":
    main()
