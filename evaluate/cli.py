"""``spanrl eval``: is policy B better than policy A on these tasks, by more than noise?"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option, parse_duration

WORSE_EXIT = 1  # --fail-if-worse and a policy is worse than the first


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click.option("--tasks", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON lines: input (text), optional task_id and expected (as for `spanrl rollout`).")
@click.option("--policy", "policies", required=True, multiple=True,
              help="An adapter id, LATEST or base (served by `spanrl serve --model MODEL`, started per policy), or "
                   "an OpenAI-compatible /v1 URL, or NAME=URL to name it; repeat: the first is the baseline.")
@click.option("--model", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Base model folder for the policies given as an adapter id, LATEST or base.")
@click.option("--served-model-name", "served_model_names", multiple=True, metavar="NAME",
              help="With --model: a name the started servers answer to (the model name an agent hard-codes); repeatable.")
@click.option("--n", default=4, show_default=True, type=int, help="Samples per task and policy.")
@click.option("--score", default=None, help='Scorer command: {"task", "output"} JSON on stdin, prints a number.')
@click.option("--judge", "judge_url", default=None,
              help="Score with the LLM judge instead (`spanrl judge`'s prompt): its OpenAI-compatible /v1 URL; each "
                   "task's samples of all policies are judged together.")
@click.option("--judge-model", default=None, help="With --judge: the model name the judge server serves.")
@click.option("--rubric", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="With --judge: rubric text (default: the shipped rubric).")
@click.option("--out", default=Path("spanrl-eval"), show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for eval.json and report.png.")
@click.option("--level", default=0.95, show_default=True, type=float, help="Confidence level of the intervals.")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Agent processes at once.")
@click.option("--timeout", default="120s", show_default=True, help="Per attempt.")
@click.option("--report-to", default="none", envvar="SPANRL_REPORT_TO", show_default=True, metavar="LIST",
              help="Experiment trackers, as `spanrl train --report-to`: mlflow (one candidate adapter id: its training "
                   "run), tensorboard, wandb, comma-separated.")
@click.option("--otlp", default=None,
              help="OTLP/HTTP endpoint for the spans (default: the collector already writing DATA, e.g. a running "
                   "`spanrl gateway`'s or `spanrl collector`, else one this run starts).")
@click.option("--threads", default=None, type=int,
              help="torch CPU threads of the `spanrl serve` started per policy (`spanrl serve --threads`).")
@click.option("--fail-if-worse", is_flag=True, help=f"Exit {WORSE_EXIT} when any policy is worse than the first.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def evaluate(data: Path, tasks: Path, policies: tuple[str, ...], model: Path | None,
             served_model_names: tuple[str, ...], n: int, score: str | None,
             judge_url: str | None, judge_model: str | None, rubric: Path | None, out: Path, level: float,
             concurrency: int, timeout: str, report_to: str, otlp: str | None, threads: int | None, fail_if_worse: bool,
             command: tuple[str, ...]) -> None:
    """Run the agent on every task N times per policy (through `spanrl rollout`), score it, and report
    each policy's mean reward with an interval and, per policy vs the first, the paired difference over
    tasks with a seeded bootstrap interval and a verdict: better / worse / no detectable difference.

    \b
    Example (the base model vs adapters/LATEST, each served by a `spanrl serve` this starts):
      spanrl eval --tasks heldout.jsonl --model ./models/smollm2-135m --policy base --policy LATEST \\
          --score "python score.py" -- python agent.py {input}

    \b
    Example (the current server vs a candidate's):
      spanrl eval --tasks heldout.jsonl --n 4 --policy http://127.0.0.1:8000/v1 \\
          --policy 0004-20261122T030747Z=http://127.0.0.1:8001/v1 --score "python score.py" -- python agent.py {input}
    """
    from rich.console import Console

    from spanrl.evaluate.report import print_table, write_png
    from spanrl.evaluate.run import EvalConfig
    from spanrl.evaluate.run import evaluate as run_eval
    from spanrl.rollout.cli import run_with_progress

    cfg = EvalConfig(tasks=tasks, policies=list(policies), command=list(command), score=score, n=n, data=data,
                     out=out, level=level, concurrency=concurrency, timeout_s=parse_duration(timeout), model=model,
                     served_model_names=list(served_model_names),
                     judge_url=judge_url, judge_model=judge_model, rubric=rubric, otlp=otlp, threads=threads)
    trackers = []
    if report_to and report_to != "none":
        from spanrl.evaluate.run import split_policy
        from spanrl.evaluate.track import open_eval_trackers
        from spanrl.trainer.tracking import TrackingUnavailable

        try:
            trackers = open_eval_trackers(report_to, data, [split_policy(p)[0] for p in policies])
        except (TrackingUnavailable, ValueError) as exc:
            raise click.UsageError(str(exc)) from None
    doc = run_eval(cfg, run=run_with_progress)
    print_table(doc, Console())
    png = write_png(doc, out / "report.png")
    click.echo(f"{out / 'eval.json'}, {png}")
    if trackers:
        from spanrl.evaluate.track import log_eval

        log_eval(trackers, doc, out)
    if fail_if_worse and any(c["verdict"] == "worse" for c in doc["comparisons"]):
        click.echo("spanrl eval: a policy is worse than the baseline (--fail-if-worse)", err=True)
        click.get_current_context().exit(WORSE_EXIT)
