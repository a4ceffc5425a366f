"""``spanrl ui``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options
from spanrl.options import data_option
from spanrl.ui.config import UiConfig, make_ui_config


@click.command()
@data_option
@click_options(UiConfig, "host", "port", "token", "allow_hosts", "config_file")
def ui(data: Path, **flags: object) -> None:
    """Read-only web app over the data root: rollouts, one rollout's calls and rewards, tasks, snapshots,
    training cycles and a SQL box (the same guarded connection as `spanrl sql`).

    \b
    Example:
      spanrl ui --data ./spanrl-data            # then open http://127.0.0.1:8765
    """
    from spanrl.ui.server import run_ui

    cfg = make_ui_config(data=data, **flags)  # flags > $SPANRL_UI_TOKEN > [ui] in spanrl.toml > defaults
    run_ui(cfg.data, cfg.host, cfg.port, cfg.token, cfg.allow_hosts)
