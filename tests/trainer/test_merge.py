"""Trajectory merging: a call whose tokens extend the previous call's prompt + response is trained
inside that call's sequence, and the loss it sees is the unmerged one (same log-probs per token)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import torch

from spanrl.trainer.data import build_sequences, collate, merge_trajectories, plan_steps
from spanrl.trainer.logprobs import response_logprobs
from spanrl.trainer.losses import LossInputs, LossParams, pg_loss
from spanrl.transitions import TRANSITION_SCHEMA
from tests.helpers.tiny_model import make_tiny_model, transition_row


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def chained_rows(tokenizer, rollouts: int = 2, calls: int = 3, break_at: int | None = None) -> list[dict]:
    """Engine rows where call t+1's prompt = call t's prompt + response + a tool result + the next
    turn's header (an agent appending to its conversation). ``break_at``: that call's prompt is
    re-rendered (differs at the first token), so it cannot merge."""
    rows = []
    for r in range(rollouts):
        prompt = tokenizer(f"<|im_start|>user\nadd {r} and 7<|im_end|>\n<|im_start|>assistant\n",
                           add_special_tokens=False)["input_ids"]
        for t in range(calls):
            response = tokenizer(f"step {t} of rollout {r}: calling add", add_special_tokens=False)["input_ids"] + [
                tokenizer.eos_token_id]
            p_ids = list(prompt)
            if break_at == t:
                p_ids[0] = (p_ids[0] + 1) % 300
            rows.append(transition_row(
                rollout_id=f"r{r}", task_id="t", step=t, n_steps=calls, token_source="engine",
                prompt_token_ids=p_ids, response_token_ids=response, response_logprobs=[-0.5 - 0.1 * t] * len(response),
                final_reward=float(r), advantage=(r - 0.5) + 0.25 * t, temperature=0.7 + 0.1 * t,
                **{"return": float(r)}, is_last=t == calls - 1))
            tool = tokenizer(f"\n<|im_start|>tool\n{7 + r + t}<|im_end|>\n<|im_start|>assistant\n",
                             add_special_tokens=False)["input_ids"]
            prompt = p_ids + response + tool
    return rows


def _flat(model, seqs, steps=None):
    """Per-token log-probs, advantages, behaviour, weights of every response token, in call order."""
    idx = list(range(len(seqs)))
    weights = steps[0].weights if steps else None
    b = collate(seqs, idx, pad_id=0, weights=weights)
    with torch.no_grad():
        logp = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"],
                                 inv_temperature=b["inv_temperature"])
    return logp, b


def test_merged_and_unmerged_give_the_same_per_token_logprobs_and_loss(model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    table = pa.Table.from_pylist(chained_rows(tokenizer), schema=TRANSITION_SCHEMA)
    seqs, stats = build_sequences(table, tokenizer, 4096, 4096)
    merged, n_merged = merge_trajectories(seqs)
    assert (len(seqs), len(merged), n_merged) == (6, 2, 4)  # 2 rollouts x 3 calls -> one sequence each
    assert sum(s.n_response for s in merged) == sum(s.n_response for s in seqs)
    assert sum(len(s.ids) for s in merged) < sum(len(s.ids) for s in seqs) / 2  # the shared prefix once

    plan = dict(rollouts_per_step=2, epochs=1, seed=0, agg="sequence", tokens_per_batch=1 << 16)
    lp_u, b_u = _flat(model, seqs, plan_steps(seqs, **plan))
    lp_m, b_m = _flat(model, merged, plan_steps(merged, **plan))
    assert torch.equal(b_u["targets"], b_m["targets"])
    for key in ("advantage", "behaviour_logp", "inv_temperature", "weight"):  # each call keeps its own values
        assert torch.allclose(b_u[key], b_m[key]), key
    assert torch.allclose(lp_u, lp_m, atol=1e-5), (lp_u - lp_m).abs().max()

    def loss(lp, b):
        x = LossInputs(logp=lp, advantage=b["advantage"], weight=b["weight"], behaviour_logp=b["behaviour_logp"])
        return pg_loss(x, LossParams())[0]

    assert float(loss(lp_u, b_u)) == pytest.approx(float(loss(lp_m, b_m)), abs=1e-6)


def test_only_true_extensions_merge(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = chained_rows(tokenizer, rollouts=1, calls=3, break_at=2)  # call 2's prompt was re-rendered
    seqs, _ = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)
    merged, n = merge_trajectories(seqs)
    assert n == 1 and [len(s.response_parts) for s in merged] == [2, 1]
    other = [{**r, "rollout_id": f"x{i}"} for i, r in enumerate(chained_rows(tokenizer, rollouts=1, calls=2))]
    seqs, _ = build_sequences(pa.Table.from_pylist(other, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)
    assert merge_trajectories(seqs)[1] == 0  # another rollout's call never merges
