"""``spanrl train``.

torch/transformers/peft are imported inside the command bodies only (the ``train`` extra).
"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.options import data_option, print_cleanup
from spanrl.trainer.config import AdapterFlags, TrainConfig, TrainRunFlags  # light: no torch

# the flags are TrainConfig's fields (spanrl.config.click_options): default, choices and help live there
TRAIN_FLAGS = ("loss_agg", "lr", "lr_schedule", "epochs", "rollouts_per_step", "tokens_per_batch", "max_prompt_tokens",
               "max_response_tokens", "is_cap", "clip_eps", "clip_eps_high", "kl_coef", "max_kl", "sft_min_return", "sft_top_k",
               "grad_clip", "lora_r", "lora_alpha", "gradient_checkpointing", "merge_calls", "seed", "fresh", "retrain",
               "new_only", "keep_adapters", "report_to", "agent")


@click.command()
@data_option
@click_options(TrainConfig, "model", "snapshot", "loss", "out")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="spanrl.toml with a [train] table (default DATA/spanrl.toml, then ./spanrl.toml).")
@click_options(TrainConfig, *TRAIN_FLAGS)
@click_options(TrainRunFlags, "notify", "progress", "promote")
def train(data: Path, config_file: Path | None, notify: str | None, progress: bool | None, promote: bool | None,
          **options: object) -> None:
    """One batch cycle: transition snapshot -> LoRA adapter (continues from adapters/LATEST).

    Writes DATA/adapters/<cycle_id>/ (adapter_config.json, adapter_model.safetensors,
    training_state.json, metrics.jsonl, report.png), swaps adapters/LATEST and appends to
    adapters/cycles.jsonl. Under `torchrun --nproc_per_node N` it trains data-parallel.

    \b
    Example:
      spanrl train --model ./models/smollm2-135m --snapshot LATEST --loss pg
    """
    from spanrl.trainer.config import make_train_config
    from spanrl.trainer.train import AlreadyTrained
    from spanrl.trainer.train import train as run_train

    cfg = make_train_config(config_file=config_file, data=data, **options)
    run = resolve(TrainRunFlags, {"notify": notify, "progress": progress, "promote": promote}, None)
    try:
        result = run_train(cfg, notify=run.notify, progress=run.progress, promote=run.promote)
    except AlreadyTrained as done:
        click.echo(f"nothing to do: {done}")
        return
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if result.cycle_id is None:  # a data-parallel rank other than 0
        return
    s = result.stats
    click.echo(
        f"cycle {result.cycle_id}: {result.steps} steps, {result.response_tokens} response tokens, "
        f"loss {result.loss:.4f}, {result.seconds:.1f}s -> {result.folder}"
    )
    click.echo(f"rows {s.rows}: engine {s.engine}, text {s.text}, skipped {s.skipped} ({s.summary()})")
    if result.guard.get("rolled_back"):
        g = result.guard
        tripped = ", ".join(f"step {r['step']} KL {r['kl']:.3g}" for r in g["rolled_back"][:5])
        more = ", ..." if len(g["rolled_back"]) > 5 else ""
        click.echo(f"guard: rolled back {g['rolled_back_steps']} of {g['steps']} steps whose KL to the cycle start "
                   f"exceeded --max-kl {g['max_kl']:g} ({tripped}{more}); lower --lr if most steps trip", err=True)
    if not run.promote:
        click.echo(f"candidate {result.cycle_id}: adapters/LATEST unchanged; `spanrl adapters promote {result.cycle_id}` makes it LATEST")
    if cfg.keep_adapters is not None:
        from spanrl.trainer.retention import clean_adapters

        print_cleanup("adapters", clean_adapters(cfg.adapters_root, cfg.keep_adapters, data=cfg.data))


@click.group()
def adapters() -> None:
    """Adapter folders under DATA/adapters: list them, promote one to LATEST (or roll back).

    \b
    Example:
      spanrl adapters list
      spanrl adapters promote 0003-20261122T030747459726Z
    """


@adapters.command("list")
@data_option
@click_options(TrainConfig, "out")  # one home: train's --out
def adapters_list(data: Path, out: Path | None) -> None:
    """Every trained adapter (cycles.jsonl), which is LATEST and which were kept as candidates.

    \b
    Example:
      spanrl adapters list --data ./spanrl-data
    """
    from spanrl.trainer.adapter import adapters_dir, read_cycles, read_latest

    root = out or adapters_dir(data)
    latest = read_latest(root)
    for line in read_cycles(root):
        mark = "LATEST" if latest and line.get("cycle_id") == latest.cycle_id else (
            "candidate" if line.get("promoted") is False else "")
        click.echo(f"{line.get('cycle_id')}  cycle {line.get('cycle')}  loss {line.get('loss')}  "
                   f"reward {line.get('mean_final_reward')}  {mark}".rstrip())


@adapters.command("promote")
@data_option
@click_options(TrainConfig, "out")  # one home: train's --out
@click_options(AdapterFlags, "if_better")
@click.argument("cycle_id")
def adapters_promote(data: Path, out: Path | None, cycle_id: str, if_better: Path | None) -> None:
    """Make adapter CYCLE_ID adapters/LATEST: promote a candidate, or roll back to an older adapter.

    `spanrl serve --adapter LATEST` loads it between batches; the next `spanrl train` continues it.

    \b
    Example:
      spanrl adapters promote 0002-20261122T032922473134Z
    """
    from spanrl.trainer.adapter import adapters_dir, promote_adapter

    if_better = resolve(AdapterFlags, {"if_better": if_better}, None).if_better
    if if_better is not None:  # promotion on evidence (docs/eval.md): refuses unless the verdict is "better"
        from spanrl.trainer.evidence import check_better

        comp = check_better(if_better, cycle_id)
        click.echo(f"{cycle_id} is better than {comp['baseline']}: {comp['diff']:+.3f} {comp['ci']}")
    folder = promote_adapter(out or adapters_dir(data), cycle_id)
    click.echo(f"adapters/LATEST -> {folder}")


@adapters.command("clean")
@data_option
@click_options(TrainConfig, "out")  # one home: train's --out
@click_options(AdapterFlags, "keep", "dry_run")
def adapters_clean(data: Path, out: Path | None, keep: int, dry_run: bool | None) -> None:
    """Delete old adapters: keeps the N newest, LATEST, those DATA/demo/cycles.jsonl names, and every
    ancestor of a kept adapter (--new-only walks that chain). Drafts being saved are never touched.

    \b
    Example:
      spanrl adapters clean --keep 5 --dry-run
    """
    from spanrl.trainer.adapter import adapters_dir
    from spanrl.trainer.retention import clean_adapters

    flags = resolve(AdapterFlags, {"keep": keep, "dry_run": dry_run}, None)
    print_cleanup("adapters", clean_adapters(out or adapters_dir(data), flags.keep, data=data, dry_run=flags.dry_run))
