"""``spanrl train --agent NAME``: one adapter chain per agent (issue 29), on a tiny local model.

Two agents' rollouts in one snapshot: each ``--agent`` cycle trains only its agent's rows into
DATA/adapters/agents/<NAME> with its own LATEST, and leaves DATA/adapters/LATEST and the other
chain alone; an unknown agent is refused naming the agents the snapshot has.
"""

from __future__ import annotations

import pytest

from spanrl.errors import InputError
from spanrl.layout import agent_adapters_dir, cycle_log
from spanrl.publish import read_pointer
from spanrl.trainer.config import TrainConfig
from spanrl.trainer.train import train
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoTokenizer

    model = make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    rows = tiny_rollout_rows(AutoTokenizer.from_pretrained(model), n_tasks=2, rollouts_per_task=2, calls_per_rollout=1)
    for row in rows:  # task t0 is the router's, t1 the solver's
        row["agent_name"] = "router" if row["task_id"] == "t0" else "solver"
    data = tmp_path_factory.mktemp("agents")
    write_rows_snapshot(data, rows)
    return model, data, rows


def test_each_agent_trains_its_own_rows_into_its_own_chain(setup) -> None:
    model, data, rows = setup
    results = {a: train(TrainConfig(model=model, data=data, agent=a, rollouts_per_step=2), progress=False)
               for a in ("solver", "router")}
    for agent, result in results.items():
        root = agent_adapters_dir(data, agent)
        assert result.folder.parent == root and read_pointer(root) == result.folder.name
        assert [c.get("cycle_id") for c in cycle_log(root)] == [result.cycle_id]  # its own cycle log
        assert result.stats.rows == sum(1 for r in rows if r["agent_name"] == agent)
    assert read_pointer(data / "adapters") is None  # the shared chain is untouched


def test_an_unknown_agent_is_refused_naming_the_snapshots_agents(setup) -> None:
    model, data, _ = setup
    with pytest.raises(InputError, match="router.*solver"):
        train(TrainConfig(model=model, data=data, agent="nobody"), progress=False)
    with pytest.raises(InputError, match="--agent"):
        TrainConfig(model=model, data=data, agent="../x")
