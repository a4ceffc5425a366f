"""What a ``spanrl demo`` run does (``DemoConfig``, the ``--quick`` preset) and what each cycle yields."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spanrl.errors import InputError

TRAIN_AGENT, EVAL_AGENT = "calc", "calc-eval"


@dataclass
class DemoConfig:
    """What one ``spanrl demo`` run does; the presets below are the documented defaults."""

    data: Path
    model: Path | None = None
    cycles: int = 5
    train_tasks: int = 4  # fresh training tasks per cycle (seeded by the cycle number)
    rollouts_per_task: int = 4  # a group per task: the group advantage needs several
    eval_tasks: int = 16  # the first tasks of the fixed held-out split (never trained on)
    # The agent's sampling temperature, for training rollouts and held-out ones alike: the held-out
    # score measures the agent as it runs (greedy measures only the mode; see docs/demo.md).
    temperature: float = 0.7
    eval_temperature: float | None = None  # None: the same as temperature
    max_tokens: int = 48
    concurrency: int = 64
    max_batch: int = 32  # the server's batch: all concurrent rollouts of a phase in one generate call
    on_policy: bool = True  # train each cycle on its own rollouts only (see train_snapshot)
    ingest_args: list[str] = field(default_factory=lambda: ["--credit", "identical", "--advantage", "group"])
    # Expert iteration (RAFT/ReST): each cycle fine-tunes on its best correct rollout of each task
    # (reward >= 1.0, top 1 per task: one example per operator, so no operator crowds out the
    # others), with a larger step than spanrl train's default (2e-5) because a CPU cycle sees few
    # rollouts. docs/demo.md has the measured runs behind this choice (pg runs 1-3, sft runs 4-6).
    train_args: list[str] = field(default_factory=lambda: [
        "--loss", "sft", "--sft-min-return", "1.0", "--sft-top-k", "1", "--lr", "5e-4", "--rollouts-per-step", "2"])
    reload_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        for name in ("cycles", "train_tasks", "rollouts_per_task", "eval_tasks", "max_tokens", "concurrency"):
            if getattr(self, name) < (0 if name == "cycles" else 1):
                raise InputError(f"demo: {name} must be positive, got {getattr(self, name)}")


QUICK = {"cycles": 1, "train_tasks": 2, "rollouts_per_task": 2, "eval_tasks": 2, "max_tokens": 16}


@dataclass
class CycleResult:
    """One row of the final table."""

    cycle: int
    policy: str
    train_reward: float | None = None
    eval_reward: float | None = None
    eval_accuracy: float | None = None
    adapter: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
