"""``spanrl ingest``, ``spanrl transitions build`` and ``spanrl sql``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.ingest.config import ADVANTAGE_CHOICES, CREDIT_CHOICES, make_ingest_config
from spanrl.options import data_option, parse_duration


def stage2_options(func):
    """The transition-builder flags, shared by ``ingest`` and ``transitions build``."""
    opts = [
        click.option("--agent", default=None, help="Regex: keep only this agent's LLM calls (rewards still whole-rollout)."),
        click.option("--rollout-key", default=None, help="Attribute naming the rollout (e.g. session.id)."),
        click.option("--task-key", default=None, help="Attribute naming the task (group baselines)."),
        click.option("--credit", type=click.Choice(CREDIT_CHOICES), default=None, help="Credit assignment [identical]."),
        click.option("--gamma", type=float, default=None, help="Discount for --credit discounted [0.95]."),
        click.option("--advantage", type=click.Choice(ADVANTAGE_CHOICES), default=None, help="Advantage baseline [group]."),
        click.option("--missing-reward", type=click.Choice(["drop", "zero"]), default=None,
                     help="Rollouts with no reward: drop them or count 0 [drop]."),
        click.option("--reward-key", "reward_keys", multiple=True, metavar="ATTR",
                     help="Attribute holding a reward (span, event or log attribute); repeat or comma-list."),
        click.option("--settle", default=None, help="Quiet time before a rollout counts as complete [10m]."),
        click.option("--memory-limit", default=None, help="DuckDB memory limit; spills to disk beyond [2GB]."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="spanrl.toml with [ingest] and [air] (default: DATA/spanrl.toml if present)."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def _config(data: Path, settle: str | None, **flags):
    if settle is not None:
        flags["settle_s"] = parse_duration(settle)
    return make_ingest_config(data=data, **flags)


@click.command()
@data_option
@click.option("--input", "input", default=None, help="Glob of span files to read (default: DATA/otel/*).")
@click.option("--no-transitions", is_flag=True, default=None, help="Only build the lake (stage 1).")
@stage2_options
def ingest(data: Path, settle: str | None, **flags) -> None:
    """Span files -> trace lake (Parquet) -> transition snapshot. Safe to re-run.

    \b
    Example:
      spanrl ingest --data ./spanrl-data --settle 0s
    """
    cfg = _config(data, settle, **flags)
    from spanrl.ingest.load import load_lake_with_progress

    load_lake_with_progress(cfg)
    # ---- stage 2 (transitions; engineer C) -------------------------------------------------------
    if not cfg.no_transitions:
        from spanrl.ingest.build import build_transitions, print_summary

        print_summary(build_transitions(cfg))


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
    from spanrl.ingest.build import build_transitions, print_summary

    print_summary(build_transitions(_config(data, settle, **flags)))


@click.command()
@data_option
@click.argument("query", required=False)
@click.option("-f", "--file", "sql_file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Read the query from a .sql file.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
              show_default=True, help="Output format.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write to FILE.")
def sql(data: Path, query: str | None, sql_file: Path | None, fmt: str, out: Path | None) -> None:
    """Query the trace lake: spans, logs, llm_calls, tool_calls, rewards, rollouts (read-only).

    \b
    Example:
      spanrl sql "select model, sum(output_tokens) from llm_calls group by 1"
    """
    from spanrl.ingest.query import sql_command

    sql_command(data, query, sql_file, fmt, out)
