"""``spanrl export``: a transition snapshot as a dataset that TRL, OpenAI or verl-style trainers load."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, given
from spanrl.export.config import ExportConfig
from spanrl.options import data_option


@click.command()
@data_option
@click_options(ExportConfig, "snapshot", "format", "out", "file_type", "reward_column", "min_reward", "threshold",
               "tokenizer", "overwrite")
def export(data: Path, **options: object) -> None:
    """Write a transition snapshot as a dataset other trainers load directly.

    trl-sft / trl-kto / trl-dpo: TRL's conversational datasets (Parquet, or JSONL); openai-ft: OpenAI's
    chat fine-tuning JSONL; triplets: Agent Lightning-style token-id triplets for verl-style trainers;
    parquet: the snapshot itself as one flat file, every column filled (readable without spanrl).
    A README.md dataset card says where each column came from and what was left out.

    \b
    Example:
      spanrl export --format trl-dpo --out ./exports/dpo
      accelerate launch my_trl_dpo.py   # load_dataset("./exports/dpo", split="train")
    """
    from spanrl.export import export_snapshot

    cfg = ExportConfig(data=data, **{k: v for k, v in options.items() if given(v)})  # not given: the field default
    result = export_snapshot(cfg)
    click.echo(result.summary())
    for warning in result.warnings():
        click.echo(f"warning: {warning}", err=True)
