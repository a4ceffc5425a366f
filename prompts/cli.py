"""``spanrl prompts``: list, show, promote and diff stored prompt versions; optimize one agent's prompt."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from spanrl.config import click_options, resolve
from spanrl.errors import InputError
from spanrl.options import data_option
from spanrl.prompts.config import OPTIMIZE_FLAGS, OptimizeConfig, PromptStoreFlags

if TYPE_CHECKING:
    from spanrl.prompts.store import PromptVersion

TURNS_MARK = "--- turns: chat messages the gateway puts right after the system message ---"


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
@click_options(PromptStoreFlags, "meta")
def show(data: Path, agent: str, version: str | None, meta: bool | None) -> None:
    """Print an agent's prompt (LATEST, or VERSION) and its conversation turns, or, with --meta, its meta (JSON)."""
    from spanrl.prompts.store import read_version

    flags = resolve(PromptStoreFlags, {"data": data, "meta": meta}, None)
    v = read_version(data, agent, version)
    click.echo(json.dumps(v.meta, indent=2) if flags.meta else _full_text(v))


def _lines(v: PromptVersion) -> list[str]:
    text = _full_text(v)
    return (text if text.endswith("\n") else text + "\n").splitlines(keepends=True)


def _full_text(v: PromptVersion) -> str:
    """The prompt and, when it has them, its turns (one message per line after a marker): what show and diff print."""
    if not v.turns:
        return v.text
    return v.text.rstrip("\n") + f"\n{TURNS_MARK}\n" + "\n".join(json.dumps(m, ensure_ascii=False) for m in v.turns)


@prompts.command()
@data_option
@click.argument("agent")
@click.argument("version")
@click_options(PromptStoreFlags, "if_better")
def promote(data: Path, agent: str, version: str, if_better: bool | None) -> None:
    """Point AGENT's LATEST at VERSION (a staged candidate, or a roll back); the gateway applies it next call."""
    from spanrl.evaluate.stats import BETTER
    from spanrl.prompts.store import promote_version, read_version

    flags = resolve(PromptStoreFlags, {"data": data, "if_better": if_better}, None)
    v = read_version(data, agent, version)
    evidence = v.meta.get("evidence") or {}
    if flags.if_better and evidence.get("verdict") != BETTER:
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
    """Unified diff of two versions of AGENT's prompt (and of their conversation turns)."""
    from spanrl.prompts.store import read_version

    a, b = read_version(data, agent, v1), read_version(data, agent, v2)
    lines = difflib.unified_diff(_lines(a), _lines(b),
                                 fromfile=f"{agent}/{a.version}", tofile=f"{agent}/{b.version}")
    click.echo("".join(lines), nl=False)


@prompts.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@data_option
@click_options(OptimizeConfig, *OPTIMIZE_FLAGS)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def optimize(data: Path, command: tuple[str, ...], **flags: object) -> None:
    """Propose prompts for AGENT from its rewarded rollouts, score each by running the agent, promote a better one.

    Candidates: worked examples from the best rollouts of other tasks, and (with --optimizer-url)
    APO critiques and rewrites; each is staged as a version and scored on the train split behind a
    `spanrl gateway --prompts` (successive halving within --budget-rollouts); the best is compared with
    the current prompt on the validation split, paired over tasks. See docs/prompts.md.
    """
    from spanrl.options import existing_data_root
    from spanrl.prompts.optimize import optimize as run

    existing_data_root(data)
    run(resolve(OptimizeConfig, {**flags, "data": data, "command": list(command)}, "prompts"))
