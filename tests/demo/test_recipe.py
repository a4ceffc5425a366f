"""One training recipe: the demo's RL arms train with `spanrl train`'s defaults, so the README's
"default recipe" (the one the demo measured) and the CLI's defaults cannot drift apart again."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.cli import CONTEXT_SETTINGS
from spanrl.demo.config import METHODS
from spanrl.trainer.cli import train as train_command
from spanrl.trainer.config import make_train_config


def _resolved(args: list[str], data: Path) -> dict:
    """The config `spanrl train ARGS` would train with (through the command's own flags)."""
    # the CLI's help names: click caches a command's help option from the first context made for it, so a
    # context with click's default (--help only) would take `spanrl train -h` away from later callers
    ctx = train_command.make_context("train", [*args, "--model", str(data / "m"), "--data", str(data)],
                                     help_option_names=CONTEXT_SETTINGS["help_option_names"])
    p = {k: v for k, v in ctx.params.items() if k not in ("config_file", "notify", "no_progress", "no_promote")}
    return make_train_config(config_file=None, **p).to_dict()


@pytest.mark.parametrize("method", ["rl", "rl-no-air", "rl-discounted"])
def test_the_demo_rl_arms_train_with_the_cli_defaults(method: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./spanrl.toml of the checkout's
    monkeypatch.delenv("SPANRL_REPORT_TO", raising=False)
    assert _resolved(METHODS[method][1], tmp_path) == _resolved([], tmp_path)
