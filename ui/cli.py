"""``spanrl ui``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option


@click.command()
@data_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Bind address (without --token, anyone who reaches it reads the lake: keep it local).")
@click.option("--port", default=8765, show_default=True, type=int, help="Port (0 picks a free one; the URL is printed).")
@click.option("--token", default=None, envvar="SPANRL_UI_TOKEN",
              help="Ask the browser for this token once (then an HttpOnly cookie); API calls send "
                   "Authorization: Bearer TOKEN. Also $SPANRL_UI_TOKEN.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer to this Host name (repeatable). By default only the loopback names and the "
                   "--host address are accepted, against DNS rebinding.")
def ui(data: Path, host: str, port: int, token: str | None, allow_hosts: tuple[str, ...]) -> None:
    """Read-only web app over the data root: rollouts, one rollout's calls and rewards, tasks, snapshots,
    training cycles and a SQL box (the same guarded connection as `spanrl sql`).

    \b
    Example:
      spanrl ui --data ./spanrl-data            # then open http://127.0.0.1:8765
    """
    from spanrl.ui.server import run_ui

    run_ui(data, host, port, token or None, allow_hosts)
