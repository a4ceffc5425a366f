"""Stage 1's config (files -> lake) and the run knobs every ingest run shares (docs/architecture.md,
"Configuration").

``RunConfig`` holds what says how a run goes (data root, config file, DuckDB memory and threads);
``LakeConfig`` adds stage 1's own knobs. Stage 2's knobs are ``spanrl.transitions.config.BuildConfig``,
and ``spanrl ingest`` runs with ``IngestConfig``, the two composed, read from the ``[ingest]`` section.
Each field is a ``spanrl.config.knob``: its default, help and flag live there only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import check_choices, knob
from spanrl.errors import InputError
from spanrl.memory import AUTO, resolve_memory_limit
from spanrl.options import DEFAULT_DATA, check_keep

HOUSEKEEPING_KEYS = ("keep_days", "keep_snapshots")  # say what to delete after a run, not how rows are made


@dataclass
class RunConfig:
    """How a run goes, never which rows it makes (docs/incremental.md: these keys never rebuild)."""

    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    config_file: Path | None = knob(None, "spanrl.toml with [ingest], [air] and [[conventions]] (default: "
                                    "DATA/spanrl.toml if present, then ./spanrl.toml).", flag="--config",
                                    click_type=click.Path(dir_okay=False, path_type=Path))
    memory_limit: str = knob(AUTO, "DuckDB memory limit; spills to disk beyond. auto: half of the memory this "
                             "process can have (RAM, or its cgroup's limit), a Ray task's share inside a task, "
                             "at least 1GB; or a size DuckDB reads (2GB, 512MB, 80%).")
    threads: int | None = knob(None, "DuckDB threads (default: all cores; inside a Ray task, its CPUs).")
    workers: int | None = knob(None, "Run stage 1 per group of span files as N Ray tasks (RAY_ADDRESS joins a "
                               "cluster, else a local one is started); same lake, same snapshot hash. Needs "
                               "pip install 'spanrl[scale]'.", metavar="N")

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        self.config_file = Path(self.config_file) if self.config_file is not None else None
        check_choices(self)
        check_memory_limit(self.memory_limit)
        for key in HOUSEKEEPING_KEYS:
            if getattr(self, key, None) is not None:
                check_keep(f"--{key.replace('_', '-')}", getattr(self, key))

    def to_dict(self) -> dict[str, Any]:
        """The resolved config a snapshot's manifest records; housekeeping keys left out, so a
        changed retention setting is never mistaken for a changed stage-2 config (a rebuild)."""
        d = asdict(self)
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items() if k not in HOUSEKEEPING_KEYS}


@dataclass
class LakeConfig(RunConfig):
    """Stage 1: which span files to read, and how many days of lake to keep."""

    input: str | None = knob(None, "Glob or folder of span files (default: DATA/otel/*), or s3://BUCKET/PREFIX/ "
                              "for objects the collector's awss3exporter wrote (docs/object-storage.md).")
    # housekeeping: what a run deletes afterwards, never which rows it makes (see HOUSEKEEPING_KEYS)
    keep_days: int | None = knob(None, "After stage 1: drop lake date partitions older than the newest one minus "
                                 "N days; spanrl.toml keep_days.", metavar="N")


def describe_config_file(cfg: RunConfig) -> str:
    """Which ``spanrl.toml`` this run uses, for the summary: a file in the current directory is
    picked up too, so say where it came from rather than apply it silently."""
    if cfg.config_file is None:
        return "config: none (built-in defaults; DATA/spanrl.toml or ./spanrl.toml would be read)"
    path = Path(cfg.config_file).resolve()
    if path.parent == Path.cwd().resolve() and path.parent != cfg.data.resolve():
        return f"config: {path} (found in the current directory)"
    return f"config: {path}"


def check_memory_limit(value: str) -> None:
    """Ask DuckDB itself (the scratch database) whether it accepts ``value`` as a memory limit, so
    the accepted spellings are exactly DuckDB's (2GB, 512MiB, 80%...)."""
    import duckdb

    from spanrl.sqlfiles import drop_scratch, scratch, sql_literal

    if str(value).strip().startswith("-"):  # DuckDB reads a negative size as "no limit" (16383.9 PiB)
        raise InputError(f"--memory-limit {value!r}: a memory size cannot be negative; write it like 2GB, 512MB or 80%")
    con = scratch()  # the process's bookkeeping database: its limit is set, read back and reset
    try:
        con.execute(f"SET memory_limit = {sql_literal(resolve_memory_limit(value))}")
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    except duckdb.OutOfMemoryException:  # not even this query runs under it
        limit = None
    except (duckdb.Error, InputError) as exc:
        raise InputError(f"--memory-limit {value!r}: not a memory size DuckDB accepts ({str(exc).splitlines()[0]}); "
                         "write it like 2GB, 512MB or 80%") from None
    finally:
        try:
            con.execute("RESET memory_limit")  # a tiny limit for the run is not one for writing the lake manifest
        except duckdb.Error:  # a database with next to no memory may not even reset it: start a new one
            drop_scratch()
        con.close()
    if limit is None or limit.endswith("bytes") or limit.split()[0] in ("0", "0.0"):
        raise InputError(f"--memory-limit {value!r}: too little for DuckDB to run a query; "
                         "give at least some MB, e.g. 512MB")
