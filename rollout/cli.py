"""``spanrl rollout`` and ``spanrl tasks``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option, parse_duration


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click.option("--tasks", "tasks", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON lines: input (text), optional task_id and expected.")
@click.option("--n", "n", required=True, type=int, help="Samples per task (the group size).")
@click.option("--policy-url", default=None, help="OpenAI-compatible /v1 URL the agent calls (OPENAI_BASE_URL; its root is "
              "ANTHROPIC_BASE_URL).")
@click.option("--model", default=None, type=click.Path(path_type=Path),
              help="Without --policy-url: start `spanrl serve --model PATH` on the latest adapter.")
@click.option("--temperature", default=None, type=float,
              help="With --model: the started server samples at this temperature whatever the agent asks.")
@click.option("--otlp", default=None,
              help="OTLP endpoint for the agent's spans (default: an embedded collector writing DATA/otel, "
                   "which also counts the attempts that sent no span).")
@click.option("--otlp-protocol", default=None, type=click.Choice(["http/protobuf", "http/json", "grpc"]),
              help="Protocol of --otlp, set for the agents (default: grpc when its port is 4317, else http/protobuf).")
@click.option("--served-model-name", "served_model_names", multiple=True, metavar="NAME",
              help="With --model: a name the started server answers to, e.g. the model an agent hard-codes "
                   "(repeatable; `spanrl serve --served-model-name`).")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Agent processes at once.")
@click.option("--timeout", "timeout", default="120s", show_default=True, help="Per attempt; kills its process group.")
@click.option("--retries", default=1, show_default=True, type=int, help="Extra attempts for a failed sample.")
@click.option("--score", default=None,
              help='Scorer command: reads {"task": ..., "output": ...} on stdin, prints a number (a feedback row).')
@click.option("--run-id", default=None, help="Run name; re-running it skips finished rollouts "
                                             "(default: from the tasks' content, the command and the policy: "
                                             "its URL and adapter, or the started model and adapter).")
@click.option("--adapter-id", default=None, help="The policy's adapter id for the default run id "
                                                 "(default: asked from the server).")
@click.option("--retry-failed", is_flag=True, help="On resume, try again samples that used up their attempts.")
@click.option("--purpose", type=click.Choice(["train", "eval"]), default="train", show_default=True,
              help="eval: hand-made baseline or held-out rollouts, tagged spanrl.rollout.purpose=eval (as `spanrl "
                   "eval`'s) so training snapshots leave them out.")
@click.option("--threads", default=None, type=int,
              help="With --model: torch CPU threads of the started server (`spanrl serve --threads`).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def rollout(data: Path, tasks: Path, n: int, policy_url: str | None, model: Path | None, temperature: float | None,
            otlp: str | None, otlp_protocol: str | None, served_model_names: tuple[str, ...], concurrency: int,
            timeout: str, retries: int, score: str | None, run_id: str | None, adapter_id: str | None,
            retry_failed: bool, purpose: str, threads: int | None, command: tuple[str, ...]) -> None:
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
    from spanrl.rollout.config import RolloutConfig

    cfg = RolloutConfig(tasks=tasks, n=n, command=list(command), data=data, policy_url=policy_url, model=model,
                        temperature=temperature, otlp=otlp, otlp_protocol=otlp_protocol,
                        served_model_names=list(served_model_names), concurrency=concurrency,
                        timeout_s=parse_duration(timeout), retries=retries, score=score, run_id=run_id,
                        adapter_id=adapter_id, retry_failed=retry_failed, purpose=purpose, threads=threads)
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
@click.option("--sql", "sql", default=None,
              help="Read-only query selecting rollouts (a rollout_id column) or tasks (an input column); "
                   "default: every complete rollout.")
@click.option("--out", "out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Write tasks.jsonl here (default: stdout).")
def tasks(data: Path, sql: str | None, out: Path | None) -> None:
    """Export the user inputs of past rollouts as tasks.jsonl, deduplicated, to replay with `spanrl rollout`.

    \b
    Example (yesterday's traffic of one agent):
      spanrl tasks --out tasks.jsonl --sql "select rollout_id from rollouts
          where started_ns >= epoch_ns(current_date - 1) and list_contains(agent_names, 'calc')"
    """
    from spanrl.rollout.export import export_tasks
    from spanrl.rollout.tasks import write_tasks

    rows = export_tasks(data, sql)
    write_tasks(rows, out)
    if out is not None:
        click.echo(f"{len(rows)} task(s) written to {out}", err=True)
