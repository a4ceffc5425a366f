"""``JudgeConfig``: what a ``spanrl judge`` user sets (docs/architecture.md, CLI contract)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from spanrl.errors import InputError

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


@dataclass
class JudgeConfig:
    """Every knob of one judge run; validated at construction."""

    judge_url: str = field(metadata={"help": "OpenAI-compatible /v1 URL of the judge."})
    judge_model: str = field(metadata={"help": "Model name sent to the judge (part of the cache key)."})
    data: Path = field(default=Path("spanrl-data"), metadata={"help": "Data root."})
    rubric: Path | None = field(default=None, metadata={"help": "Rubric text (default: the shipped rubric)."})
    snapshot: str = field(default="LATEST", metadata={"help": "Snapshot whose rollouts are judged."})
    all_rollouts: bool = field(default=False, metadata={"help": "Judge rollouts that already have a reward too."})
    min_group: int = field(default=2, metadata={"help": "Smallest group judged (relative scores need two)."})
    max_tokens_per_trajectory: int = field(default=1500, metadata={"help": "Token budget of each rendered "
                                                                              "trajectory (a marker shows the cut)."})
    concurrency: int = field(default=4, metadata={"help": "Judge requests at once."})
    retries: int = field(default=2, metadata={"help": "Extra calls for a malformed or failed answer."})
    timeout_s: float = field(default=300.0, metadata={"help": "Per judge request."})
    api_key_env: str | None = field(default=None, metadata={"help": "Env var holding the API key "
                                                                     "(default: OPENAI_API_KEY when set)."})
    temperature: float = field(default=0.0, metadata={"help": "Judge sampling temperature."})

    def __post_init__(self) -> None:
        self.data = Path(self.data)
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
