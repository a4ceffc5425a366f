"""``spanrl train --report-to mlflow,tensorboard`` on a real (tiny) training cycle, read back with each
tool's own library: MLflow's client on the local file store, TensorBoard's EventAccumulator.

Why: the fake-module tests (test_tracking.py) show what spanrl asks; these show the tools accept it and
that what a team sees there is the cycle's metrics.jsonl, step for step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.tiny_model import make_tiny_model, tiny_rollout_rows, write_rows_snapshot

pytest.importorskip("mlflow", reason="the mlflow extra (pip install 'spanrl[mlflow]')")
pytest.importorskip("tensorboard", reason="the tensorboard extra (pip install 'spanrl[tensorboard]')")


@pytest.fixture(scope="module")
def cycle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """One cycle (3 steps) through the CLI, reporting to both trackers; (data root, adapter, metrics rows)."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("tracked")
    model = make_tiny_model(root / "model")
    data = root / "data"
    write_rows_snapshot(data, tiny_rollout_rows(AutoTokenizer.from_pretrained(model)))
    res = CliRunner().invoke(cli, ["train", "--data", str(data), "--model", str(model), "--rollouts-per-step", "2",
                                   "--report-to", "mlflow,tensorboard", "--no-progress"],
                             env={"MLFLOW_TRACKING_URI": "", "SPANRL_REPORT_TO": ""})
    assert res.exit_code == 0, res.output
    folder = data / "adapters" / (data / "adapters" / "LATEST").read_text().strip()
    rows = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3
    return data, folder, rows


def test_mlflow_run_holds_params_step_losses_and_adapter(cycle: tuple[Path, Path, list[dict]],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    data, folder, rows = cycle
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads its file store only when told
    state = json.loads((folder / "training_state.json").read_text())
    client = MlflowClient(tracking_uri=(data / "mlruns").resolve().as_uri())
    exp = client.get_experiment_by_name("spanrl")
    (run,) = client.search_runs([exp.experiment_id])
    p = run.data.params
    assert p["snapshot_id"] == state["snapshot_id"] and p["snapshot_content_hash"] == state["snapshot_content_hash"]
    assert p["rollouts_per_step"] == "2" and p["loss"] == "pg" and p["lr"] == str(state["config"]["lr"])
    assert run.data.tags["cycle_id"] == folder.name and run.info.status == "FINISHED"
    history = sorted(client.get_metric_history(run.info.run_id, "loss"), key=lambda m: m.step)
    assert [(m.step, m.value) for m in history] == [(r["step"], pytest.approx(r["loss"])) for r in rows]
    assert run.data.metrics["train_loss"] == pytest.approx(state["train_loss"])
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "adapter")}
    assert "adapter/adapter_model.safetensors" in artifacts and "adapter/training_state.json" in artifacts


def test_tensorboard_events_hold_step_losses(cycle: tuple[Path, Path, list[dict]]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    data, _, rows = cycle
    (run_dir,) = (data / "tensorboard").iterdir()
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    losses = [(e.step, e.value) for e in acc.Scalars("loss")]
    assert losses == [(r["step"], pytest.approx(r["loss"], rel=1e-6)) for r in rows]  # float32 in the file
    assert [e.value for e in acc.Scalars("grad_norm")] == [pytest.approx(r["grad_norm"], rel=1e-6) for r in rows]


def test_unknown_tracker_is_refused_before_training(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["train", "--data", str(tmp_path), "--model", str(tmp_path), "--report-to", "comet"])
    assert res.exit_code != 0 and "choose from mlflow, tensorboard, wandb" in res.output
