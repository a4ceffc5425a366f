"""``JudgeConfig``: what a ``spanrl judge`` user sets (docs/architecture.md, CLI contract and "Configuration").

Every field is a ``spanrl.config.knob`` (default, help, flag in one place): the flags are generated from
them (``JUDGE_FLAGS``) and ``spanrl.config.resolve`` reads the ``[judge]`` section of ``spanrl.toml``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import knob
from spanrl.errors import InputError
from spanrl.options import DEFAULT_DATA, parse_duration

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
FILE = click.Path(dir_okay=False, path_type=Path)


@dataclass
class JudgeConfig:
    """Every knob of one judge run; validated at construction."""

    judge_url: str = knob(help="OpenAI-compatible /v1 URL of the judge model.", required=True)
    judge_model: str = knob(help="Model name the judge server serves (part of the cache key).", required=True)
    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    config_file: Path | None = knob(None, "spanrl.toml whose [judge] section sets these defaults (default "
                                    "DATA/spanrl.toml, then ./spanrl.toml).", flag="--config", click_type=FILE)
    rubric: Path | None = knob(None, "Rubric text file (default: a general task-success rubric shipped with spanrl).",
                               click_type=FILE)
    snapshot: str = knob("LATEST", "Snapshot whose rollouts are judged.")
    all_rollouts: bool = knob(False, "Also judge rollouts that already have a reward.", flag="--all")
    min_group: int = knob(2, "Smallest task group judged (relative scores need two).")
    max_tokens_per_trajectory: int = knob(1500, "Budget of each rendered trajectory (~4 characters a token; a marker "
                                          "shows the cut).")
    concurrency: int = knob(4, "Judge requests at once.")
    retries: int = knob(2, "Extra calls for a malformed or failed answer.")
    timeout_s: float = knob(300.0, "Per judge request.", flag="--timeout", parse=parse_duration, show="300s")
    temperature: float = knob(0.0, "Judge sampling temperature.")
    api_key_env: str | None = knob(None, "Environment variable holding the judge's API key (default: OPENAI_API_KEY "
                                   "when set); the key itself is never read from a file.")

    def __post_init__(self) -> None:
        self.data, self.timeout_s = Path(self.data), float(self.timeout_s)
        self.rubric = Path(self.rubric) if self.rubric is not None else None
        if not self.judge_url.startswith(("http://", "https://")):
            raise InputError(f"--judge-url {self.judge_url!r}: give an http(s) URL ending in /v1")
        if not self.judge_model.strip():
            raise InputError("--judge-model is empty; name the model the judge server serves")
        if self.min_group < 1 or self.concurrency < 1 or self.retries < 0 or self.max_tokens_per_trajectory < 50:
            raise InputError("--min-group and --concurrency must be >= 1, --retries >= 0, "
                             "--max-tokens-per-trajectory >= 50")
        if self.rubric is not None and not Path(self.rubric).is_file():
            raise InputError(f"--rubric {self.rubric}: no such file; write the rubric as text, or leave it out")

    def api_key(self) -> str | None:
        """From the environment only (never from a file in the data root)."""
        if self.api_key_env is None:
            return os.environ.get(DEFAULT_KEY_ENV) or None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError(f"--api-key-env {self.api_key_env}: that environment variable is not set")
        return key


# the flags of `spanrl judge`, in --help order (--data is the shared data_option)
JUDGE_FLAGS = ("judge_url", "judge_model", "rubric", "snapshot", "all_rollouts", "min_group", "max_tokens_per_trajectory",
               "concurrency", "retries", "timeout_s", "temperature", "api_key_env", "config_file")
