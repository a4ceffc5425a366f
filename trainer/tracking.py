"""Experiment tracking: send a training cycle's params, per-step metrics and adapter to MLflow,
TensorBoard or W&B (the Hugging Face ``report_to`` convention, comma-separated).

Why: teams already look at training in these tools; metrics.jsonl stays the source of truth and the
trackers only mirror it. Every library is an optional extra, imported lazily, and checked before training
starts (``open_trackers``) so a missing one fails in a second with the pip command, not after a cycle.
All three work offline: MLflow to a local file store, TensorBoard event files, W&B offline mode.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Protocol

from spanrl.errors import InputError
from spanrl.layout import mlruns_dir, tensorboard_dir

TOOLS = ("mlflow", "tensorboard", "wandb")


class TrackingUnavailable(InputError):
    """A requested tracker's library is not installed (the message says what to pip install)."""


class Tracker(Protocol):
    def start(self, params: dict[str, Any]) -> None: ...
    def log(self, step: int, metrics: dict[str, float]) -> None: ...
    def finish(self, artifact_dir: Path | None, summary: dict[str, float],
               tags: dict[str, str] | None = None) -> None: ...


def _need(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise TrackingUnavailable(f"--report-to {extra} needs {module}: pip install 'spanrl[{extra}]'") from e


def _numbers(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _flat(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in params.items()}


class MlflowTracker:
    """One MLflow run per cycle in ``MLFLOW_TRACKING_URI`` or the local file store ``DATA/mlruns``.
    ``attach_to``: a cycle id whose run (tag ``cycle_id``) this one continues (``spanrl eval`` adds its
    numbers to the candidate adapter's training run); a new run when there is none."""

    def __init__(self, data: Path, run_name: str, attach_to: str | None = None, artifact_name: str = "adapter") -> None:
        self.mlflow = _need("mlflow", "mlflow")
        self.attach_to, self.artifact_name = attach_to, artifact_name
        self.uri = os.environ.get("MLFLOW_TRACKING_URI") or mlruns_dir(data).resolve().as_uri()
        if self.uri.startswith("file:"):  # MLflow 3 keeps its file store in maintenance mode, refusing it unless
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # told: it is the offline store spanrl promises
        self.run_name = run_name

    def start(self, params: dict[str, Any]) -> None:
        self.mlflow.set_tracking_uri(self.uri)
        self.mlflow.set_experiment("spanrl")
        found = self._cycle_run() if self.attach_to else None
        if found is not None:
            self.mlflow.start_run(run_id=found)
        else:
            self.mlflow.start_run(run_name=self.run_name)
        self.mlflow.log_params(_flat(params))

    def _cycle_run(self) -> str | None:
        quoted = str(self.attach_to).replace("'", "")
        runs = self.mlflow.search_runs(experiment_names=["spanrl"], filter_string=f"tags.cycle_id = '{quoted}'",
                                       output_format="list")
        return runs[0].info.run_id if runs else None

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.mlflow.log_metrics(_numbers(metrics), step=step)

    def finish(self, artifact_dir: Path | None, summary: dict[str, float],
               tags: dict[str, str] | None = None) -> None:
        if tags:
            self.mlflow.set_tags(tags)
        if summary:
            self.mlflow.log_metrics(_numbers(summary))
        if artifact_dir is not None:
            self.mlflow.log_artifacts(str(artifact_dir), artifact_path=self.artifact_name)
        self.mlflow.end_run()


class TensorboardTracker:
    """Scalars in ``DATA/tensorboard/<run name>/`` event files (no artifacts: TensorBoard has none).
    Written with torch's own writer (torch is already there for training; it needs ``tensorboard``)."""

    def __init__(self, data: Path, run_name: str, attach_to: str | None = None, artifact_name: str = "adapter") -> None:
        mod = _need("torch.utils.tensorboard", "tensorboard")
        self.writer = mod.SummaryWriter(str(tensorboard_dir(data) / run_name))

    def start(self, params: dict[str, Any]) -> None:
        self.writer.add_text("params", "\n".join(f"{k}: {v}" for k, v in _flat(params).items()), 0)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for k, v in _numbers(metrics).items():
            self.writer.add_scalar(k, v, step)

    def finish(self, artifact_dir: Path | None, summary: dict[str, float],
               tags: dict[str, str] | None = None) -> None:
        if tags:
            self.writer.add_text("tags", "\n".join(f"{k}: {v}" for k, v in tags.items()), 0)
        for k, v in _numbers(summary).items():
            self.writer.add_scalar(f"cycle/{k}", v, 0)
        self.writer.close()


class WandbTracker:
    """A W&B run, offline unless the user set ``WANDB_MODE``; the adapter as a model artifact."""

    def __init__(self, data: Path, run_name: str, attach_to: str | None = None, artifact_name: str = "adapter") -> None:
        self.wandb = _need("wandb", "wandb")
        os.environ.setdefault("WANDB_MODE", "offline")
        self.data, self.run_name, self.run, self.artifact_name = data, run_name, None, artifact_name

    def start(self, params: dict[str, Any]) -> None:
        self.run = self.wandb.init(project="spanrl", name=self.run_name, dir=str(self.data), config=_flat(params))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(_numbers(metrics), step=step)

    def finish(self, artifact_dir: Path | None, summary: dict[str, float],
               tags: dict[str, str] | None = None) -> None:
        self.run.summary.update({**_numbers(summary), **(tags or {})})
        if artifact_dir is not None:
            art = self.wandb.Artifact(self.run_name, type="model" if self.artifact_name == "adapter" else "evaluation")
            art.add_dir(str(artifact_dir))
            self.run.log_artifact(art)
        self.run.finish()


_CLASSES = {"mlflow": MlflowTracker, "tensorboard": TensorboardTracker, "wandb": WandbTracker}


def parse_report_to(value: str) -> list[str]:
    """``"mlflow,tensorboard"`` -> names; ``none`` or empty -> []; an unknown name says the choices."""
    names = [n.strip().lower() for n in value.split(",") if n.strip() and n.strip().lower() != "none"]
    bad = [n for n in names if n not in _CLASSES]
    if bad:
        raise ValueError(f"--report-to {','.join(bad)}: choose from {', '.join(TOOLS)} or none")
    return names


def open_trackers(value: str, data: Path, run_name: str, attach_to: str | None = None,
                  artifact_name: str = "adapter") -> list[Tracker]:
    """Build every requested tracker now (before training) so a missing library fails early."""
    return [_CLASSES[n](data, run_name, attach_to, artifact_name) for n in parse_report_to(value)]


def start_trackers(value: str, data: Path, run_name: str, params: dict[str, Any], attach_to: str | None = None,
                   artifact_name: str = "adapter") -> list[Tracker]:
    """Open the requested trackers and start their run with ``params`` (the training loop's one call)."""
    trackers = open_trackers(value, data, run_name, attach_to, artifact_name)
    for t in trackers:
        t.start(params)
    return trackers


def log_step(trackers: list[Tracker], step: int, metrics: dict[str, Any]) -> None:
    for t in trackers:
        t.log(step, metrics)


def finish_trackers(trackers: list[Tracker], artifact_dir: Path | None, summary: dict[str, Any],
                    tags: dict[str, str] | None = None) -> None:
    for t in trackers:
        t.finish(artifact_dir, summary, tags)
