"""The ``spanrl`` command: one click group that registers each stage's commands.

It also wires ``spanrl ingest`` itself, the one command that runs two stages (span files -> lake,
then lake -> snapshot), so that no stage imports a later one. torch, transformers and peft are
imported inside the train/serve bodies only, so ``spanrl sql --help`` stays fast without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from spanrl import __version__
from spanrl.errors import BadInput, InputError
from spanrl.ingest.cli import stage1_options
from spanrl.options import data_option
from spanrl.transitions.cli import make_config, stage2_options

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


class _Group(click.Group):
    """Translates stage errors once: InputError -> exit 2 with its message."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except InputError as exc:
            raise BadInput(str(exc)) from exc


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="spanrl")
def cli() -> None:
    """Turn the OpenTelemetry traces your agents already emit into RL data, and train LoRA adapters.

    \b
    Quick start:
      spanrl collector &                      # OTLP on 127.0.0.1:4318 (HTTP) and :4317 (gRPC)
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
      spanrl ingest                           # span files -> trace lake -> transition snapshot
      spanrl sql "select model, count(*) from llm_calls group by 1"
      spanrl train --model ./my-model         # snapshot -> LoRA adapter
    """


@click.command()
@data_option
@stage1_options
@stage2_options
def ingest(data: Path, settle: str | None, **flags) -> None:
    """Span files -> trace lake (Parquet) -> transition snapshot. Safe to re-run.

    \b
    Example:
      spanrl ingest --data ./spanrl-data --settle 0s
    """
    cfg = make_config(data, settle, **flags)
    from spanrl.ingest.load import lake_lock, load_lake_with_progress

    with lake_lock(cfg.data / "lake"):  # both stages, so no other writer slips in between them
        load_lake_with_progress(cfg)
        if cfg.keep_days is not None:  # before stage 2: the snapshot is built from the pruned lake
            from spanrl.ingest.housekeeping import prune_lake
            from spanrl.ingest.lake_cli import print_prune

            print_prune(prune_lake(cfg.data, cfg.keep_days))
        if not cfg.no_transitions:
            from spanrl.transitions.build import build_transitions, print_summary

            print_summary(build_transitions(cfg))
        if cfg.keep_snapshots is not None:
            from spanrl.transitions.cli import print_snapshot_cleanup
            from spanrl.transitions.retention import clean_snapshots

            print_snapshot_cleanup(clean_snapshots(cfg.data, cfg.keep_snapshots))


def _register() -> None:
    from spanrl.collector.cli import collector
    from spanrl.demo.cli import demo, report
    from spanrl.export.cli import export
    from spanrl.ingest.lake_cli import lake
    from spanrl.judge.cli import judge
    from spanrl.query.cli import sql
    from spanrl.rollout.cli import rollout, tasks
    from spanrl.serve.cli import serve
    from spanrl.trainer.cli import adapters, train
    from spanrl.transitions.cli import transitions
    from spanrl.ui.cli import ui

    for command in (collector, ingest, lake, transitions, sql, train, adapters, serve, demo, report, tasks, rollout,
                    judge, export, ui):
        cli.add_command(command)


_register()


def main() -> None:  # pragma: no cover - thin wrapper for python -m
    cli(prog_name="spanrl")
    sys.exit(0)
