"""``spanrl export``: a transition snapshot as a dataset that TRL, OpenAI or verl-style trainers load."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option

_FORMATS = ["trl-sft", "trl-kto", "trl-dpo", "openai-ft", "triplets", "parquet"]


@click.command()
@data_option
@click.option("--snapshot", default="LATEST", show_default=True, help="Snapshot id or LATEST.")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), required=True, help="Dataset format to write.")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Folder to write (README.md dataset card + train.parquet|jsonl); not under DATA's lake/, "
                   "transitions/, adapters/ or otel/.")
@click.option("--file-type", type=click.Choice(["parquet", "jsonl"]), default=None,
              help="File type [parquet; openai-ft: jsonl only].")
@click.option("--reward-column", type=click.Choice(["return", "final_reward", "advantage"]), default="return",
              show_default=True, help="Snapshot column used as the reward (filter, KTO label, DPO order).")
@click.option("--min-reward", type=float, default=None, help="trl-sft / openai-ft: keep rows with reward >= this.")
@click.option("--threshold", type=float, default=0.5, show_default=True,
              help="trl-kto: label = reward >= threshold.")
@click.option("--tokenizer", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="triplets: local tokenizer folder to render rows that carry text only (else they are left out).")
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in --out.")
def export(data: Path, snapshot: str, fmt: str, out: Path, file_type: str | None, reward_column: str,
           min_reward: float | None, threshold: float, tokenizer: Path | None, overwrite: bool) -> None:
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
    from spanrl.export import ExportConfig, export_snapshot

    cfg = ExportConfig(data=data, format=fmt, out=out, snapshot=snapshot, file_type=file_type,
                       reward_column=reward_column, min_reward=min_reward, threshold=threshold,
                       tokenizer=tokenizer, overwrite=overwrite)
    result = export_snapshot(cfg)
    click.echo(result.summary())
    for warning in result.warnings():
        click.echo(f"warning: {warning}", err=True)
