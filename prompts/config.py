"""What a ``spanrl prompts`` user sets (docs/architecture.md, CLI contract and "Configuration").

``OptimizeConfig`` holds ``spanrl prompts optimize``'s knobs (the ``[prompts]`` section of ``spanrl.toml``);
``PromptStoreFlags`` the per-call switches of ``prompts show`` and ``prompts promote`` (no section: what a
single call asks, never a standing default). Every field is a ``spanrl.config.knob`` (default, help, flag
in one place) and the commands' flags are generated from them (``spanrl.config.click_options``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import knob
from spanrl.errors import InputError
from spanrl.options import DEFAULT_DATA, parse_duration

FILE = click.Path(dir_okay=False, path_type=Path)


@dataclass
class OptimizeConfig:
    """One ``spanrl prompts optimize`` run (docs/prompts.md)."""

    agent: str = knob(help="The agent: its x-spanrl-agent header or model name (or a stored agent).", required=True)
    tasks: Path = knob(help="JSON lines as `spanrl rollout` reads them; split into train and validation.",
                       required=True, click_type=FILE)
    command: list[str] = knob(help="The agent command (after `--`), as `spanrl rollout` takes it.")
    score: str = knob(help='Scorer command, as `spanrl rollout --score`: {"task", "output"} in, a number out.',
                      required=True)
    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    config_file: Path | None = knob(None, "spanrl.toml whose [prompts] section sets these defaults (default "
                                    "DATA/spanrl.toml, then ./spanrl.toml).", flag="--config", click_type=FILE)
    upstream: str | None = knob(None, "The model the agent calls (/v1 URL): a `spanrl gateway --prompts` is started "
                                "in front of it for the scoring runs.")
    gateway: str | None = knob(None, "Or a running `spanrl gateway --prompts` on this data root (its root URL).")
    optimizer_url: str | None = knob(None, "OpenAI-compatible /v1 URL of the model that critiques and rewrites (APO); "
                                     "without it only demonstrations are tried.")
    optimizer_model: str | None = knob(None, "The optimizer's model name.")
    budget_rollouts: int = knob(64, "Agent runs for all scoring, at most.")
    n: int = knob(1, "Samples per task (successive halving doubles it).")
    val_fraction: float = knob(0.5, "Share of the tasks held out for validation.")
    candidates: int = knob(2, "Rewrites per parent prompt and round.")
    beam: int = knob(2, "Prompts kept as parents for the next round.")
    rounds: int = knob(1, "APO rounds (critique -> rewrites -> scoring).")
    demos: int = knob(4, "Worked examples in each demonstrations candidate.")
    demo_sets: int = knob(4, "Sets of worked examples: the best rollouts, then seeded random draws from them, each "
                          "covering the kinds of task they show "
                          "(scored like any candidate; 1 = only the best).")
    demo_form: str = knob("both", "How a set of worked examples is given: as text in the system prompt, as "
                          "conversation turns before the agent's own messages (the gateway puts them in), or both "
                          "(a candidate of each).", choices=("text", "turns", "both"))
    promote_if_better: bool = knob(True, "Promote the winner when the paired comparison on validation says better.",
                                   flag="--promote-if-better/--no-promote", show="promote-if-better")
    level: float = knob(0.95, "Confidence level of the paired interval.")
    seed: int = knob(0, "Seed of the train/validation split.")
    concurrency: int = knob(4, "Agent processes at once.")
    timeout_s: float = knob(120.0, "Per attempt.", flag="--timeout", parse=parse_duration, show="120s")
    env: dict[str, str] = knob({}, "Extra variables for every agent process (library callers).")

    def __post_init__(self) -> None:
        self.data, self.tasks, self.command = Path(self.data), Path(self.tasks), list(self.command)
        self.timeout_s = float(self.timeout_s)
        if (self.upstream is None) == (self.gateway is None):
            raise InputError("give the policy the agent calls: --upstream URL (a gateway with --prompts is started in "
                             "front of it) or --gateway URL (a running `spanrl gateway --prompts` on this data root)")
        if (self.optimizer_url is None) != (self.optimizer_model is None):
            raise InputError("--optimizer-url and --optimizer-model go together (an OpenAI-compatible /v1 URL and its model)")
        if not self.command:
            raise InputError("give the agent command after `--`, as `spanrl rollout` takes it")
        if not 0 < self.val_fraction < 1:
            raise InputError(f"--val-fraction must be between 0 and 1, got {self.val_fraction}")
        for name in ("budget_rollouts", "n", "candidates", "beam", "rounds", "demos", "demo_sets", "concurrency"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.timeout_s <= 0:
            raise InputError(f"--timeout must be positive, got {self.timeout_s}s")


# the flags of `spanrl prompts optimize`, in --help order (--data is the shared data_option)
OPTIMIZE_FLAGS = ("agent", "tasks", "score", "upstream", "gateway", "optimizer_url", "optimizer_model", "budget_rollouts",
                  "n", "val_fraction", "candidates", "beam", "rounds", "demos", "demo_sets", "demo_form", "promote_if_better", "level", "seed",
                  "concurrency", "timeout_s", "config_file")


@dataclass
class PromptStoreFlags:
    """The switches of ``spanrl prompts show`` (``meta``) and ``spanrl prompts promote`` (``if_better``)."""

    meta: bool = knob(False, "Print the version's meta (JSON: parent, method, evidence) instead of the prompt.")
    if_better: bool = knob(False, "Only when the version's recorded evidence (spanrl prompts optimize) says better; "
                           "else exit 2.")
