"""`spanrl ui` start-up (issue 31): a taken port is refused before any preparation, and "preparing"
is said only when the start-up computes something."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.ui import server


def test_a_taken_port_is_refused_before_the_lake_is_read(ui_data: Path, monkeypatch) -> None:
    opened = []
    monkeypatch.setattr(server, "Lake", lambda data: opened.append(data))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["ui", "--data", str(ui_data), "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert "pick another --port" in result.output and "preparing" not in result.output
    assert opened == []  # refused first: no lake was read


def test_preparing_is_said_only_when_something_is_computed(ui_data: Path, tmp_path: Path) -> None:
    assert server.preparing_note(tmp_path) is None  # an empty data root: nothing to summarise
    note = server.preparing_note(ui_data)
    assert note and "summary of every rollout" in note and "no stored build" not in note
    copy = tmp_path / "no-build"
    shutil.copytree(ui_data / "lake", copy / "lake")  # a lake no build has materialised
    assert "no stored build" in server.preparing_note(copy)
