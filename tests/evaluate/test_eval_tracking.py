"""``spanrl eval --report-to mlflow``: an evaluation's numbers land in the candidate adapter's training
run (found by its ``cycle_id`` tag), read back with MLflow's client; without such a run, in a new one."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.evaluate.track import log_eval, open_eval_trackers
from spanrl.trainer.tracking import start_trackers

pytest.importorskip("mlflow", reason="the mlflow extra (pip install 'spanrl[mlflow]')")

DOC = {"config": {"tasks": "t.jsonl", "n": 2, "level": 0.95, "baseline": "base", "score": "s"},
       "policies": {"base": {"mean": 0.25}, "0002-x": {"mean": 0.75}},
       "comparisons": [{"baseline": "base", "candidate": "0002-x", "diff": 0.5, "ci": [0.25, 0.75],
                        "verdict": "better"}]}


def test_eval_numbers_join_the_candidates_training_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    (cycle,) = start_trackers("mlflow", tmp_path, "cycle-0002-s1", {"lr": 1e-4})
    cycle.log(1, {"loss": 2.0})
    cycle.finish(None, {"train_loss": 2.0}, {"cycle_id": "0002-x"})
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval.json").write_text("{}")
    log_eval(open_eval_trackers("mlflow", tmp_path, ["base", "0002-x"]), DOC, out)
    log_eval(open_eval_trackers("mlflow", tmp_path, ["base", "0009-none"]), DOC, out)  # no such cycle: new run
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("spanrl").experiment_id])}
    assert set(runs) == {"cycle-0002-s1", "eval-0009-none"}
    run = runs["cycle-0002-s1"]
    assert run.data.metrics["eval/0002-x/mean"] == 0.75 and run.data.metrics["eval/0002-x_vs_base/diff"] == 0.5
    assert run.data.metrics["train_loss"] == 2.0 and run.data.tags["eval.verdict.0002-x"] == "better"
    assert run.data.params["eval.baseline"] == "base" and run.data.params["lr"] == "0.0001"
    assert [a.path for a in client.list_artifacts(run.info.run_id, "eval")] == ["eval/eval.json"]
