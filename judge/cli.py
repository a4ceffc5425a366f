"""``spanrl judge``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.judge.config import JUDGE_FLAGS, JudgeConfig
from spanrl.options import data_option


@click.command()
@data_option
@click_options(JudgeConfig, *JUDGE_FLAGS)
def judge(data: Path, **flags: object) -> None:
    """Score each task group of rollouts with an LLM judge, relative within the group (RULER-style).

    Judges the snapshot's complete rollouts that have no reward (build it with `spanrl transitions
    build --missing-reward zero`), writes the scores as feedback rows (name judge) that the next
    `spanrl ingest` turns into rewards, and caches each group's verdict.

    \b
    Example:
      spanrl transitions build --missing-reward zero --settle 0s
      OPENAI_API_KEY=... spanrl judge --judge-url https://api.openai.com/v1 --judge-model gpt-4.1-mini
      spanrl ingest
    """
    from spanrl.judge.runner import run_judge

    cfg = resolve(JudgeConfig, {**flags, "data": data}, "judge")
    report = run_judge(cfg)
    _print(report)


def _print(r) -> None:  # noqa: ANN001 - JudgeReport, imported lazily
    click.echo(f"snapshot {r.snapshot_id}: {r.groups} group(s) to judge ({r.skipped.get('with_reward', 0)} rollouts "
               f"with a reward and {r.skipped.get('in_small_groups', 0)} in groups too small left out)")
    click.echo(f"groups: {r.judged} judged, {r.cached} cached, {r.rejected} rejected; "
               f"{r.rollouts_scored} rollouts scored -> {r.feedback_file or 'no new feedback rows'}")
    click.echo(f"spend: {r.calls} call(s), {r.prompt_tokens} prompt + {r.completion_tokens} completion tokens; "
               f"{r.malformed} malformed answer(s), {r.call_errors} failed call(s); rubric {r.rubric_hash}")
    for why in r.rejections[:5]:
        click.echo(f"  rejected: {why}", err=True)
    if r.judged:
        click.echo("next: `spanrl ingest` turns the judge's feedback rows into rewards")
