"""What ``spanrl lake`` users set: ``LakeCommandConfig`` (the ``[lake]`` section of ``spanrl.toml``:
compaction's file count and memory limit, gc's retention) and ``LakeFlags``, what one call asks (prune's
window, ``--dry-run``; no section). Every field is a ``spanrl.config.knob`` and the flags are generated
from them (``spanrl.config.click_options``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import default_of, knob
from spanrl.errors import InputError
from spanrl.ingest.config import RunConfig
from spanrl.options import DEFAULT_DATA


@dataclass
class LakeCommandConfig:
    """``spanrl lake compact`` and ``spanrl lake gc``'s standing settings, the ``[lake]`` section's owner."""

    data: Path = knob(Path(DEFAULT_DATA), "Data root.")
    config_file: Path | None = knob(None, "spanrl.toml with a [lake] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    min_files: int = knob(2, "Rewrite a date partition once it holds at least this many Parquet files.")
    memory_limit: str = knob(default_of(RunConfig, "memory_limit"), "DuckDB memory limit; spills beyond.")
    gc_keep_days: float = knob(7.0, "Keep the objects of states replaced less than this many days ago (never less "
                               "than an hour); spanrl.toml gc_keep_days.", flag="--keep-days", show="7")

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        days = self.gc_keep_days
        if isinstance(days, bool) or not isinstance(days, int | float) or days < 0:
            shown = f"{days:g}" if isinstance(days, int | float) and not isinstance(days, bool) else repr(days)
            raise InputError(f"--keep-days {shown}: give 0 or more days")


@dataclass
class LakeFlags:
    """What one ``spanrl lake`` call asks (no section: never a standing default)."""

    keep_days: int = knob(help="Drop date partitions older than the newest one minus this many days (data time, "
                          "not today).", required=True)
    dry_run: bool = knob(False, "Say what would change (rewritten, dropped or removed); change nothing.")
