"""trainer/tracking.py against fake tracker modules (wandb is not a test dependency; the real MLflow and
TensorBoard read back a real cycle in test_tracking_real.py): what each tracker is asked to record, the
offline defaults, and the missing-library message."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from spanrl.trainer import tracking


class Recorder(types.ModuleType):
    """Records every call made on it (and on objects it returns) as (name, args, kwargs)."""

    def __init__(self, name: str, calls: list) -> None:
        super().__init__(name)
        self._calls = calls

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Recorder(attr, self._calls)

    def __call__(self, *a: Any, **k: Any) -> Recorder:
        self._calls.append((self.__name__, a, k))
        return Recorder(self.__name__, self._calls)


def test_parse_report_to() -> None:
    assert tracking.parse_report_to("MLflow, tensorboard") == ["mlflow", "tensorboard"]
    assert tracking.parse_report_to("none") == []
    with pytest.raises(ValueError, match="choose from"):
        tracking.parse_report_to("comet")


def test_missing_library_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import fails
    with pytest.raises(tracking.TrackingUnavailable, match=r"pip install 'spanrl\[mlflow\]'"):
        tracking.open_trackers("mlflow", tmp_path, "run")


def test_mlflow_logs_params_steps_and_adapter_to_local_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list = []
    monkeypatch.setitem(sys.modules, "mlflow", Recorder("mlflow", calls))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (t,) = tracking.open_trackers("mlflow", tmp_path, "a1")
    t.start({"snapshot_hash": "abc", "lr": 2e-4})
    t.log(1, {"loss": 1.5, "lr": 2e-4, "note": "x"})
    t.finish(tmp_path / "adapter", {"heldout": 0.5})
    names = [c[0] for c in calls]
    assert names == ["set_tracking_uri", "set_experiment", "start_run", "log_params", "log_metrics", "log_metrics",
                     "log_artifacts", "end_run"]
    assert calls[0][1][0] == (tmp_path / "mlruns").resolve().as_uri()
    assert calls[3][1][0]["snapshot_hash"] == "abc"
    assert calls[4][1][0] == {"loss": 1.5, "lr": 2e-4} and calls[4][2] == {"step": 1}


def test_wandb_defaults_to_offline_and_logs_artifact(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list = []
    monkeypatch.setitem(sys.modules, "wandb", Recorder("wandb", calls))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    (t,) = tracking.open_trackers("wandb", tmp_path, "a1")
    import os

    assert os.environ["WANDB_MODE"] == "offline"
    monkeypatch.delenv("WANDB_MODE")
    t.start({"lr": 1})
    t.log(2, {"loss": 1.0})
    t.finish(tmp_path, {})
    names = [c[0] for c in calls]
    assert names[0] == "init" and "log" in names and "Artifact" in names and "log_artifact" in names and names[-1] == "finish"
