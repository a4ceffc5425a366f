"""The ``spanrl`` command: one click group that registers each stage's commands.

It also wires ``spanrl ingest`` itself, the one command that runs two stages (span files -> lake,
then lake -> snapshot), so that no stage imports a later one. Every other command's module is
imported only when that command runs (``COMMANDS``), so a nightly ``spanrl ingest`` or an analyst's
``spanrl sql`` does not pay for the web app's, the server's or the trainer's imports; torch,
transformers and peft are imported inside the train/serve bodies only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from spanrl import __version__
from spanrl.config import click_options
from spanrl.errors import BadInput, InputError
from spanrl.ingest.cli import stage1_options
from spanrl.options import data_option
from spanrl.transitions.cli import stage2_options
from spanrl.transitions.config import IngestConfig, make_ingest_config

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


# command name -> "module:attribute", imported on first use (``spanrl --help`` imports them all)
COMMANDS = {
    "collector": "spanrl.collector.cli:collector",
    "lake": "spanrl.ingest.lake_cli:lake",
    "transitions": "spanrl.transitions.cli:transitions",
    "sql": "spanrl.query.cli:sql",
    "train": "spanrl.trainer.cli:train",
    "adapters": "spanrl.trainer.cli:adapters",
    "serve": "spanrl.serve.cli:serve",
    "gateway": "spanrl.gateway.cli:gateway",
    "demo": "spanrl.demo.cli:demo",
    "report": "spanrl.demo.cli:report",
    "tasks": "spanrl.rollout.cli:tasks",
    "rollout": "spanrl.rollout.cli:rollout",
    "eval": "spanrl.evaluate.cli:evaluate",
    "judge": "spanrl.judge.cli:judge",
    "export": "spanrl.export.cli:export",
    "ui": "spanrl.ui.cli:ui",
}


class _Group(click.Group):
    """Translates stage errors once: InputError -> exit 2 with its message; loads commands lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in COMMANDS:
            import importlib

            module, attribute = COMMANDS[name].split(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, name)
        if command is not None:  # --data s3://BUCKET/PREFIX: run on the root's mirror (spanrl/remote.py)
            from spanrl.remote import remote_aware

            command = remote_aware(command, name)
        return command

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
@click_options(IngestConfig, "no_transitions", "keep_snapshots")  # the composition's own, and stage 2's housekeeping
@stage2_options
def ingest(data: Path, **flags) -> None:
    """Span files -> trace lake (Parquet) -> transition snapshot. Safe to re-run.

    \b
    Example:
      spanrl ingest --data ./spanrl-data --settle 0s
    """
    from spanrl.options import existing_data_root, new_data_root

    (existing_data_root if flags.get("input") is None else new_data_root)(data)  # spans come from DATA/otel, or --input
    cfg = make_ingest_config(data=data, **flags)  # flags > $SPANRL_DATA > [ingest] > defaults
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
            from spanrl.options import print_cleanup
            from spanrl.transitions.retention import clean_snapshots

            print_cleanup("snapshots", clean_snapshots(cfg.data, cfg.keep_snapshots))


cli.add_command(ingest)


def main() -> None:  # pragma: no cover - thin wrapper for python -m
    cli(prog_name="spanrl")
    sys.exit(0)
