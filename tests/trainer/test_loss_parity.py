"""spanrl's token-aggregated SFT loss equals TRL's completion-only loss on the same batch (varied lengths).

Why: bench/train.py quotes spanrl's speed against TRL's SFTTrainer; the ratio only means something if both
optimise the same objective. TRL (completion_only_loss, per-batch token count) averages the cross-entropy
over every completion token of the padded batch. First by hand from the same logits, then end to end:
spanrl's training loop against TRL's own SFTTrainer (a dev dependency) on a real tiny model.
"""

from __future__ import annotations

import pytest
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


def test_spanrl_first_step_loss_equals_trl_sft_trainer_on_a_real_model_with_varied_lengths(tmp_path) -> None:
    """The same check end to end: spanrl's training loop and TRL's SFTTrainer (completion_only_loss) on one
    step of the very same token ids, lengths 6..40, on a real (tiny, peaked) Llama. Both start from the
    base model (LoRA B = 0), so their first-step losses must agree; ``loss_agg=sequence`` must not
    (the model's per-token losses differ enough to tell what is counted).

    The demo's SmolLM2-135M is what bench/train.py runs (losses equal to 4 decimals there; docs/trainer.md);
    it is too slow and memory-hungry (TRL peaks near 8 GB) for the suite, hence the tiny model here."""
    import json

    import pyarrow as pa
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from spanrl.trainer.config import TrainConfig
    from spanrl.trainer.data import build_sequences
    from spanrl.trainer.train import train
    from spanrl.transitions import TRANSITION_SCHEMA
    from tests.helpers.tiny_model import make_tiny_model, transition_row, write_rows_snapshot

    trl = pytest.importorskip("trl")
    model_dir = make_tiny_model(tmp_path / "model")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    with torch.no_grad():  # peaked, not near-uniform logits: a random tiny model's loss is ln V whatever is counted
        model.lm_head.weight.mul_(40.0)
    model.save_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    gen = torch.Generator().manual_seed(1)
    rows = []
    for i, (n_p, n_r) in enumerate([(3, 3), (5, 35), (4, 12), (2, 22)]):
        ids = torch.randint(5, tok.vocab_size, (n_p + n_r,), generator=gen).tolist()
        rows.append(transition_row(rollout_id=f"r{i}", task_id=f"t{i}", prompt_token_ids=ids[:n_p],
                                   response_token_ids=ids[n_p:], token_source="engine", final_reward=1.0,
                                   advantage=1.0, **{"return": 1.0}))
    data = tmp_path / "data"
    write_rows_snapshot(data, rows)

    def spanrl_loss(agg: str) -> float:
        cfg = TrainConfig(model=model_dir, data=data, loss="sft", loss_agg=agg, lr=1e-4, rollouts_per_step=4,
                          tokens_per_batch=48, out=tmp_path / f"adapters-{agg}", fresh=True)  # several micro-batches
        folder = train(cfg, progress=False).folder
        return json.loads((folder / "metrics.jsonl").read_text().splitlines()[0])["loss"]

    seqs, _ = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tok, 1 << 16, 1 << 16)
    from datasets import Dataset
    from peft import LoraConfig

    from spanrl.trainer.adapter import lora_targets

    ds = Dataset.from_list([{"input_ids": s.ids, "completion_mask": [0] * s.n_prompt + [1] * (len(s.ids) - s.n_prompt)}
                            for s in seqs])
    args = trl.SFTConfig(output_dir=str(tmp_path / "trl"), per_device_train_batch_size=4, max_steps=1, learning_rate=1e-4,
                         logging_steps=1, report_to=[], save_strategy="no", max_length=None, packing=False,
                         completion_only_loss=True, disable_tqdm=True, use_cpu=True, dataloader_num_workers=0,
                         bf16=False, fp16=False)  # SFTConfig's default bf16=True autocasts even on CPU: 0.06% off
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=lora_targets(model), lora_dropout=0.0, task_type="CAUSAL_LM")
    trainer = trl.SFTTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args, train_dataset=ds,
                             processing_class=tok, peft_config=lora)
    trainer.train()
    trl_loss = [h["loss"] for h in trainer.state.log_history if "loss" in h][0]
    assert spanrl_loss("token") == pytest.approx(trl_loss, rel=1e-4)
    assert abs(spanrl_loss("sequence") - trl_loss) > 1e-2 * trl_loss
