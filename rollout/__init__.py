"""Rollout stage: run any agent command N times per task against a policy (``spanrl rollout``), and
export past user inputs as tasks (``spanrl tasks``). Uses the collector and the lake's query
connection; the demo drives its agent through it."""

from spanrl.rollout.config import RolloutConfig
from spanrl.rollout.export import export_tasks
from spanrl.rollout.runner import RunSummary, run_rollouts
from spanrl.rollout.tasks import read_tasks

__all__ = ["RolloutConfig", "RunSummary", "export_tasks", "read_tasks", "run_rollouts"]
