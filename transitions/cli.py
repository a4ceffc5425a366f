"""``spanrl transitions build`` and the stage-2 flags it shares with ``spanrl ingest``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.ingest.config import ADVANTAGE_CHOICES, CREDIT_CHOICES, make_ingest_config
from spanrl.options import data_option, existing_data_root, parse_duration, print_cleanup


def stage2_options(func):
    """The transition-builder flags, shared by ``ingest`` and ``transitions build``."""
    opts = [
        click.option("--agent", default=None, help="Regex: keep only this agent's LLM calls (rewards still whole-rollout)."),
        click.option("--rollout-key", default=None, help="Attribute naming the rollout (e.g. session.id)."),
        click.option("--task-key", default=None, help="Attribute naming the task (group baselines)."),
        click.option("--credit", type=click.Choice(CREDIT_CHOICES), default=None,
                     help="Credit assignment: air (R plus the AIR rewards the call caused), identical, "
                          "discounted, last [air]."),
        click.option("--gamma", type=float, default=None, help="Discount for --credit discounted [0.95]."),
        click.option("--advantage", type=click.Choice(ADVANTAGE_CHOICES), default=None, help="Advantage baseline [group]."),
        click.option("--missing-reward", type=click.Choice(["drop", "zero"]), default=None,
                     help="Rollouts with no reward: drop them or count 0 [drop]."),
        click.option("--reward-key", "reward_keys", multiple=True, metavar="ATTR",
                     help="Attribute holding a reward (span, event or log attribute); repeat or comma-list."),
        click.option("--no-hierarchy-repair", "hierarchy_repair", flag_value=False, default=None,
                     help="Keep an LLM call with no agent ancestor unattributed even when an agent span encloses it in time."),
        click.option("--settle", default=None, help="Quiet time before a rollout counts as complete [10m]."),
        click.option("--rebuild", is_flag=True, default=None,
                     help="Stage 2 recomputes every rollout instead of only what changed since the last build."),
        click.option("--memory-limit", default=None, help="DuckDB memory limit; spills to disk beyond [2GB]."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="spanrl.toml with [ingest] and [air] (default: DATA/spanrl.toml if present)."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def make_config(data: Path, settle: str | None, **flags):
    if settle is not None:
        flags["settle_s"] = parse_duration(settle)
    return make_ingest_config(data=data, **flags)


@click.group()
def transitions() -> None:
    """Transition snapshots (stage 2 of ingest) on their own."""


@transitions.command("build")
@data_option
@stage2_options
def transitions_build(data: Path, settle: str | None, **flags) -> None:
    """Lake -> transition snapshot, without reading new span files.

    \b
    Example:
      spanrl transitions build --credit discounted --advantage batch
    """
    from spanrl.ingest.config import describe_config_file
    from spanrl.ingest.housekeeping import finish_interrupted
    from spanrl.ingest.load import lake_lock
    from spanrl.transitions.build import build_transitions, print_summary

    cfg = make_config(existing_data_root(data), settle, **flags)
    click.echo(describe_config_file(cfg), err=True)
    with lake_lock(cfg.data / "lake"):  # the builder takes it again (re-entrant)
        for line in finish_interrupted(cfg.data / "lake"):  # a compaction cut short: no rows read twice
            click.echo(f"repair: {line}", err=True)
        print_summary(build_transitions(cfg))




@transitions.command("clean")
@data_option
@click.option("--keep", type=int, required=True, metavar="N", help="Keep the N newest snapshots (and every protected one).")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
def transitions_clean(data: Path, keep: int, dry_run: bool) -> None:
    """Delete old snapshots: keeps the N newest, LATEST, and every snapshot a training run used.

    Training runs are read from DATA/adapters (cycles.jsonl, each training_state.json) and
    DATA/demo/cycles.jsonl. Drafts being written are never touched. Holds the lake's writer lock.

    \b
    Example:
      spanrl transitions clean --keep 7 --dry-run
    """
    from spanrl.transitions.retention import clean_snapshots

    print_cleanup("snapshots", clean_snapshots(existing_data_root(data), keep, dry_run=dry_run))
