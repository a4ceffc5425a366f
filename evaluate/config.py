"""``EvalConfig``: what a ``spanrl eval`` user sets (docs/architecture.md, CLI contract and "Configuration").

The run knobs it shares with ``spanrl rollout`` (``--tasks``, ``--concurrency``, ``--timeout``, ``--otlp``,
``--score``, ``--served-model-name``, ``--threads``) are ``spanrl.rollout.config.AgentRunConfig``'s fields;
the rest are here. Every field is a ``spanrl.config.knob`` (default, help, flag in one place); the flags
are generated from them (``EVAL_FLAGS``) and ``spanrl.config.resolve`` reads the ``[eval]`` section.
The resolved config is recorded in eval.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import knob
from spanrl.errors import InputError
from spanrl.rollout.config import CONFIG_HELP, FILE, AgentRunConfig

WORSE_EXIT = 1  # --fail-if-worse and a policy is worse than the first


@dataclass(kw_only=True)
class EvalConfig(AgentRunConfig):
    """What ``spanrl eval`` was asked; recorded in eval.json."""

    policies: list[str] = knob(help="An adapter id, LATEST or base (served by `spanrl serve --model MODEL`, started per "
                               "policy), or an OpenAI-compatible /v1 URL, or NAME=URL to name it; repeat: the first is "
                               "the baseline.", flag="--policy", multiple=True, required=True)
    n: int = knob(4, "Samples per task and policy.")
    model: Path | None = knob(None, "Base model folder for the policies given as an adapter id, LATEST or base.",
                              click_type=click.Path(file_okay=False, path_type=Path))
    judge_url: str | None = knob(None, "Score with the LLM judge instead (`spanrl judge`'s prompt): its "
                                 "OpenAI-compatible /v1 URL; each task's samples of all policies are judged together.",
                                 flag="--judge")
    judge_model: str | None = knob(None, "With --judge: the model name the judge server serves.")
    rubric: Path | None = knob(None, "With --judge: rubric text (default: the shipped rubric).", click_type=FILE)
    out: Path = knob(Path("spanrl-eval"), "Folder for eval.json and report.png.", show="spanrl-eval",
                     click_type=click.Path(file_okay=False, path_type=Path))
    level: float = knob(0.95, "Confidence level of the intervals.")
    report_to: str = knob("none", "Experiment trackers, as `spanrl train --report-to`: mlflow (one candidate adapter "
                          "id: its training run), tensorboard, wandb, comma-separated.", env="SPANRL_REPORT_TO",
                          metavar="LIST")
    fail_if_worse: bool = knob(False, f"Exit {WORSE_EXIT} when any policy is worse than the first.")
    config_file: Path | None = knob(None, CONFIG_HELP.format("eval"), flag="--config", click_type=FILE)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.policies, self.out = list(self.policies), Path(self.out)
        if len(self.policies) < 1:
            raise InputError("give at least one --policy (the first is the baseline the others are compared to)")
        if len(set(self.policies)) != len(self.policies):
            raise InputError("each --policy once: a policy compared with itself tells nothing")
        if self.n < 1:
            raise InputError(f"--n must be at least 1, got {self.n}")
        if (self.score is None) == (self.judge_url is None):
            raise InputError("give one way to score: --score CMD (a scorer command) or --judge URL --judge-model NAME "
                             "(the LLM judge of `spanrl judge`)")
        if self.judge_url is not None and not self.judge_model:
            raise InputError("--judge needs --judge-model NAME (the model the judge server serves)")
        if self.threads is not None and self.model is None:
            raise InputError("--threads sets the `spanrl serve` eval starts for policies given as an adapter id, LATEST "
                             "or base (with --model); a /v1 URL policy's server was started by you")
        if not 0.5 <= self.level < 1.0:
            raise InputError(f"--level {self.level}: use a confidence level such as 0.95")


# the flags of `spanrl eval`, in --help order (--data is the shared data_option)
EVAL_FLAGS = ("tasks", "policies", "model", "served_model_names", "n", "score", "judge_url", "judge_model", "rubric",
              "out", "level", "concurrency", "timeout_s", "report_to", "otlp", "threads", "fail_if_worse", "config_file")
