"""``spanrl judge``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option, parse_duration


@click.command()
@data_option
@click.option("--judge-url", required=True, help="OpenAI-compatible /v1 URL of the judge model.")
@click.option("--judge-model", required=True, help="Model name the judge server serves (part of the cache key).")
@click.option("--rubric", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Rubric text file (default: a general task-success rubric shipped with spanrl).")
@click.option("--snapshot", default="LATEST", show_default=True, help="Snapshot whose rollouts are judged.")
@click.option("--all", "all_rollouts", is_flag=True, help="Also judge rollouts that already have a reward.")
@click.option("--min-group", default=2, show_default=True, type=int, help="Smallest task group judged.")
@click.option("--max-tokens-per-trajectory", default=1500, show_default=True, type=int,
              help="Budget of each rendered trajectory (~4 characters a token; a marker shows the cut).")
@click.option("--concurrency", default=4, show_default=True, type=int, help="Judge requests at once.")
@click.option("--retries", default=2, show_default=True, type=int, help="Extra calls for a malformed answer.")
@click.option("--timeout", "timeout", default="300s", show_default=True, help="Per judge request.")
@click.option("--temperature", default=0.0, show_default=True, type=float, help="Judge sampling temperature.")
@click.option("--api-key-env", default=None,
              help="Environment variable holding the judge's API key (default: OPENAI_API_KEY when set).")
def judge(data: Path, judge_url: str, judge_model: str, rubric: Path | None, snapshot: str, all_rollouts: bool,
          min_group: int, max_tokens_per_trajectory: int, concurrency: int, retries: int, timeout: str,
          temperature: float, api_key_env: str | None) -> None:
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
    from spanrl.judge.config import JudgeConfig
    from spanrl.judge.runner import run_judge

    cfg = JudgeConfig(judge_url=judge_url, judge_model=judge_model, data=data, rubric=rubric, snapshot=snapshot,
                      all_rollouts=all_rollouts, min_group=min_group,
                      max_tokens_per_trajectory=max_tokens_per_trajectory, concurrency=concurrency,
                      retries=retries, timeout_s=parse_duration(timeout), api_key_env=api_key_env,
                      temperature=temperature)
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
