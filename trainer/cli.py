"""``spanrl train``, ``spanrl serve``, ``spanrl demo`` and ``spanrl report``.

torch/transformers/peft are imported inside the command bodies only (the ``train`` extra).
"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.errors import InputError
from spanrl.options import data_option


@click.command()
@data_option
@click.option("--model", required=True, type=click.Path(path_type=Path), help="Local base model folder (no hub).")
@click.option("--snapshot", default="LATEST", show_default=True, help="Snapshot id or LATEST.")
@click.option("--loss", type=click.Choice(["pg", "ppo", "sft"]), default="pg", show_default=True, help="Training loss.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Adapters root (default DATA/adapters).")
def train(data: Path, model: Path, snapshot: str, loss: str, out: Path | None) -> None:
    """One batch cycle: transition snapshot -> LoRA adapter (continues from adapters/LATEST).

    \b
    Example:
      spanrl train --model ./models/smollm2-135m --snapshot LATEST --loss pg
    """
    raise InputError("train is not built yet")


@click.command()
@data_option
@click.option("--model", required=True, type=click.Path(path_type=Path), help="Local base model folder.")
@click.option("--adapter", default=None, help="Adapter folder or LATEST (hot-reloads when LATEST changes).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
def serve(data: Path, model: Path, adapter: str | None, host: str, port: int) -> None:
    """OpenAI-compatible chat server (transformers + peft) that traces its own token ids.

    \b
    Example:
      spanrl serve --model ./models/smollm2-135m --adapter LATEST --port 8000
    """
    raise InputError("serve is not built yet")


@click.command()
@data_option
@click.option("--cycles", default=None, type=int, help="Train/eval cycles to run.")
@click.option("--quick", is_flag=True, help="A few-minute smoke run.")
def demo(data: Path, cycles: int | None, quick: bool) -> None:
    """The whole loop on this machine: agent -> collector -> ingest -> train -> serve, N cycles.

    \b
    Example:
      spanrl demo --quick
    """
    raise InputError("demo is not built yet")


@click.command()
@data_option
def report(data: Path) -> None:
    """Reward per cycle (train and held-out), loss and tokens: report.png, report.html and a table.

    \b
    Example:
      spanrl report --data ./spanrl-data
    """
    raise InputError("report is not built yet")
