"""What ``spanrl ui`` users set: ``UiConfig``, every field a ``spanrl.config.knob`` (the flags are
generated from them). Values come from flags, then ``$SPANRL_UI_TOKEN`` (the token), then the ``[ui]``
section of ``spanrl.toml``, then these defaults (``spanrl.config.resolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import knob, resolve
from spanrl.errors import InputError
from spanrl.options import DEFAULT_DATA


@dataclass
class UiConfig:
    """The web app's address and who may read it."""

    data: Path = knob(Path(DEFAULT_DATA), "Data root.")
    config_file: Path | None = knob(None, "spanrl.toml with a [ui] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    host: str = knob("127.0.0.1", "Bind address (without --token, anyone who reaches it reads the lake: keep it local).")
    port: int = knob(8765, "Port (0 picks a free one; the URL is printed).")
    token: str | None = knob(None, "Ask the browser for this token once (then an HttpOnly cookie); API calls send "
                             "Authorization: Bearer TOKEN. Also $SPANRL_UI_TOKEN.", env="SPANRL_UI_TOKEN")
    allow_hosts: tuple[str, ...] = knob((), "Also answer to this Host name (repeatable). By default only the loopback "
                                        "names and the --host address are accepted, against DNS rebinding.",
                                        flag="--allow-host", multiple=True, metavar="NAME", show=False)

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        self.token = self.token or None  # an empty token is no token
        self.allow_hosts = (self.allow_hosts,) if isinstance(self.allow_hosts, str) else tuple(self.allow_hosts)
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise InputError(f"--port must be a whole number in 0..65535, got {self.port!r}")


def make_ui_config(**flags: Any) -> UiConfig:
    """Flags (None: not given) > $SPANRL_UI_TOKEN > [ui] in spanrl.toml > the field defaults."""
    return resolve(UiConfig, flags, "ui")
