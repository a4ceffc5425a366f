"""What ``spanrl sql`` users set: ``SqlConfig`` (the ``[sql]`` section of ``spanrl.toml``: the output
format and the DuckDB memory limit) and ``SqlFlags``, what one query asks (its file and where its result
goes; no section). Every field is a ``spanrl.config.knob`` and the flags are generated from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import check_choices, default_of, knob
from spanrl.ingest.config import RunConfig
from spanrl.options import DEFAULT_DATA

FORMAT_CHOICES = ("table", "csv", "json", "parquet")


@dataclass
class SqlConfig:
    """``spanrl sql``'s standing settings, the ``[sql]`` section's owner."""

    data: Path = knob(Path(DEFAULT_DATA), "Data root.")
    config_file: Path | None = knob(None, "spanrl.toml with a [sql] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    format: str = knob("table", "Output format.", choices=FORMAT_CHOICES)
    # one home for the default: ingest's run knob (RunConfig.memory_limit)
    memory_limit: str = knob(default_of(RunConfig, "memory_limit"), "DuckDB memory limit for the query (no spill: a "
                             "query past it fails with a message).")

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        check_choices(self)


@dataclass
class SqlFlags:
    """What one ``spanrl sql`` call asks (no section: never a standing default)."""

    sql_file: Path | None = knob(None, "Read the query from a .sql file.", flag="--file", short="-f",
                                 click_type=click.Path(dir_okay=False, exists=True, path_type=Path))
    out: Path | None = knob(None, "Write to FILE.", click_type=click.Path(dir_okay=False, path_type=Path))
