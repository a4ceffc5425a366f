"""The ``spanrl`` command: one click group that only registers each stage's commands.

torch, transformers and peft are imported inside the train/serve bodies only, so
``spanrl sql --help`` stays fast without the ``train`` extra.
"""

from __future__ import annotations

import sys

import click

from spanrl import __version__
from spanrl.errors import BadInput, InputError

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


def _register() -> None:
    from spanrl.collector.cli import collector
    from spanrl.export.cli import export
    from spanrl.ingest.cli import ingest, sql, transitions
    from spanrl.trainer.cli import demo, report, serve, train

    for command in (collector, ingest, transitions, sql, train, serve, demo, report, export):
        cli.add_command(command)


_register()


def main() -> None:  # pragma: no cover - thin wrapper for python -m
    cli(prog_name="spanrl")
    sys.exit(0)
