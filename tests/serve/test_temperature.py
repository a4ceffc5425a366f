"""The policy is scored at the temperature the engine sampled at, so on-policy ratios are 1."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import torch
from transformers import AutoModelForCausalLM

from spanrl.trainer.data import build_sequences, collate
from spanrl.trainer.logprobs import response_logprobs
from spanrl.transitions import TRANSITION_SCHEMA
from tests.helpers.tiny_model import make_tiny_model


def test_tempered_logprobs_match_the_sampling_distribution(tmp_path: Path) -> None:
    path = make_tiny_model(tmp_path / "m")
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    prompt, response = [5, 6, 7, 8], [9, 10, 11]
    cols = {name: [None] for name in TRANSITION_SCHEMA.names}
    cols.update(snapshot_id=["s"], rollout_id=["r"], step=[0], n_steps=[1], token_source=["engine"],
                prompt_token_ids=[prompt], response_token_ids=[response], temperature=[0.7], advantage=[1.0])
    seqs, _ = build_sequences(pa.table(cols, schema=TRANSITION_SCHEMA), _Tok(), 64, 64)
    assert seqs[0].temperature == 0.7
    b = collate(seqs, [0], pad_id=0)
    with torch.no_grad():
        got = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"],
                                inv_temperature=b["inv_temperature"])
        plain = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"])
        logits = model(input_ids=torch.tensor([prompt + response])).logits[0]
    want = torch.log_softmax(logits[len(prompt) - 1 : -1] / 0.7, -1).gather(-1, torch.tensor(response)[:, None])[:, 0]
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(plain, want, atol=1e-3)


class _Tok:
    """Just enough tokenizer for the engine-token path."""

    eos_token_id = 2

    def __len__(self) -> int:
        return 512
