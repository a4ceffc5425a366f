"""``spanrl collector`` reads ``[collector]`` from spanrl.toml: flag > $SPANRL_COLLECTOR_TOKEN > file > default.
The collector starts data roots, so its file may be ./spanrl.toml while DATA does not exist yet."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.collector.config import CollectorConfig


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[CollectorConfig]:
    got: list[CollectorConfig] = []
    monkeypatch.setattr("spanrl.collector.cli._run_embedded", lambda config, why: got.append(config))
    monkeypatch.delenv("SPANRL_COLLECTOR_TOKEN", raising=False)
    return got


def test_a_collector_key_changes_the_default_and_a_flag_beats_it(tmp_path: Path, started: list[CollectorConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text('[collector]\nhttp_port = 5000\nrotate_mb = 8\nqueue_items = 7\n'
                                          'read_timeout_s = 5\ntoken = "file"\n')
    result = CliRunner().invoke(cli, ["collector", "--data", str(tmp_path), "--embedded"])
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.http_port, cfg.grpc_port, cfg.rotate_mb, cfg.queue_items, cfg.read_timeout_s) == (5000, 4317, 8, 7, 5)
    assert (cfg.token, cfg.data_root, cfg.embedded) == ("file", tmp_path, True)
    result = CliRunner().invoke(cli, ["collector", "--data", str(tmp_path), "--embedded", "--http-port", "5001",
                                      "--read-timeout", "9"], env={"SPANRL_COLLECTOR_TOKEN": "env"})
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.http_port, cfg.rotate_mb, cfg.read_timeout_s, cfg.token) == (5001, 8, 9.0, "env")


def test_an_unknown_collector_key_is_refused_with_its_line(tmp_path: Path, started: list[CollectorConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[collector]\n# ports\nhttp_port = 5000\nhttp-port = 5001\n")
    result = CliRunner().invoke(cli, ["collector", "--data", str(tmp_path), "--embedded"])
    assert result.exit_code == 2 and not started
    assert "spanrl.toml:4: unknown key 'http-port' in [collector] (did you mean 'http_port'?)" in result.output


def test_a_new_data_root_reads_the_working_folders_file(tmp_path: Path, started: list[CollectorConfig],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "new-root"
    Path("spanrl.toml").write_text("[collector]\nrotat_mb = 8\n")
    result = CliRunner().invoke(cli, ["collector", "--data", str(root), "--embedded"])
    assert result.exit_code == 2 and "spanrl.toml:2: unknown key 'rotat_mb'" in result.output
    assert not root.exists() and not started  # refused before the root was made
    Path("spanrl.toml").write_text("[collector]\nrotate_mb = 8\n")
    result = CliRunner().invoke(cli, ["collector", "--data", str(root), "--embedded"])
    assert result.exit_code == 0, result.output
    assert root.is_dir() and started[-1].rotate_mb == 8 and started[-1].data_root == root
