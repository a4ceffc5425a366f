"""``spanrl demo`` reads ``[demo]`` from spanrl.toml: flag > file > the --quick preset > default; and the
[collector] and [serve] sections of the commands it starts are checked before it starts them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.demo.config import QUICK, DemoConfig


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[DemoConfig]:
    got: list[DemoConfig] = []

    def run_demo(cfg: DemoConfig, console: object) -> None:
        got.append(cfg)
        raise SystemExit(0)  # the config is under test, not the loop

    monkeypatch.setattr("spanrl.demo.loop.run_demo", run_demo)
    monkeypatch.chdir(tmp_path)  # no ./spanrl.toml of the checkout's
    for var in ("SPANRL_SERVE_TOKEN", "SPANRL_COLLECTOR_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return got


def _demo(data: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["demo", "--data", str(data), *args])
    return result.exit_code, result.output


def test_a_demo_key_changes_the_default_and_a_flag_beats_it(tmp_path: Path, started: list[DemoConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text('[demo]\ncycles = 3\nconcurrency = 8\ntrain_args = "--lr 1e-4"\n'
                                          'method = "sft"\n')
    assert _demo(tmp_path) == (0, "")
    cfg = started[-1]
    assert (cfg.cycles, cfg.concurrency, cfg.train_args, cfg.method, cfg.seed) == (3, 8, ["--lr", "1e-4"], "sft", 0)
    assert cfg.config_args == ["--config", str(tmp_path / "spanrl.toml")]  # what its collector, serve, ingest, train get
    assert _demo(tmp_path, "--cycles", "1", "--method", "rl", "--train-args", "--loss sft")[0] == 0
    cfg = started[-1]
    assert (cfg.cycles, cfg.concurrency, cfg.train_args, cfg.method) == (1, 8, ["--loss", "sft"], "rl")


def test_quick_is_a_preset_of_defaults_that_the_file_and_flags_beat(tmp_path: Path, started: list[DemoConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[demo]\ncycles = 3\n")
    assert _demo(tmp_path, "--quick", "--val-tasks", "8")[0] == 0
    cfg = started[-1]
    assert (cfg.cycles, cfg.val_tasks, cfg.train_tasks, cfg.method) == (3, 8, QUICK["train_tasks"], QUICK["method"])
    (tmp_path / "spanrl.toml").write_text("[demo]\nquick = true\n")
    assert _demo(tmp_path)[0] == 0
    assert (started[-1].cycles, started[-1].promote) == (QUICK["cycles"], QUICK["promote"])


def test_an_unknown_demo_key_is_refused_with_its_line(tmp_path: Path, started: list[DemoConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[demo]\ncycles = 3\n\n[demo]\n")  # a TOML error, said as such
    code, output = _demo(tmp_path)
    assert code == 2 and "not valid TOML" in output
    (tmp_path / "spanrl.toml").write_text("[demo]\ncycles = 3\ncycle = 2\n")
    code, output = _demo(tmp_path)
    assert code == 2 and not started
    assert "spanrl.toml:3: unknown key 'cycle' in [demo] (did you mean 'cycles'?)" in output


def test_the_sections_of_the_commands_it_starts_are_checked_first(tmp_path: Path, started: list[DemoConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[serve]\nmax_batch = 8\nmax_bach = 8\n")
    code, output = _demo(tmp_path)
    assert code == 2 and "spanrl.toml:3: unknown key 'max_bach' in [serve]" in output and not started
    (tmp_path / "spanrl.toml").write_text("[collector]\ntoken = 'secret'\n")
    code, output = _demo(tmp_path)
    assert code == 2 and "[collector] token" in output and "sends none" in output and not started
