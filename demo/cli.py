"""``spanrl demo`` and ``spanrl report``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.demo.config import METHODS
from spanrl.layout import adapters_dir, lake_dir, transitions_dir
from spanrl.options import data_option


@click.command()
@data_option
@click.option("--cycles", default=None, type=int, help="Training cycles to run [5; 1 with --quick].")
@click.option("--quick", is_flag=True, help="A short run: 1 cycle, 2 training tasks x 2, 4 held-out and 4 validation tasks; "
                   "keeps the policy unless the candidate is better (about 9 min on 2 busy cores).")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Local base model folder (default: SmolLM2-135M-Instruct, prepared under DATA/models).")
@click.option("--method", type=click.Choice(list(METHODS)), default=None,
              help="Training recipe: sft (expert iteration), rl (pg + air credit), rl-no-air, rl-discounted "
                   "[rl-no-air; rl with --quick].")
@click.option("--seed", type=int, default=None, help="Seed of the training tasks and the LoRA init [0].")
@click.option("--train-tasks", type=int, default=None, help="Training tasks per cycle [4].")
@click.option("--rollouts-per-task", type=int, default=None, help="Rollouts per training task (a group) [4].")
@click.option("--eval-tasks", type=int, default=None,
              help="Held-out tasks evaluated at cycle 0 and after the last cycle (max 64) [64].")
@click.option("--eval-subset", type=int, default=None, help="Held-out tasks evaluated at the cycles between [16].")
@click.option("--val-tasks", type=int, default=None, help="Validation tasks scoring each candidate (max 32) [16].")
@click.option("--promote-margin", type=float, default=None,
              help="Promote a candidate unless its validation reward is lower than the policy's by more [0.1].")
@click.option("--promote", type=click.Choice(["better", "margin"]), default=None,
              help="Gate: promote only on a better verdict (as `spanrl adapters promote --if-better`), or also on "
                   "no detectable difference within --promote-margin [margin; better with --quick].")
@click.option("--ingest-args", default=None, help="Flags for `spanrl ingest`, as one string (replace the method's).")
@click.option("--train-args", default=None, help="Flags for `spanrl train`, as one string (replace the method's).")
def demo(data: Path, cycles: int | None, quick: bool, model: Path | None, ingest_args: str | None,
         train_args: str | None, **options: object) -> None:
    """The whole loop on this machine: agent -> collector -> ingest -> train -> serve, N cycles.

    Starts the embedded collector and `spanrl serve` on free loopback ports, runs the calculator
    agent (examples/calc_agent, plain openai SDK + OTel instrumentation) on training and held-out
    tasks, ingests, trains a candidate adapter, promotes it only if its validation reward is not
    worse than the policy's by more than --promote-margin, and repeats. Re-running continues the
    cycle numbering of the data root. Ctrl-C stops every subprocess.

    \b
    Example:
      spanrl demo --quick
      spanrl demo --cycles 5 --data ./demo-data
      spanrl demo --method rl --seed 1
    """
    import shlex

    from rich.console import Console

    from spanrl.demo.config import QUICK, DemoConfig
    from spanrl.demo.loop import run_demo
    from spanrl.demo.report import interpret, print_table, write_report

    values: dict = dict(QUICK) if quick else {}
    values.update({k: v for k, v in {**options, "cycles": cycles, "model": model}.items() if v is not None})
    if ingest_args is not None:
        values["ingest_args"] = shlex.split(ingest_args)
    if train_args is not None:
        values["train_args"] = shlex.split(train_args)
    console = Console()
    try:
        run_demo(DemoConfig(data=data, **values), console)
    except KeyboardInterrupt:
        console.print("[yellow]stopped; every subprocess was shut down. Re-run to continue.[/]")
        raise SystemExit(130) from None
    rows, png, page = write_report(data)
    print_table(rows, console)
    console.print(interpret(rows), markup=False, soft_wrap=True)  # one line per run: grep-able in a log
    console.print(f"lake        {lake_dir(data)}\nsnapshots   {transitions_dir(data)}\nadapters    {adapters_dir(data)}"
                  f"\nheld-out    {data / 'eval'}\nreport      {png}  {page}")
    console.print(f"browse      spanrl ui --data {data}", soft_wrap=True)  # one line: copy-paste it


@click.command()
@data_option
def report(data: Path) -> None:
    """Reward per cycle (train and held-out), loss and tokens: report.png, report.html and a table.

    \b
    Example:
      spanrl report --data ./spanrl-data
    """
    from spanrl.demo.report import print_table, write_report

    rows, png, page = write_report(data)
    print_table(rows)
    click.echo(f"wrote {png} and {page}")
