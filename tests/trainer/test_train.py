"""The training cycle on the tiny random Llama: learning direction, resume, outputs, errors, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import torch
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.trainer.config import TrainConfig
from spanrl.trainer.train import AlreadyTrained, train
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot

OUTPUTS = ("adapter_config.json", "adapter_model.safetensors", "training_state.json", "metrics.jsonl", "report.png")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def _snapshot(data: Path, tokenizer, **kw) -> Path:
    return write_rows_snapshot(data, tiny_rollout_rows(tokenizer, **kw))


def _cfg(model_dir: Path, data: Path, **kw) -> TrainConfig:
    return TrainConfig(model=model_dir, data=data, **kw)


def _state(folder: Path) -> dict:
    return json.loads((folder / "training_state.json").read_text())


def _load(model_dir: Path, adapter: Path | None):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    return PeftModel.from_pretrained(model, adapter) if adapter else model


def _seq_logp(model, ids: list[int], n_prompt: int) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1)
    return float(logp[n_prompt - 1 :].sum())


def test_one_pg_step_raises_positive_and_lowers_negative_response(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    rows = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=2, calls_per_rollout=1)
    rows[0]["advantage"], rows[1]["advantage"] = -1.0, 1.0
    write_rows_snapshot(tmp_path, rows)
    result = train(_cfg(model_dir, tmp_path, lr=1e-2, rollouts_per_step=2), progress=False)
    assert result.steps == 1
    before, after = _load(model_dir, None), _load(model_dir, result.folder)
    neg, pos = (r["prompt_token_ids"] + r["response_token_ids"] for r in rows)
    n_neg, n_pos = len(rows[0]["prompt_token_ids"]), len(rows[1]["prompt_token_ids"])
    assert _seq_logp(after, pos, n_pos) > _seq_logp(before, pos, n_pos)
    assert _seq_logp(after, neg, n_neg) < _seq_logp(before, neg, n_neg)


def test_logprobs_in_chunks_equal_full_logits(model_dir: Path, tokenizer) -> None:
    import pyarrow as pa

    from spanrl.trainer.data import build_sequences, collate
    from spanrl.trainer.logprobs import response_logprobs
    from spanrl.transitions import TRANSITION_SCHEMA

    rows = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=2, calls_per_rollout=2)
    seqs, _ = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)
    model = _load(model_dir, None)
    b = collate(seqs, list(range(len(seqs))), tokenizer.pad_token_id)
    with torch.no_grad():
        chunked = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"], chunk=7)
    s = seqs[0]
    with torch.no_grad():  # the naive way: full logits of the whole sequence, log-softmax, gather
        logits = model(torch.tensor([s.ids])).logits[0, s.n_prompt - 1 : -1]
    expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(s.ids[s.n_prompt :])[:, None]).squeeze(-1)
    assert torch.allclose(chunked[: s.n_response], expected, atol=1e-4)
    assert chunked.shape[0] == sum(s.n_response for s in seqs)


def test_kl_is_zero_at_start_and_ppo_ratio_is_one(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path, tokenizer)
    result = train(_cfg(model_dir, tmp_path, loss="ppo", kl_coef=0.1, lr=1e-2, rollouts_per_step=2), progress=False)
    rows = [json.loads(line) for line in (result.folder / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 6  # 6 rollouts / 2 per step x 2 epochs (ppo default)
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-9)
    assert rows[0]["ratio_mean"] == pytest.approx(1.0, abs=1e-5) and rows[0]["clip_frac"] == 0.0
    assert rows[-1]["kl"] > 0  # the adapter moved away from the base
    assert any(r["ratio_mean"] != pytest.approx(1.0, abs=1e-6) for r in rows[1:])


def test_resume_continues_from_latest_and_checks_the_base(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path, tokenizer)
    first = train(_cfg(model_dir, tmp_path, lr=1e-2, seed=1), progress=False)
    with pytest.raises(AlreadyTrained, match="--retrain"):  # the same rows twice: skipped unless asked
        train(_cfg(model_dir, tmp_path, lr=1e-12, seed=2), progress=False)
    second = train(_cfg(model_dir, tmp_path, lr=1e-12, seed=2, retrain=True), progress=False)  # lr ~0: weights stay
    s1, s2 = _state(first.folder), _state(second.folder)
    assert (s1["cycle"], s1["parent"], s2["cycle"], s2["parent"]) == (1, None, 2, first.cycle_id)
    assert (tmp_path / "adapters" / "LATEST").read_text().strip() == second.cycle_id
    from safetensors.torch import load_file

    w1, w2 = load_file(first.folder / "adapter_model.safetensors"), load_file(second.folder / "adapter_model.safetensors")
    assert w1.keys() == w2.keys()
    assert all(torch.allclose(w1[k], w2[k], atol=1e-6) for k in w1)  # started from cycle 1's weights
    assert any(float(w1[k].abs().max()) > 0 for k in w1 if "lora_B" in k)
    cycles = [json.loads(x) for x in (tmp_path / "adapters" / "cycles.jsonl").read_text().splitlines()]
    assert [c["cycle_id"] for c in cycles] == [first.cycle_id, second.cycle_id]
    candidate = train(_cfg(model_dir, tmp_path, lr=1e-12, seed=3, retrain=True), progress=False, promote=False)
    assert (tmp_path / "adapters" / "LATEST").read_text().strip() == second.cycle_id  # a candidate only
    assert (candidate.folder / "adapter_model.safetensors").is_file() and _state(candidate.folder)["parent"] == second.cycle_id
    last = json.loads((tmp_path / "adapters" / "cycles.jsonl").read_text().splitlines()[-1])
    assert last["cycle_id"] == candidate.cycle_id and last["promoted"] is False

    other = make_tiny_model(tmp_path / "other", arch="qwen2")
    with pytest.raises(InputError, match="--fresh"):
        train(_cfg(other, tmp_path), progress=False)
    fresh = train(_cfg(other, tmp_path, fresh=True), progress=False)
    assert _state(fresh.folder)["parent"] is None


def test_adapter_reloads_with_peft_and_has_only_vllm_options(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path, tokenizer)
    result = train(_cfg(model_dir, tmp_path, lr=1e-2), progress=False)
    cfg = json.loads((result.folder / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] in (1, 8, 16, 32, 64, 128, 256, 320, 512)
    assert cfg["modules_to_save"] is None and cfg["use_dora"] is False and cfg["bias"] == "none"
    assert sorted(cfg["target_modules"]) == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    assert not list(result.folder.glob("*.bin"))
    from safetensors.torch import load_file

    keys = load_file(result.folder / "adapter_model.safetensors").keys()
    assert keys and all(k.endswith(("lora_A.weight", "lora_B.weight")) for k in keys)

    base, a, b = _load(model_dir, None), _load(model_dir, result.folder), _load(model_dir, result.folder)
    ids = torch.tensor([tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=1, calls_per_rollout=1)[0]["prompt_token_ids"]])
    with torch.no_grad():
        la, lb, l0 = a(ids).logits, b(ids).logits, base(ids).logits
    assert torch.equal(la, lb) and not torch.allclose(la, l0)
    from spanrl.trainer.distributed import weights_digest

    assert weights_digest(torch, _load_trainable(model_dir, result.folder), 1) == _state(result.folder)["weights_sha256"]


def _load_trainable(model_dir: Path, adapter: Path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), adapter, is_trainable=True)


def test_same_seed_same_adapter_other_seed_differs(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path / "d", tokenizer, n_tasks=2, calls_per_rollout=1)
    runs = [train(_cfg(model_dir, tmp_path / "d", lr=1e-2, seed=s, fresh=True, out=tmp_path / f"o{i}"), progress=False)
            for i, s in enumerate((7, 7, 8))]
    assert runs[0].weights_sha256 == runs[1].weights_sha256 != runs[2].weights_sha256


def test_sft_trains_on_good_rollouts_only(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path, tokenizer, n_tasks=2, rollouts_per_task=3)
    result = train(_cfg(model_dir, tmp_path, loss="sft", sft_top_k=1), progress=False)
    state = _state(result.folder)
    assert state["rollouts"] == 2 and state["data"]["sft_dropped"] == 8
    with pytest.raises(InputError, match="sft"):
        train(_cfg(model_dir, tmp_path, loss="sft", sft_min_return=99.0, retrain=True), progress=False)


def test_config_validation_says_what_to_set() -> None:
    with pytest.raises(InputError, match="vLLM accepts"):
        TrainConfig(lora_r=12)
    with pytest.raises(InputError, match="--loss sft"):
        TrainConfig(sft_top_k=2)
    with pytest.raises(InputError, match="choose one of"):
        TrainConfig(loss_agg="mean")


# ---- CLI: every output file, exit codes, notify


def test_cli_smoke_writes_every_output(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    from spanrl.transitions.snapshot import content_hash

    snapshot = _snapshot(tmp_path, tokenizer, engine=False)  # text path: chat template + token diff
    (tmp_path / "spanrl.toml").write_text("[train]\nrollouts_per_step = 3\n")
    res = CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", str(model_dir), "--lr", "1e-3",
                                   "--loss-agg", "sequence", "--no-progress"])
    assert res.exit_code == 0, res.output
    latest = (tmp_path / "adapters" / "LATEST").read_text().strip()
    folder = tmp_path / "adapters" / latest
    for name in OUTPUTS:
        assert (folder / name).is_file(), name
    assert (folder / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    state = _state(folder)
    assert state["steps"] == 2 and state["config"]["rollouts_per_step"] == 3 and state["config"]["loss_agg"] == "sequence"
    assert state["data"]["text"] == 12 and state["snapshot_content_hash"] == content_hash(snapshot)
    line = json.loads((tmp_path / "adapters" / "cycles.jsonl").read_text())
    assert line["mean_final_reward"] == pytest.approx(0.5) and line["response_tokens"] > 0
    assert "cycle " in res.output and not list((tmp_path / "adapters").glob(".tmp-*"))


@pytest.mark.parametrize("model", ["does/not-exist", "./missing-folder"])
def test_cli_model_must_be_local(model: str, tmp_path: Path, tokenizer) -> None:
    _snapshot(tmp_path, tokenizer)
    res = CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", model])
    assert res.exit_code == 2 and "local folder required, no hub" in res.output


def test_cli_refuses_other_schema_version_corrupt_and_empty(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    from spanrl.transitions import TRANSITION_SCHEMA, write_snapshot

    def run() -> tuple[int, str]:
        res = CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", str(model_dir), "--no-progress"])
        return res.exit_code, res.output

    folder = _snapshot(tmp_path, tokenizer)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 99}))
    code, out = run()
    assert code == 2 and "schema version 99" in out

    folder = _snapshot(tmp_path, tokenizer)
    next(folder.glob("part-*.parquet")).write_bytes(b"not parquet at all")
    code, out = run()
    assert code == 2 and "corrupt" in out

    import pyarrow.parquet as pq

    folder = _snapshot(tmp_path, tokenizer)  # same rows, advantages rewritten: the hash says so
    part = next(folder.glob("part-*.parquet"))
    table = pq.read_table(part)
    i = table.column_names.index("advantage")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array([1e6] * table.num_rows)), part)
    code, out = run()
    assert code == 2 and "content hash" in out

    write_snapshot(tmp_path, TRANSITION_SCHEMA.empty_table())
    code, out = run()
    assert code == 2 and "no transitions" in out
    assert not (tmp_path / "adapters" / "LATEST").exists()

    shutil.rmtree(tmp_path / "transitions")
    code, out = run()
    assert code == 2 and "spanrl ingest" in out


def test_cli_notify_posts_load_lora_adapter(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    import asyncio
    import threading

    from aiohttp import web

    received: list[dict] = []

    async def load(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(text="Success")

    ready, box = threading.Event(), {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/v1/load_lora_adapter", load)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        box["port"], box["loop"], box["runner"] = site._server.sockets[0].getsockname()[1], loop, runner
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        _snapshot(tmp_path, tokenizer)
        args = ["train", "--data", str(tmp_path), "--model", str(model_dir), "--no-progress"]
        res = CliRunner().invoke(cli, [*args, "--notify", f"http://127.0.0.1:{box['port']}"])
        assert res.exit_code == 0, res.output
        latest = (tmp_path / "adapters" / "LATEST").read_text().strip()
        assert received == [{"lora_name": latest, "lora_path": str((tmp_path / "adapters" / latest).resolve())}]
        # a server that is gone is a warning, not a crash
        res = CliRunner().invoke(cli, [*args, "--notify", "http://127.0.0.1:9"])  # same snapshot: skipped
        assert res.exit_code == 0 and "nothing to do" in res.output and "--retrain" in res.output
        assert (tmp_path / "adapters" / "LATEST").read_text().strip() == latest and len(received) == 1
        res = CliRunner().invoke(cli, [*args, "--retrain", "--notify", "http://127.0.0.1:9"])
        assert res.exit_code == 0 and "warning: --notify" in res.output
    finally:
        box["loop"].call_soon_threadsafe(box["loop"].stop)
        thread.join(10)


def test_chunked_head_with_recompute_gives_the_same_gradients(model_dir: Path, tokenizer) -> None:
    import pyarrow as pa
    from peft import LoraConfig, get_peft_model

    from spanrl.trainer.data import build_sequences, collate
    from spanrl.trainer.logprobs import response_logprobs
    from spanrl.transitions import TRANSITION_SCHEMA

    rows = tiny_rollout_rows(tokenizer, n_tasks=1, rollouts_per_task=2, calls_per_rollout=1)
    seqs, _ = build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)
    b = collate(seqs, [0, 1], tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = get_peft_model(_load(model_dir, None), LoraConfig(r=8, target_modules=["q_proj", "down_proj"],
                                                             init_lora_weights=False))
    grads = []
    for chunk in (5, None):  # several checkpointed chunks vs one plain chunk
        model.zero_grad()
        logp = response_logprobs(model, b["input_ids"], b["attention_mask"], b["pos_b"], b["pos_t"], b["targets"], chunk=chunk)
        logp.sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.requires_grad]))
    assert torch.allclose(grads[0], grads[1], atol=1e-5) and grads[0].abs().sum() > 0


def test_text_rows_without_a_chat_template_fail_clearly(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(model_dir, bare)
    (bare / "chat_template.jinja").unlink()
    _snapshot(tmp_path / "d", tokenizer, engine=False)
    with pytest.raises(InputError, match="chat template"):
        train(_cfg(bare, tmp_path / "d"), progress=False)


def test_gradient_checkpointing_and_micro_batching_do_not_change_the_result(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    _snapshot(tmp_path / "d", tokenizer, n_tasks=2, calls_per_rollout=2)
    base = dict(lr=1e-2, seed=4, fresh=True, loss_agg="rollout")
    plain = train(_cfg(model_dir, tmp_path / "d", out=tmp_path / "a", tokens_per_batch=4096, **base), progress=False)
    other = train(_cfg(model_dir, tmp_path / "d", out=tmp_path / "b", tokens_per_batch=128, gradient_checkpointing=True,
                       **base), progress=False)
    from safetensors.torch import load_file

    a = load_file(plain.folder / "adapter_model.safetensors")
    b = load_file(other.folder / "adapter_model.safetensors")
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-4  # one micro-batch vs one per call, recomputed


def test_new_only_trains_each_rollout_once_across_cumulative_snapshots(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    """Ingest snapshots every complete rollout in the lake, old ones too; --new-only leaves out the
    rollouts any earlier cycle of the chain trained on, and says so when nothing new is left."""
    from spanrl.transitions.snapshot import transitions_dir

    old = tiny_rollout_rows(tokenizer, n_tasks=2)
    first = write_rows_snapshot(tmp_path, old)
    train(_cfg(model_dir, tmp_path, lr=1e-3), progress=False)
    new = [{**r, "rollout_id": "new-" + str(r["rollout_id"])} for r in tiny_rollout_rows(tokenizer, n_tasks=1)]
    write_rows_snapshot(tmp_path, old + new)  # the next night: cumulative
    second = train(_cfg(model_dir, tmp_path, lr=1e-3, new_only=True), progress=False)
    state = _state(second.folder)
    assert state["already_trained_rows"] == len(old) and state["transitions"] == len(new)
    assert state["rollouts"] == len({r["rollout_id"] for r in new})
    # a third snapshot with other rewards but no new rollout: nothing to do
    write_rows_snapshot(tmp_path, [{**r, "final_reward": 0.5} for r in old + new])
    with pytest.raises(AlreadyTrained, match="--new-only"):
        train(_cfg(model_dir, tmp_path, new_only=True), progress=False)
    # without the snapshot the first cycle trained on, what is new cannot be told
    import shutil

    shutil.rmtree(first)
    assert not (transitions_dir(tmp_path) / first.name).exists()
    with pytest.raises(InputError, match="is gone"):
        train(_cfg(model_dir, tmp_path, new_only=True), progress=False)


@pytest.mark.slow  # two real cycles (~4 s on 2 busy cores)
def test_cleanup_after_real_cycles_keeps_what_new_only_needs(model_dir: Path, tokenizer, tmp_path: Path) -> None:
    """Two real cycles, then `spanrl train --keep-adapters 1` and `spanrl transitions clean --keep 1`:
    an adapter outside the chain and a snapshot no cycle used go; the first cycle (parent of
    LATEST) and both trained snapshots stay, so --new-only can still tell which rollouts are new."""
    from spanrl.trainer.adapter import read_latest, trained_rollout_ids
    from spanrl.transitions.snapshot import list_snapshots

    old = tiny_rollout_rows(tokenizer, n_tasks=2)
    first_snapshot = write_rows_snapshot(tmp_path, old)
    first = train(_cfg(model_dir, tmp_path, lr=1e-3), progress=False)
    stray = tmp_path / "adapters" / "0001-20000101T000000000000Z"  # an old --fresh try, outside the chain
    shutil.copytree(first.folder, stray)
    (stray / "training_state.json").write_text(json.dumps({**_state(first.folder), "parent": None}))
    unused = write_rows_snapshot(tmp_path, old + [{**r, "rollout_id": "x" + str(r["rollout_id"])} for r in old])
    new = [{**r, "rollout_id": "new-" + str(r["rollout_id"])} for r in tiny_rollout_rows(tokenizer, n_tasks=1)]
    second_snapshot = write_rows_snapshot(tmp_path, old + new)
    res = CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", str(model_dir), "--new-only",
                                   "--keep-adapters", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert f"deleted {stray.name}" in res.output and not stray.exists() and first.folder.is_dir()
    res = CliRunner().invoke(cli, ["transitions", "clean", "--data", str(tmp_path), "--keep", "1"])
    assert res.exit_code == 0 and {p.name for p in list_snapshots(tmp_path)} == {first_snapshot.name, second_snapshot.name}
    assert not unused.exists()
    root = tmp_path / "adapters"
    assert trained_rollout_ids(tmp_path, root, read_latest(root)) == {r["rollout_id"] for r in old + new}
    assert CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", str(model_dir),
                                    "--keep-adapters", "0"]).exit_code == 2


def test_new_only_on_incrementally_built_snapshots(model_dir: Path, tmp_path: Path) -> None:
    """Two nights through the real stage 1 and the incremental stage 2: --new-only trains exactly the
    second night's rollouts, with the advantages of the snapshot that holds both nights."""
    from spanrl.transitions.snapshot import read_snapshot
    from tests.transitions.test_incremental import Agent, _ingest

    agent = Agent([tmp_path])
    agent.write(0, [s for n in "ab" for s in agent.rollout(n, 0, float(n == "a"), "t1")])
    _ingest(tmp_path)
    train(_cfg(model_dir, tmp_path, lr=1e-3), progress=False)
    agent.write(1, [s for n in "cd" for s in agent.rollout(n, 1, float(n == "c"), "t1")])
    manifest = _ingest(tmp_path)
    assert manifest["stats"]["stage2"]["mode"] == "incremental"
    second = train(_cfg(model_dir, tmp_path, lr=1e-3, new_only=True), progress=False)
    state = _state(second.folder)
    rows, _ = read_snapshot(tmp_path)
    new = [r for r in rows.to_pylist() if r["rollout_id"] in ("c", "d")]
    assert state["transitions"] == len(new) and state["already_trained_rows"] == rows.num_rows - len(new)
    assert state["rollouts"] == 2 and state["snapshot_content_hash"] == manifest["content_hash"]
    # task t1 now has four rollouts (rewards 1, 0, 1, 0): the new rows carry the group advantage over
    # all of them, (R - 0.5) / std = +-0.866 (identical credit, the default)
    for r in new:
        assert r["advantage"] == pytest.approx(0.866025 if r["final_reward"] else -0.866025, abs=1e-5)
