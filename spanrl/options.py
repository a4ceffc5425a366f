"""Flags shared by several subcommands, defined once (sqlite-utils' ``output_options`` habit)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from spanrl.errors import InputError

DEFAULT_DATA = "./spanrl-data"


def resolve_data_root(value: str | os.PathLike[str] | None) -> Path:
    """``--data`` > ``$SPANRL_DATA`` > ``./spanrl-data`` (docs/architecture.md, CLI contract)."""
    if value:
        return Path(value)
    return Path(os.environ.get("SPANRL_DATA") or DEFAULT_DATA)


def existing_data_root(data: Path) -> Path:
    """A command that reads a data root (or adds to one) refuses a missing one rather than create an
    empty tree where a typo pointed."""
    if not data.is_dir():
        raise InputError(f"{data}: no such data root; pass --data DIR (the folder `spanrl collector` or "
                         "`spanrl rollout` writes spans to), or set $SPANRL_DATA")
    return data


def new_data_root(data: Path) -> Path:
    """A command that starts a data root (the collector, ``ingest --input``) creates its folder, and only
    that: a missing parent is a typo as often as not, so it is named instead of created."""
    if data.is_dir():
        return data
    if data.exists():
        raise InputError(f"{data}: exists and is not a folder; pass --data DIR")
    if not data.parent.is_dir():
        raise InputError(f"{data}: its parent folder {data.parent} does not exist; create it first "
                         f"(mkdir -p {data.parent}) or fix --data: spanrl creates only the data root's own folder")
    data.mkdir()
    return data


def data_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--data DIR``: the data root; resolved to a Path (never None) before the command runs."""
    return click.option(
        "--data",
        "data",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=lambda _ctx, _param, v: resolve_data_root(v),
        help="Data root (default: $SPANRL_DATA, else ./spanrl-data).",
    )(func)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(text: str) -> float:
    """``0s``, ``30s``, ``10m``, ``1h`` -> seconds. A bare number means seconds."""
    m = _DURATION.match(str(text))
    if not m:
        raise click.BadParameter(f"{text!r} is not a duration; write it like 0s, 30s, 10m or 1h")
    return float(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def check_keep(flag: str, value: Any) -> int:
    """A retention count (``--keep-days``, ``--keep-snapshots``, ``--keep-adapters``, ``--keep``, or
    its spanrl.toml key): a whole number >= 1. 0 would keep nothing (or only the newest day), never
    what a nightly job means, so it is refused rather than obeyed."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{flag} {value!r}: give a whole number >= 1")
    return value


def print_cleanup(what: str, plan: Any) -> None:
    """A ``spanrl.publish.Cleanup`` plan on stderr: what was deleted (or would be), and why each
    survivor stays. ``what``: "snapshots", "adapters"."""
    verb = "would delete" if plan.dry_run else "deleted"
    click.echo(f"{what}: {verb} {len(plan.remove)}, kept {len(plan.keep)} "
               f"({plan.freed / 1e6:,.1f} MB {'to free' if plan.dry_run else 'freed'})", err=True)
    for name in plan.remove:
        click.echo(f"  {verb} {name}", err=True)
    for name, why in plan.keep.items():
        click.echo(f"  kept {name}: {why}", err=True)
