"""Stage 2's config (lake -> snapshot), and ``IngestConfig``: stage 1's and stage 2's composed for
``spanrl ingest`` and ``spanrl transitions build`` (docs/architecture.md, "Configuration";
docs/transitions.md).

Values come from flags, then the ``[ingest]`` section of ``spanrl.toml``, then the field defaults
(``spanrl.config.resolve``); the ``[air]`` rules and ``[[conventions]]`` mappings come from the same
parsed file (``BuildConfig.file``). The resolved config is written into each snapshot's
``manifest.json``: its keys are a contract (a changed row-shaping value means a full rebuild).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from spanrl.config import ConfigFile, knob, load_config_file, resolve
from spanrl.errors import InputError
from spanrl.ingest.config import LakeConfig, RunConfig
from spanrl.options import parse_duration


def credit_modes() -> tuple[str, ...]:
    """The ``--credit`` choices: the files of ``sql/credit/`` (a mode is one SQL file), listed as
    ``spanrl.transitions.credit.credit_modes`` lists them (tests/transitions/test_credit.py holds them equal);
    not imported from there because credit.py reads this config's defaults. Called at each check."""
    folder = resources.files("spanrl.transitions").joinpath("sql", "credit")
    return tuple(sorted(f.name[:-4] for f in folder.iterdir() if f.name.endswith(".sql")))


CREDIT_CHOICES = credit_modes()
ADVANTAGE_CHOICES = ("group", "batch", "none")
MISSING_REWARD_CHOICES = ("drop", "zero")


@dataclass
class BuildConfig(RunConfig):
    """Stage 2: what a rollout, a task and a reward are, and how credit and advantages are assigned."""

    agent: str | None = knob(None, "Regex: keep only this agent's LLM calls (rewards still whole-rollout).")
    rollout_key: str | None = knob(None, "Attribute naming the rollout (e.g. session.id).")
    task_key: str | None = knob(None, "Attribute naming the task (group baselines).")
    credit: str = knob("identical", "Credit assignment: identical (every call gets its rollout's advantage; "
                       "learned most over 3 seeds), air (AIR rewards join the group statistics and move each "
                       "call by its own), discounted, last (docs/transitions.md, Credit).", choices=credit_modes)
    gamma: float = knob(0.95, "Discount for --credit discounted.")
    advantage: str = knob("group", "Advantage baseline.", choices=ADVANTAGE_CHOICES)
    missing_reward: str = knob("drop", "Rollouts with no reward: drop them or count 0.", choices=MISSING_REWARD_CHOICES)
    include_eval: bool = knob(False, "Keep evaluation rollouts (spanrl.rollout.purpose = eval, what spanrl eval runs) "
                              "in the snapshot; by default they are measurements, not training data.")
    reward_keys: list[str] = knob([], "Attribute holding a reward (span, event or log attribute); repeat or "
                                  "comma-list.", flag="--reward-key", multiple=True, metavar="ATTR")
    hierarchy_repair: bool = knob(True, "Keep an LLM call with no agent ancestor unattributed even when an agent "
                                  "span encloses it in time.", flag="--no-hierarchy-repair")
    settle_s: float = knob(600.0, "Quiet time before a rollout counts as complete.", flag="--settle",
                           parse=parse_duration, show="10m")
    rebuild: bool = knob(False, "Stage 2 recomputes every rollout instead of only what changed since the last build.")
    # housekeeping: what a run deletes afterwards, never which rows it makes (ingest.config.HOUSEKEEPING_KEYS)
    keep_snapshots: int | None = knob(None, "After the snapshot: keep the N newest snapshots (plus LATEST and every "
                                      "one a training run used); spanrl.toml keep_snapshots.", metavar="N")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.gamma <= 1.0:
            raise InputError(f"--gamma must be in (0, 1], got {self.gamma}")
        if self.settle_s < 0:
            raise InputError(f"--settle must be >= 0s, got {self.settle_s}s")
        self.reward_keys = parse_reward_keys(self.reward_keys)
        for flag, key in (("--rollout-key", self.rollout_key), ("--task-key", self.task_key)):
            if key is not None:
                check_attribute_name(flag, key)
        if self.agent is not None:
            try:
                re.compile(self.agent)
            except re.error as exc:
                raise InputError(f"--agent {self.agent!r} is not a regular expression ({exc})") from None

    @property
    def file(self) -> ConfigFile:
        """The parsed ``spanrl.toml`` this config came from (the same object for every reader)."""
        return load_config_file(self.config_file)


@dataclass
class IngestConfig(LakeConfig, BuildConfig):
    """``spanrl ingest``: stage 1 then stage 2, and the ``[ingest]`` section's owner. Its ``to_dict``
    (every field but the housekeeping ones) is what a snapshot's manifest records."""

    no_transitions: bool = knob(False, "Only build the lake (stage 1).")


# The flags of each command, in help order (the knobs themselves are the fields above).
STAGE2_FLAGS = ("agent", "rollout_key", "task_key", "credit", "gamma", "advantage", "missing_reward", "include_eval",
                "reward_keys", "hierarchy_repair", "settle_s", "rebuild", "memory_limit", "config_file")


def make_ingest_config(**flags: Any) -> IngestConfig:
    """Flags (None = not given) over ``$SPANRL_DATA`` and the ``[ingest]`` section over the defaults."""
    return resolve(IngestConfig, flags, "ingest")


def parse_reward_keys(value: Any) -> list[str]:
    """``--reward-key`` values (repeated flags, comma lists, or a TOML list/string) as one clean list.

    Order is kept and duplicates dropped. A name with a quote or backslash cannot be an OTel attribute
    name worth supporting, and would need escaping inside the JSON path the SQL builds: refused."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
        raise InputError(f"reward_keys {value!r}: give attribute names, e.g. reward_keys = [\"eval.score\"]")
    keys: list[str] = []
    for item in items:
        for key in (k.strip() for k in item.split(",")):
            check_attribute_name("--reward-key", key)
            if key and key not in keys:
                keys.append(key)
    return keys


def check_attribute_name(flag: str, key: str) -> None:
    """An attribute name the SQL looks up as a quoted JSON key (``$."name"``): any text but a quote,
    a backslash or a control character (which would need escaping there)."""
    if not isinstance(key, str) or any(c in key for c in '"\\') or any(ord(c) < 32 for c in key):
        raise InputError(f"{flag} {key!r}: an attribute name cannot hold quotes, backslashes or control characters")
