"""``spanrl ui`` reads ``[ui]`` from spanrl.toml: flag > $SPANRL_UI_TOKEN > file > default (spanrl.config.resolve)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr("spanrl.ui.server.run_ui", lambda *args: calls.append(args))
    monkeypatch.delenv("SPANRL_UI_TOKEN", raising=False)
    return calls


def test_a_ui_key_changes_the_default_and_a_flag_beats_it(tmp_path: Path, started: list[tuple]) -> None:
    (tmp_path / "spanrl.toml").write_text('[ui]\nport = 9999\nallow_hosts = ["box.lan"]\ntoken = "from-file"\n')
    assert CliRunner().invoke(cli, ["ui", "--data", str(tmp_path)]).exit_code == 0
    assert started[-1] == (tmp_path, "127.0.0.1", 9999, "from-file", ("box.lan",))
    result = CliRunner().invoke(cli, ["ui", "--data", str(tmp_path), "--port", "8001", "--allow-host", "other"],
                                env={"SPANRL_UI_TOKEN": "from-env"})
    assert result.exit_code == 0, result.output
    assert started[-1] == (tmp_path, "127.0.0.1", 8001, "from-env", ("other",))


def test_an_unknown_ui_key_is_refused_with_its_line(tmp_path: Path, started: list[tuple]) -> None:
    (tmp_path / "spanrl.toml").write_text("[ui]\nport = 9999\nprot = 1\n")
    result = CliRunner().invoke(cli, ["ui", "--data", str(tmp_path)])
    assert result.exit_code == 2 and not started
    assert "spanrl.toml:3: unknown key 'prot' in [ui] (did you mean 'port'?)" in result.output


def test_config_names_another_file(tmp_path: Path, started: list[tuple]) -> None:
    (tmp_path / "ui.toml").write_text("[ui]\nhost = '0.0.0.0'\n")
    result = CliRunner().invoke(cli, ["ui", "--data", str(tmp_path), "--config", str(tmp_path / "ui.toml")])
    assert result.exit_code == 0, result.output
    assert started[-1][1] == "0.0.0.0"
