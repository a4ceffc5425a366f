"""``spanrl serve`` reads ``[serve]`` from spanrl.toml: flag > $SPANRL_SERVE_TOKEN > file > default."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.serve.server import ServeConfig


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ServeConfig]:
    got: list[ServeConfig] = []
    monkeypatch.setattr("spanrl.serve.server.run_server", got.append)
    monkeypatch.delenv("SPANRL_SERVE_TOKEN", raising=False)
    return got


def test_a_serve_key_changes_the_default_and_a_flag_beats_it(tmp_path: Path, started: list[ServeConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text('[serve]\nport = 8123\nmax_batch = 4\ncontinuous_batching = false\n'
                                          'served_model_names = ["mine", "gpt-4o-mini"]\ntoken = "file"\n')
    result = CliRunner().invoke(cli, ["serve", "--model", str(tmp_path), "--data", str(tmp_path)])
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.port, cfg.max_batch, cfg.continuous_batching, cfg.token) == (8123, 4, False, "file")
    assert (cfg.served_model_name, cfg.served_model_aliases, cfg.max_tokens) == ("mine", ("gpt-4o-mini",), 256)
    result = CliRunner().invoke(cli, ["serve", "--model", str(tmp_path), "--data", str(tmp_path), "--port", "9",
                                      "--continuous-batching", "--served-model-name", "x"], env={"SPANRL_SERVE_TOKEN": "env"})
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.port, cfg.max_batch, cfg.continuous_batching, cfg.token, cfg.served_model_names) == (9, 4, True, "env", ("x",))


def test_an_unknown_serve_key_is_refused_with_its_line(tmp_path: Path, started: list[ServeConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[train]\nlr = 1e-4\n\n[serve]\nmax_batch = 4\nmax_tokns = 9\n")
    result = CliRunner().invoke(cli, ["serve", "--model", str(tmp_path), "--data", str(tmp_path)])
    assert result.exit_code == 2 and not started
    assert "spanrl.toml:6: unknown key 'max_tokns' in [serve] (did you mean 'max_tokens'?)" in result.output


def test_the_model_flag_stays_required(tmp_path: Path, started: list[ServeConfig]) -> None:
    result = CliRunner().invoke(cli, ["serve", "--data", str(tmp_path)])
    assert result.exit_code == 2 and "Missing option '--model'" in result.output and not started
