"""``spanrl prompts``: list, show, promote and diff stored prompt versions; optimize one agent's prompt."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import click

from spanrl.errors import InputError
from spanrl.options import data_option, parse_duration


@click.group()
def prompts() -> None:
    """Versioned system prompts per agent (DATA/prompts), applied by `spanrl gateway --prompts`; optimize them.

    \b
    Example:
      spanrl prompts optimize --agent calc --tasks tasks.jsonl --upstream http://127.0.0.1:8000/v1 \\
          --score "python score.py" -- python agent.py {input}
      spanrl prompts list
      spanrl prompts diff calc 0001 0002
    """


@prompts.command("list")
@data_option
def list_prompts(data: Path) -> None:
    """Every agent's prompt versions: method, parent, verdict; * marks LATEST."""
    from spanrl.prompts.store import list_agents, list_versions, read_version

    agents = list_agents(data)
    if not agents:
        click.echo(f"no prompts in {data}/prompts yet (`spanrl prompts optimize`)")
    for agent in agents:
        for version in list_versions(data, agent):
            v = read_version(data, agent, version)
            verdict = (v.meta.get("evidence") or {}).get("verdict") or ""
            click.echo(f"{'*' if v.latest else ' '} {agent}\t{version}\t{v.meta.get('method', '')}\t"
                       f"parent {v.meta.get('parent') or '-'}\t{v.meta.get('created_at', '')}\t{verdict}")


@prompts.command()
@data_option
@click.argument("agent")
@click.argument("version", required=False)
@click.option("--meta", is_flag=True, help="Print the version's meta (JSON: parent, method, evidence) instead of the prompt.")
def show(data: Path, agent: str, version: str | None, meta: bool) -> None:
    """Print an agent's prompt (LATEST, or VERSION) or, with --meta, its meta (JSON)."""
    from spanrl.prompts.store import read_version

    v = read_version(data, agent, version)
    click.echo(json.dumps(v.meta, indent=2) if meta else v.text)


@prompts.command()
@data_option
@click.argument("agent")
@click.argument("version")
@click.option("--if-better", is_flag=True,
              help="Only when the version's recorded evidence (spanrl prompts optimize) says better; else exit 2.")
def promote(data: Path, agent: str, version: str, if_better: bool) -> None:
    """Point AGENT's LATEST at VERSION (a staged candidate, or a roll back); the gateway applies it next call."""
    from spanrl.evaluate.stats import BETTER
    from spanrl.prompts.store import promote_version, read_version

    v = read_version(data, agent, version)
    evidence = v.meta.get("evidence") or {}
    if if_better and evidence.get("verdict") != BETTER:
        cmp = (evidence.get("validation") or {}).get("comparison") or {}
        raise InputError(f"{agent} {version}: verdict {evidence.get('verdict') or 'none recorded'}"
                         + (f" (diff {cmp['diff']:+.3f}, interval [{cmp['ci'][0]:+.3f}, {cmp['ci'][1]:+.3f}])"
                            if "diff" in cmp else "") + "; LATEST unchanged (drop --if-better to promote anyway)")
    promote_version(data, agent, version)
    click.echo(f"{agent}: LATEST = {version}")


@prompts.command()
@data_option
@click.argument("agent")
@click.argument("v1")
@click.argument("v2")
def diff(data: Path, agent: str, v1: str, v2: str) -> None:
    """Unified diff of two versions of AGENT's prompt."""
    from spanrl.prompts.store import read_version

    a, b = read_version(data, agent, v1), read_version(data, agent, v2)
    lines = difflib.unified_diff(a.text.splitlines(keepends=True), b.text.splitlines(keepends=True),
                                 fromfile=f"{agent}/{a.version}", tofile=f"{agent}/{b.version}")
    click.echo("".join(lines), nl=False)


@prompts.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click.option("--agent", required=True, help="The agent: its x-spanrl-agent header or model name (or a stored agent).")
@click.option("--tasks", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON lines as `spanrl rollout` reads them; split into train and validation.")
@click.option("--score", required=True, help='Scorer command, as `spanrl rollout --score`: {"task", "output"} in, a number out.')
@click.option("--upstream", default=None, help="The model the agent calls (/v1 URL): a `spanrl gateway --prompts` is "
                                               "started in front of it.")
@click.option("--gateway", default=None, help="Or a running `spanrl gateway --prompts` on this data root (its root URL).")
@click.option("--optimizer-url", default=None, help="OpenAI-compatible /v1 URL of the model that critiques and rewrites "
                                                    "(APO); without it only demonstrations are tried.")
@click.option("--optimizer-model", default=None, help="The optimizer's model name.")
@click.option("--budget-rollouts", default=64, show_default=True, type=int, help="Agent runs for all scoring, at most.")
@click.option("--n", "n", default=1, show_default=True, type=int, help="Samples per task (successive halving doubles it).")
@click.option("--val-fraction", default=0.5, show_default=True, type=float, help="Share of the tasks held out for validation.")
@click.option("--candidates", default=2, show_default=True, type=int, help="Rewrites per parent prompt and round.")
@click.option("--beam", default=2, show_default=True, type=int, help="Prompts kept as parents for the next round.")
@click.option("--rounds", default=1, show_default=True, type=int, help="APO rounds (critique -> rewrites -> scoring).")
@click.option("--demos", default=2, show_default=True, type=int, help="Worked examples in the demonstrations candidate.")
@click.option("--promote-if-better/--no-promote", default=True, show_default=True,
              help="Promote the winner when the paired comparison on validation says better.")
@click.option("--level", default=0.95, show_default=True, type=float, help="Confidence level of the paired interval.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the train/validation split.")
@click.option("--concurrency", default=4, show_default=True, type=int, help="Agent processes at once.")
@click.option("--timeout", default="120s", show_default=True, help="Per attempt.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def optimize(data: Path, agent: str, tasks: Path, score: str, upstream: str | None, gateway: str | None,
             optimizer_url: str | None, optimizer_model: str | None, budget_rollouts: int, n: int, val_fraction: float,
             candidates: int, beam: int, rounds: int, demos: int, promote_if_better: bool, level: float, seed: int,
             concurrency: int, timeout: str, command: tuple[str, ...]) -> None:
    """Propose prompts for AGENT from its rewarded rollouts, score each by running the agent, promote a better one.

    Candidates: worked examples from the best rollouts of other tasks, and (with --optimizer-url)
    APO critiques and rewrites; each is staged as a version and scored on the train split behind a
    `spanrl gateway --prompts` (successive halving within --budget-rollouts); the best is compared with
    the current prompt on the validation split, paired over tasks. See docs/prompts.md.
    """
    from spanrl.options import existing_data_root
    from spanrl.prompts.optimize import OptimizeConfig
    from spanrl.prompts.optimize import optimize as run

    existing_data_root(data)
    run(OptimizeConfig(agent=agent, tasks=tasks, command=list(command), score=score, data=data, upstream=upstream,
                       gateway=gateway, optimizer_url=optimizer_url, optimizer_model=optimizer_model,
                       budget_rollouts=budget_rollouts, n=n, val_fraction=val_fraction, candidates=candidates,
                       beam=beam, rounds=rounds, demos=demos, promote_if_better=promote_if_better, level=level,
                       seed=seed, concurrency=concurrency, timeout_s=parse_duration(timeout)))
