"""``spanrl prompts optimize`` end to end with a scripted optimizer: a tiny agent with a hard-coded
system prompt (calc_agent.py), a fake policy that answers right only when the prompt holds a magic
phrase, and a fake optimizer model (a canned critique, then a canned rewrite; tests/prompts/fake_models.py).

The lake is made as in production: the agents run by ``spanrl rollout`` through a plain ``spanrl
gateway`` with a scorer, then ``spanrl ingest``. Agent calc-a's prompt lacks the phrase: the rewrite
adds it, is scored better on train and on validation (paired), and is promoted. Agent calc-b's prompt
has it: the rewrite drops it, and nothing is promoted (the demonstrations candidate ties); its held-out
run (``--purpose eval``) answered right but is never taken as a demonstration."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.gateway.server import GatewayConfig, gateway_in_background
from spanrl.prompts.store import latest_version, list_versions, read_version
from tests.prompts.fake_models import CRITIQUE, FakeModels
from tests.rollout.lake import ingest

HERE = Path(__file__).parent
SCORER = f"{sys.executable} {HERE.parent / 'rollout' / 'scorer.py'}"
WEAK = "You are a calculator."
STRONG = "You are a calculator. MAGIC: answer with the number only."
TASKS = [{"task_id": f"t{a}", "input": f"What is {a}+{a + 1}?", "expected": str(2 * a + 1)} for a in (1, 2, 3, 4)]
OTHER = {"task_id": "other", "input": "What is 10+20?", "expected": "30"}  # a task the optimization does not score
HELD = {"task_id": "held", "input": "What is 7+8?", "expected": "15"}  # a held-out task: run with --purpose eval only


def _agent(model: str, prompt: str) -> list[str]:
    return [sys.executable, str(HERE / "calc_agent.py"), model, prompt]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("optimize")
    data, tasks, all_tasks = root / "data", root / "tasks.jsonl", root / "all.jsonl"
    data.mkdir()
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    all_tasks.write_text("".join(json.dumps(t) + "\n" for t in [*TASKS, OTHER]))
    with FakeModels() as fake:
        gw = gateway_in_background(GatewayConfig(upstream=fake.url, data=data, port=0))
        try:
            for model, prompt in (("calc-a", WEAK), ("calc-b", STRONG)):
                res = CliRunner().invoke(cli, ["rollout", "--data", str(data), "--tasks", str(all_tasks), "--n", "1",
                                               "--policy-url", gw.url + "/v1", "--score", SCORER, "--",
                                               *_agent(model, prompt)])
                assert res.exit_code == 0, res.output
            held = root / "held.jsonl"
            held.write_text(json.dumps(HELD) + "\n")
            res = CliRunner().invoke(cli, ["rollout", "--data", str(data), "--tasks", str(held), "--n", "1", "--purpose",
                                           "eval", "--policy-url", gw.url + "/v1", "--score", SCORER, "--",
                                           *_agent("calc-b", STRONG)])
            assert res.exit_code == 0, res.output
        finally:
            gw.stop()
        ingest(data)
        yield {"data": data, "tasks": tasks, "fake": fake}


def _optimize(lake, model: str, prompt: str, budget: int = 16):
    return CliRunner().invoke(cli, [
        "prompts", "optimize", "--data", str(lake["data"]), "--agent", model, "--tasks", str(lake["tasks"]),
        "--score", SCORER, "--upstream", lake["fake"].url, "--optimizer-url", lake["fake"].url,
        "--optimizer-model", "optimizer", "--candidates", "1", "--budget-rollouts", str(budget), "--timeout", "60s",
        "--", *_agent(model, prompt)])


def test_a_better_rewrite_is_scored_and_promoted(lake) -> None:
    fake, data = lake["fake"], lake["data"]
    res = _optimize(lake, "calc-a", WEAK)
    assert res.exit_code == 0, res.output
    original, latest = read_version(data, "calc-a", "0001"), read_version(data, "calc-a")
    assert original.text == WEAK and original.meta["method"] == "original"  # the current prompt, from the lake
    assert latest.version != "0001" and latest.text == fake.rewrite and latest.meta["method"] == "apo"
    assert latest.meta["parent"] == "0001" and latest.meta["critique"] == CRITIQUE
    evidence = latest.meta["evidence"]
    assert evidence["verdict"] == "better" and evidence["validation"]["comparison"]["diff"] == 1.0
    assert evidence["train"]["candidate"]["mean"] == 1.0 and evidence["train"]["current"]["mean"] == 0.0
    assert len(evidence["rollout_ids"]) == 4 and all(r.startswith("eval-") for r in evidence["rollout_ids"])
    critique_request = fake.optimizer_requests[0]["messages"][-1]["content"]
    assert WEAK in critique_request and "I am not sure." in critique_request and "Reward: 0" in critique_request
    assert "promoted, LATEST = " + latest.version in res.output
    report = json.loads((data / "prompts" / "calc-a" / "_optimize" / "report.json").read_text())
    validation = [evidence["validation"]["current"], evidence["validation"]["candidate"]]
    # every agent run the optimization spent: each version's train samples and both validation runs
    assert report["used_rollouts"] == sum(s["samples"] for s in [*report["train"].values(), *validation])
    # the scoring rollouts are evaluation runs: kept out of training snapshots
    assert all(p.name.startswith("eval-") for p in (data / "runs").iterdir()
               if json.loads((p / "run.json").read_text())["command"][-2] == "calc-a" and "/p/" in
               str(json.loads((p / "run.json").read_text())["policy_url"]))


def test_a_worse_rewrite_is_not_promoted(lake) -> None:
    fake, data = lake["fake"], lake["data"]
    fake.rewrite = WEAK  # the optimizer drops the phrase this time
    res = _optimize(lake, "calc-b", STRONG)
    assert res.exit_code == 0, res.output
    assert latest_version(data, "calc-b") == "0001" and read_version(data, "calc-b").text == STRONG
    methods = {read_version(data, "calc-b", v).meta["method"] for v in list_versions(data, "calc-b")}
    assert methods == {"original", "demonstrations", "demonstration turns", "apo"}
    turns = next(read_version(data, "calc-b", v) for v in list_versions(data, "calc-b")
                 if read_version(data, "calc-b", v).meta["method"] == "demonstration turns")
    # the same rollout as conversation: its own task and answer, not the agent's kept example, not a held-out run
    assert turns.text == STRONG and turns.turns == [{"role": "user", "content": "What is 10+20?"},
                                                    {"role": "assistant", "content": "30"}]
    demo = next(read_version(data, "calc-b", v) for v in list_versions(data, "calc-b")
                if read_version(data, "calc-b", v).meta["method"] == "demonstrations")
    assert "What is 10+20?" in demo.text and "30" in demo.text and "What is 1+2?" not in demo.text  # other tasks only
    # the task is the rollout's own question, not the worked example the agent keeps in its conversation
    assert "100+200" not in demo.text and "Final answer: 300" not in demo.text
    assert "7+8" not in demo.text  # a held-out (purpose eval) rollout is never a demonstration, though it scored 1
    report = json.loads((data / "prompts" / "calc-b" / "_optimize" / "report.json").read_text())
    assert report["verdict"] == "not better on the train split" and report["promoted"] is False
    assert report["used_rollouts"] <= 16 and "LATEST stays 0001" in res.output
