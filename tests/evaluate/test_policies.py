"""``spanrl eval --policy``: an adapter id, LATEST (pinned to the id it names) or base is served by the
``spanrl serve`` the runner starts with ``--model``; a URL is used as it is; mistakes say what to pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.errors import InputError
from spanrl.evaluate.run import EvalConfig, rollout_config


@pytest.fixture
def cfg(tmp_path: Path) -> EvalConfig:
    data = tmp_path / "d"
    for cid in ("0001-a", "0002-b"):
        (data / "adapters" / cid).mkdir(parents=True)
    (data / "adapters" / "LATEST").write_text("0002-b\n")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"input": "x"}\n')
    return EvalConfig(tasks=tasks, policies=["base"], command=["agent"], score="s", data=data, model=tmp_path / "m")


def test_each_policy_kind_becomes_its_server(cfg: EvalConfig) -> None:
    cfg.served_model_names = ["policy"]  # the model name an agent hard-codes: the started servers answer to it
    rcs = {p: rollout_config(cfg, p) for p in ("base", "LATEST", "0001-a", "x=http://h:1/v1")}
    assert rcs["base"].served_model_names == ["policy"] and rcs["x=http://h:1/v1"].served_model_names == []
    assert [(rcs[p].serve_adapter, rcs[p].policy_url) for p in rcs] == [
        ("base", None), ("0002-b", None), ("0001-a", None), (None, "http://h:1/v1")]
    assert all(rcs[p].model == cfg.model for p in ("base", "LATEST", "0001-a"))
    assert rcs["LATEST"].run_id == rollout_config(cfg, "0002-b").run_id  # LATEST pinned: the same policy
    assert len({rc.run_id for rc in rcs.values()}) == 4
    assert all("spanrl.rollout.purpose=eval" in rc.env["OTEL_RESOURCE_ATTRIBUTES"] for rc in rcs.values())


def test_refusals_say_what_to_pass(cfg: EvalConfig, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no adapter 0009-z .*0001-a, 0002-b"):
        rollout_config(cfg, "0009-z")
    cfg.model = None
    with pytest.raises(InputError, match="needs --model"):
        rollout_config(cfg, "0001-a")
    (cfg.data / "adapters" / "LATEST").unlink()
    cfg.model = tmp_path / "m"
    with pytest.raises(InputError, match="no LATEST yet.*--policy base"):
        rollout_config(cfg, "LATEST")
