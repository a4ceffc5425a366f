"""``spanrl demo`` and ``spanrl report``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options
from spanrl.demo.config import DemoConfig
from spanrl.layout import adapters_dir, lake_dir, transitions_dir
from spanrl.options import data_option

# the flags are DemoConfig's fields (spanrl.config.click_options): default, choices and help live there
DEMO_FLAGS = ("cycles", "quick", "model", "method", "seed", "train_tasks", "rollouts_per_task", "eval_tasks", "eval_subset",
              "val_tasks", "promote_margin", "promote", "ingest_args", "train_args", "config_file")


@click.command()
@data_option
@click_options(DemoConfig, *DEMO_FLAGS)
def demo(data: Path, **flags: object) -> None:
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
    from rich.console import Console

    from spanrl.demo.config import check_services, make_demo_config
    from spanrl.demo.loop import run_demo
    from spanrl.demo.report import interpret, print_table, write_report

    cfg = make_demo_config(data=data, **flags)  # flags > [demo] in spanrl.toml > the --quick preset > defaults
    check_services(cfg)  # the [collector] and [serve] sections of the commands it starts
    console = Console()
    try:
        run_demo(cfg, console)
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
