"""What the user sets for ``spanrl ingest`` / ``spanrl transitions build`` (docs/architecture.md, CLI contract; docs/transitions.md).

One dataclass shared by stage 1 (files -> lake) and stage 2 (lake -> snapshot). Values come from
flags, then ``spanrl.toml`` (``[ingest]`` section), then these defaults. The resolved config is
written into each snapshot's ``manifest.json``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.options import check_keep, find_config_file, load_toml

CREDIT_CHOICES = ("air", "identical", "discounted", "last")
ADVANTAGE_CHOICES = ("group", "batch", "none")
MISSING_REWARD_CHOICES = ("drop", "zero")
HOUSEKEEPING_KEYS = ("keep_days", "keep_snapshots")  # say what to delete after a run, not how rows are made


@dataclass
class IngestConfig:
    data: Path = field(default=Path("spanrl-data"), metadata={"help": "Data root."})
    input: str | None = field(default=None, metadata={"help": "Glob of span files (default: <data>/otel/*)."})
    no_transitions: bool = field(default=False, metadata={"help": "Stop after the lake (stage 1)."})
    rebuild: bool = field(default=False, metadata={
        "help": "Recompute every rollout of the lake in stage 2 instead of only what changed since the last build."})
    agent: str | None = field(default=None, metadata={"help": "Regex: keep only this agent's LLM calls."})
    rollout_key: str | None = field(
        default=None, metadata={"help": "Attribute that identifies a rollout (e.g. session.id)."}
    )
    task_key: str | None = field(default=None, metadata={"help": "Attribute that identifies a task."})
    credit: str = field(default="identical", metadata={
        "help": "identical: every call of a rollout gets its group advantage (the default: it learned most over "
                "3 seeds) | air: AIR rewards join the group statistics and move each call by its own | discounted "
                "| last (docs/transitions.md, Credit)."})
    gamma: float = field(default=0.95, metadata={"help": "Discount for --credit discounted."})
    advantage: str = field(default="group", metadata={"help": "group | batch | none."})
    missing_reward: str = field(default="drop", metadata={"help": "drop | zero: rollouts without reward."})
    hierarchy_repair: bool = field(
        default=True,
        metadata={"help": "Attribute an LLM call with no agent ancestor to the tightest agent span enclosing it in time."},
    )
    settle_s: float = field(default=600.0, metadata={"help": "Quiet time before a rollout is complete."})
    memory_limit: str = field(default="2GB", metadata={"help": "DuckDB memory limit (spills beyond)."})
    threads: int | None = field(default=None, metadata={"help": "DuckDB threads (default: all cores)."})
    reward_keys: list[str] = field(
        default_factory=list,
        metadata={"help": "Extra attributes whose value is a reward (span, span-event and log-record attributes)."},
    )
    config_file: Path | None = field(default=None, metadata={"help": "spanrl.toml with [ingest] and [air]."})
    # housekeeping: what a run deletes afterwards, never which rows it makes (see HOUSEKEEPING_KEYS)
    keep_days: int | None = field(default=None, metadata={
        "help": "Drop lake date partitions older than the newest one minus this many days (after stage 1)."})
    keep_snapshots: int | None = field(default=None, metadata={
        "help": "Keep this many newest snapshots (plus LATEST and every one a training run used)."})

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        if self.credit not in CREDIT_CHOICES:
            raise InputError(f"--credit {self.credit!r}: choose one of {', '.join(CREDIT_CHOICES)}")
        if self.advantage not in ADVANTAGE_CHOICES:
            raise InputError(f"--advantage {self.advantage!r}: choose one of {', '.join(ADVANTAGE_CHOICES)}")
        if self.missing_reward not in MISSING_REWARD_CHOICES:
            raise InputError(f"--missing-reward {self.missing_reward!r}: choose drop or zero")
        if not 0.0 < self.gamma <= 1.0:
            raise InputError(f"--gamma must be in (0, 1], got {self.gamma}")
        if self.settle_s < 0:
            raise InputError(f"--settle must be >= 0s, got {self.settle_s}s")
        self.reward_keys = parse_reward_keys(self.reward_keys)
        for flag, key in (("--rollout-key", self.rollout_key), ("--task-key", self.task_key)):
            if key is not None:
                check_attribute_name(flag, key)
        check_memory_limit(self.memory_limit)
        for key in HOUSEKEEPING_KEYS:
            if getattr(self, key) is not None:
                check_keep(f"--{key.replace('_', '-')}", getattr(self, key))
        if self.agent is not None:
            try:
                re.compile(self.agent)
            except re.error as exc:
                raise InputError(f"--agent {self.agent!r} is not a regular expression ({exc})") from None

    def to_dict(self) -> dict[str, Any]:
        """The resolved config a snapshot's manifest records; housekeeping keys left out, so a
        changed retention setting is never mistaken for a changed stage-2 config (a rebuild)."""
        d = asdict(self)
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items() if k not in HOUSEKEEPING_KEYS}


def describe_config_file(cfg: IngestConfig) -> str:
    """Which ``spanrl.toml`` this run uses, for the summary: a file in the current directory is
    picked up too, so say where it came from rather than apply it silently."""
    if cfg.config_file is None:
        return "config: none (built-in defaults; DATA/spanrl.toml or ./spanrl.toml would be read)"
    path = Path(cfg.config_file).resolve()
    if path.parent == Path.cwd().resolve() and path.parent != cfg.data.resolve():
        return f"config: {path} (found in the current directory)"
    return f"config: {path}"


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


def check_memory_limit(value: str) -> None:
    """Ask DuckDB itself (a throwaway connection) whether it accepts ``value`` as a memory limit, so
    the accepted spellings are exactly DuckDB's (2GB, 512MiB, 80%...)."""
    import duckdb

    from spanrl.sqlfiles import sql_literal

    if str(value).strip().startswith("-"):  # DuckDB reads a negative size as "no limit" (16383.9 PiB)
        raise InputError(f"--memory-limit {value!r}: a memory size cannot be negative; write it like 2GB, 512MB or 80%")
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = {sql_literal(str(value))}")
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    except (duckdb.Error, InputError) as exc:
        raise InputError(f"--memory-limit {value!r}: not a memory size DuckDB accepts ({str(exc).splitlines()[0]}); "
                         "write it like 2GB, 512MB or 80%") from None
    finally:
        con.close()
    if limit.endswith("bytes") or limit.split()[0] in ("0", "0.0"):
        raise InputError(f"--memory-limit {value!r}: {limit} is too little for DuckDB to run a query; "
                         "give at least some MB, e.g. 512MB")


def make_ingest_config(**flags: Any) -> IngestConfig:
    """Merge flags (None = not given) over the ``[ingest]`` table of the config file."""
    data = Path(flags.get("data") or "spanrl-data")
    cfg_file = find_config_file(data, flags.get("config_file"))
    table = load_toml(cfg_file).get("ingest", {})
    known = {f.name for f in fields(IngestConfig)}
    unknown = set(table) - known
    if unknown:
        raise InputError(f"{cfg_file}: unknown keys in [ingest]: {', '.join(sorted(unknown))}")
    given = {k: v for k, v in flags.items() if v is not None and v != ()}  # () = a repeatable flag not given
    merged: dict[str, Any] = {**table, **given}
    merged["config_file"] = cfg_file
    return IngestConfig(**merged)
