"""``spanrl gateway`` reads ``[gateway]`` from spanrl.toml: flag > $SPANRL_GATEWAY_TOKEN / $SPANRL_UPSTREAM_KEY >
file > default (spanrl.config.resolve)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.gateway.server import GatewayConfig

UP = "http://127.0.0.1:8000/v1"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[GatewayConfig]:
    got: list[GatewayConfig] = []
    monkeypatch.setattr("spanrl.gateway.server.run_gateway", got.append)
    for var in ("SPANRL_GATEWAY_TOKEN", "SPANRL_UPSTREAM_KEY"):
        monkeypatch.delenv(var, raising=False)
    return got


def test_a_gateway_key_changes_the_default_and_a_flag_beats_it(tmp_path: Path, started: list[GatewayConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text('[gateway]\nport = 8500\ntoken_ids = "off"\nmax_span_mib = 2\n'
                                          'capture_messages = false\nupstream_key = "file-key"\n')
    result = CliRunner().invoke(cli, ["gateway", "--data", str(tmp_path), "--upstream", UP])
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.port, cfg.token_ids, cfg.max_span_bytes, cfg.capture_messages) == (8500, "off", 2 * 1024 * 1024, False)
    assert (cfg.upstream_key, cfg.upstream_logprobs, cfg.data) == ("file-key", "auto", tmp_path)
    result = CliRunner().invoke(cli, ["gateway", "--data", str(tmp_path), "--upstream", UP, "--token-ids", "on",
                                      "--capture-messages", "--max-span-mib", "1"], env={"SPANRL_UPSTREAM_KEY": "env-key"})
    assert result.exit_code == 0, result.output
    cfg = started[-1]
    assert (cfg.port, cfg.token_ids, cfg.max_span_bytes, cfg.capture_messages) == (8500, "on", 1024 * 1024, True)
    assert cfg.upstream_key == "env-key"


def test_a_gateway_file_value_outside_the_choices_is_refused_with_its_line(tmp_path: Path,
                                                                           started: list[GatewayConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text('[gateway]\n\ntoken_ids = "sometimes"\n')
    result = CliRunner().invoke(cli, ["gateway", "--data", str(tmp_path), "--upstream", UP])
    assert result.exit_code == 2 and not started
    assert "spanrl.toml:3: token_ids = 'sometimes' in [gateway]: choose one of auto, on, off" in result.output


def test_an_unknown_gateway_key_is_refused_with_its_line(tmp_path: Path, started: list[GatewayConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text("[gateway]\nport = 8500\nallow_host = ['x']\n")
    result = CliRunner().invoke(cli, ["gateway", "--data", str(tmp_path), "--upstream", UP])
    assert result.exit_code == 2 and not started
    assert "spanrl.toml:3: unknown key 'allow_host' in [gateway] (did you mean 'allow_hosts'?)" in result.output


def test_upstream_stays_required(tmp_path: Path, started: list[GatewayConfig]) -> None:
    (tmp_path / "spanrl.toml").write_text(f"[gateway]\nupstream = '{UP}'\n")
    result = CliRunner().invoke(cli, ["gateway", "--data", str(tmp_path)])
    assert result.exit_code == 2 and "Missing option '--upstream'" in result.output and not started
