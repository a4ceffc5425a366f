"""``spanrl eval``: is policy B better than policy A on these tasks, by more than noise?"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.evaluate.config import EVAL_FLAGS, WORSE_EXIT, EvalConfig
from spanrl.options import data_option


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click_options(EvalConfig, *EVAL_FLAGS)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def evaluate(data: Path, command: tuple[str, ...], **flags: object) -> None:
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
    from spanrl.evaluate.run import evaluate as run_eval
    from spanrl.rollout.cli import run_with_progress

    cfg = resolve(EvalConfig, {**flags, "data": data, "command": list(command)}, "eval")
    out = cfg.out
    trackers = []
    if cfg.report_to and cfg.report_to != "none":
        from spanrl.evaluate.run import split_policy
        from spanrl.evaluate.track import open_eval_trackers
        from spanrl.trainer.tracking import TrackingUnavailable

        try:
            trackers = open_eval_trackers(cfg.report_to, cfg.data, [split_policy(p)[0] for p in cfg.policies])
        except (TrackingUnavailable, ValueError) as exc:
            raise click.UsageError(str(exc)) from None
    doc = run_eval(cfg, run=run_with_progress)
    print_table(doc, Console())
    png = write_png(doc, out / "report.png")
    click.echo(f"{out / 'eval.json'}, {png}")
    if trackers:
        from spanrl.evaluate.track import log_eval

        log_eval(trackers, doc, out)
    if cfg.fail_if_worse and any(c["verdict"] == "worse" for c in doc["comparisons"]):
        click.echo("spanrl eval: a policy is worse than the baseline (--fail-if-worse)", err=True)
        click.get_current_context().exit(WORSE_EXIT)
