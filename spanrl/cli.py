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
from spanrl.errors import BadInput, InputError, damaged_parquet, damaged_parquet_error

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
    "prompts": "spanrl.prompts.cli:prompts",
    "demo": "spanrl.demo.cli:demo",
    "report": "spanrl.demo.cli:report",
    "tasks": "spanrl.rollout.cli:tasks",
    "rollout": "spanrl.rollout.cli:rollout",
    "eval": "spanrl.evaluate.cli:evaluate",
    "judge": "spanrl.judge.cli:judge",
    "export": "spanrl.export.cli:export",
    "ui": "spanrl.ui.cli:ui",
}


# command name -> its one-line help, so that `spanrl --help` lists the commands without importing
# any of them (pyarrow, duckdb, rich, the web app: 3.7 s before, issue 31). tests/test_cli.py checks
# each line against the command's own docstring, so a changed docstring fails there, not silently.
SHORT_HELP = {
    "adapters": "Adapter folders under DATA/adapters: list them, promote one to LATEST (or roll back).",
    "collector": "Receive OTLP traces and logs and write span files under DATA/otel/.",
    "demo": "The whole loop on this machine: agent -> collector -> ingest -> train -> serve, N cycles.",
    "eval": "Run the agent on every task N times per policy (through `spanrl rollout`), score it, and report "
            "each policy's mean reward with an interval and, per policy vs the first, the paired difference over "
            "tasks with a seeded bootstrap interval and a verdict: better / worse / no detectable difference.",
    "export": "Write a transition snapshot as a dataset other trainers load directly.",
    "gateway": "OpenAI-compatible proxy that records every LLM call of any agent with engine token ids.",
    "ingest": "Span files -> trace lake (Parquet) -> transition snapshot.",
    "judge": "Score each task group of rollouts with an LLM judge, relative within the group (RULER-style).",
    "lake": "Housekeeping of the trace lake: compact small files, drop old date partitions, verify and collect an S3 root.",
    "prompts": "Versioned system prompts per agent (DATA/prompts), applied by `spanrl gateway --prompts`; optimize them.",
    "report": "Reward per cycle (train and held-out), loss and tokens: report.png, report.html and a table.",
    "rollout": "Run an unmodified agent command N times per task; every sample is one rollout in the lake.",
    "serve": "OpenAI-compatible chat server (transformers + peft) that traces its own token ids.",
    "sql": "Query the trace lake: spans, logs, llm_calls, tool_calls, rewards, rollouts (read-only).",
    "tasks": "Export the user inputs of past rollouts as tasks.jsonl, deduplicated, to replay with `spanrl rollout`.",
    "train": "One batch cycle: transition snapshot -> LoRA adapter (continues from adapters/LATEST).",
    "transitions": "Transition snapshots (stage 2 of ingest) on their own.",
    "ui": "Read-only web app over the data root: rollouts, one rollout's calls and rewards, tasks, snapshots, "
          "training cycles and a SQL box (the same guarded connection as `spanrl sql`).",
}


class _Group(click.Group):
    """Translates stage errors once: InputError -> exit 2 with its message; loads commands lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS) | {"ingest"})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, from SHORT_HELP: listing a command does not import it."""
        from click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            text = SHORT_HELP.get(name)
            if text is None:  # a command registered without a SHORT_HELP line: ask it
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                text = command.get_short_help_str(1000)
            rows.append((name, make_default_short_help(text, limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name == "ingest":
            command = _ingest_command()
            self.add_command(command, name)
        if command is None and name in COMMANDS:
            import importlib

            module, attribute = COMMANDS[name].split(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, name)
        if command is not None:  # a missing root refused; --data s3://BUCKET/PREFIX run on its mirror (spanrl/roots.py)
            from spanrl.roots import root_aware

            command = root_aware(command, name)
        return command

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except InputError as exc:
            raise BadInput(str(exc)) from exc
        except Exception as exc:  # a damaged Parquet file, in DuckDB's or pyarrow's words: where, and what to do
            path = damaged_parquet(exc) if not isinstance(exc, click.ClickException) else None
            if path is None:
                raise
            raise BadInput(str(damaged_parquet_error(path, exc))) from exc


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


def _ingest_command() -> click.Command:
    """``spanrl ingest``, built on first use: its flags come from both stages' option modules
    (pyarrow, duckdb), which `spanrl --help` and every other command need not import."""
    from spanrl.config import click_options
    from spanrl.ingest.cli import stage1_options
    from spanrl.options import data_option
    from spanrl.transitions.cli import stage2_options
    from spanrl.transitions.config import IngestConfig

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
        _run_ingest(data, flags)

    return ingest


def _run_ingest(data: Path, flags: dict) -> None:
    """The body of ``spanrl ingest``: both stages under the lake's writer lock."""
    from spanrl.options import existing_data_root, new_data_root
    from spanrl.transitions.config import make_ingest_config

    (existing_data_root if flags.get("input") is None else new_data_root)(data)  # spans come from DATA/otel, or --input
    cfg = make_ingest_config(data=data, **flags)  # flags > $SPANRL_DATA > [ingest] > defaults
    from spanrl.ingest.load import lake_lock
    from spanrl.ingest.progress import load_lake_with_progress

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


def __getattr__(name: str) -> click.Command:
    """``from spanrl.cli import ingest`` still works: a command of its own (click caches the help
    option of a command on its first context, so the group's -h must not depend on this one's)."""
    if name == "ingest":
        return _ingest_command()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:  # pragma: no cover - thin wrapper for python -m
    cli(prog_name="spanrl")
    sys.exit(0)
