"""``spanrl rollout`` and ``spanrl tasks``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.options import data_option
from spanrl.rollout.config import ROLLOUT_FLAGS, TASKS_FLAGS, RolloutConfig, TasksConfig


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click_options(RolloutConfig, *ROLLOUT_FLAGS)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def rollout(data: Path, command: tuple[str, ...], **flags: object) -> None:
    """Run an unmodified agent command N times per task; every sample is one rollout in the lake.

    Each run gets, for its process only: OTEL_EXPORTER_OTLP_ENDPOINT and _PROTOCOL (also the
    TRACES_ and LOGS_ ones, so a stale value cannot send spans elsewhere), OTEL_RESOURCE_ATTRIBUTES
    with spanrl.rollout_id and spanrl.task_id appended, OPENAI_BASE_URL and OPENAI_API_BASE (the policy
    URL), ANTHROPIC_BASE_URL and ANTHROPIC_API_BASE (its root, without /v1), and the input on stdin and
    in SPANRL_TASK_INPUT ({input} and {task_id} in the arguments are replaced). Re-running the same
    run skips finished rollouts. Without --otlp the spans go to the collector already writing DATA (a
    `spanrl gateway`'s or `spanrl collector`), else to one this run starts. Exit 1 (after the summary)
    when no attempt succeeded.

    \b
    Example (an uninstrumented Python agent, traced by opentelemetry-distro):
      spanrl rollout --tasks tasks.jsonl --n 4 --policy-url http://127.0.0.1:8000/v1 \\
          --score "python score.py" -- opentelemetry-instrument python my_agent.py --question {input}
    """
    cfg = resolve(RolloutConfig, {**flags, "data": data, "command": list(command)}, "rollout")
    if run_with_progress(cfg).nothing_succeeded:
        click.echo("spanrl rollout: no attempt succeeded; see the failures above and the agent's stderr in "
                   "the run folder's logs/", err=True)
        click.get_current_context().exit(1)


def run_with_progress(cfg):  # noqa: ANN001, ANN202 - RolloutConfig -> RunSummary, imported lazily
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from spanrl.rollout.report import print_summary
    from spanrl.rollout.runner import run_rollouts

    console = Console(stderr=True)
    with Progress(TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bar = progress.add_task("rollouts", total=None, status="")
        counts = {"ok": 0, "failed": 0, "timeout": 0}

        def done(att) -> None:  # noqa: ANN001
            counts[att.status] = counts.get(att.status, 0) + 1
            progress.update(bar, advance=1, status=" ".join(f"{k} {v}" for k, v in counts.items()))

        summary = run_rollouts(cfg, on_plan=lambda total: progress.update(bar, total=total), on_done=done)
    print_summary(summary, Console())
    return summary


@click.command()
@data_option
@click_options(TasksConfig, *TASKS_FLAGS)
def tasks(data: Path, **flags: object) -> None:
    """Export the user inputs of past rollouts as tasks.jsonl, deduplicated, to replay with `spanrl rollout`.

    \b
    Example (yesterday's traffic of one agent):
      spanrl tasks --out tasks.jsonl --sql "select rollout_id from rollouts
          where started_ns >= epoch_ns(current_date - 1) and list_contains(agent_names, 'calc')"
    """
    from spanrl.rollout.export import export_tasks
    from spanrl.rollout.tasks import write_tasks

    cfg = resolve(TasksConfig, {**flags, "data": data}, "tasks")
    rows = export_tasks(cfg.data, cfg.sql)
    write_tasks(rows, cfg.out)
    if cfg.out is not None:
        click.echo(f"{len(rows)} task(s) written to {cfg.out}", err=True)
