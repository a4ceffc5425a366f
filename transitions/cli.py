"""``spanrl transitions build`` and the stage-2 flags it shares with ``spanrl ingest``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.options import data_option, existing_data_root, print_cleanup
from spanrl.transitions.clean_config import CleanFlags
from spanrl.transitions.config import STAGE2_FLAGS, IngestConfig, make_ingest_config

# The transition-builder flags, shared by ``ingest`` and ``transitions build``, generated from the
# config's fields (spanrl.config.click_options): default, choices and help live on the field.
stage2_options = click_options(IngestConfig, *STAGE2_FLAGS)
build_workers_option = click_options(IngestConfig, "workers")  # transitions build only: ingest has it from stage 1


@click.group()
def transitions() -> None:
    """Transition snapshots (stage 2 of ingest) on their own."""


@transitions.command("build")
@data_option
@stage2_options
@build_workers_option
def transitions_build(data: Path, **flags) -> None:
    """Lake -> transition snapshot, without reading new span files.

    \b
    Example:
      spanrl transitions build --credit discounted --advantage batch
    """
    from spanrl.ingest.config import describe_config_file
    from spanrl.ingest.lake import finish_interrupted, lake_lock
    from spanrl.layout import lake_dir
    from spanrl.transitions.build import build_transitions, print_summary

    cfg = make_ingest_config(data=existing_data_root(data), **flags)
    click.echo(describe_config_file(cfg), err=True)
    with lake_lock(lake_dir(cfg.data)):  # the builder takes it again (re-entrant)
        for line in finish_interrupted(lake_dir(cfg.data)):  # a compaction cut short: no rows read twice
            click.echo(f"repair: {line}", err=True)
        print_summary(build_transitions(cfg))


@transitions.command("clean")
@data_option
@click_options(CleanFlags, "keep", "dry_run")
def transitions_clean(data: Path, keep: int, dry_run: bool | None) -> None:
    """Delete old snapshots: keeps the N newest, LATEST, and every snapshot a training run used.

    Training runs are read from DATA/adapters (cycles.jsonl, each training_state.json) and
    DATA/demo/cycles.jsonl. Drafts being written are never touched. Holds the lake's writer lock.

    \b
    Example:
      spanrl transitions clean --keep 7 --dry-run
    """
    from spanrl.transitions.retention import clean_snapshots

    flags = resolve(CleanFlags, {"data": data, "keep": keep, "dry_run": dry_run}, None)
    print_cleanup("snapshots", clean_snapshots(existing_data_root(data), flags.keep, dry_run=flags.dry_run))
