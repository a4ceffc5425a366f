"""otel-config.yaml for the real otelcol-contrib, and how `spanrl collector` picks what to run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from spanrl.collector.otelcol import otelcol_env

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "otel-config.yaml"
ENV_REF = re.compile(r"\$\{env:([A-Z_]+)(?::-([^}]*))?\}")


def load() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def expand(value: str, env: dict[str, str]) -> str:
    """The collector's ``${env:NAME:-default}`` expansion."""
    return ENV_REF.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)


def test_structure() -> None:
    cfg = load()
    protocols = cfg["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["max_recv_msg_size_mib"] == 64
    assert protocols["http"]["max_request_body_size"] == 64 * 1024 * 1024
    assert expand(protocols["grpc"]["endpoint"], {}) == "127.0.0.1:4317"  # loopback by default
    assert expand(protocols["http"]["endpoint"], {}) == "127.0.0.1:4318"
    assert set(cfg["processors"]) == {"memory_limiter", "batch"}
    for signal_name in ("traces", "logs"):
        exporter = cfg["exporters"][f"file/{signal_name}"]
        assert exporter["format"] == "json" and "rotation" in exporter and "append" not in exporter
        assert "${env:SPANRL_DATA" in exporter["path"]
        pipe = cfg["service"]["pipelines"][signal_name]
        assert pipe == {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"],
                        "exporters": [f"file/{signal_name}"]}
    assert "nop" in cfg["exporters"] and cfg["service"]["pipelines"]["metrics"]["exporters"] == ["nop"]


def test_paths_match_the_embedded_receiver(tmp_path: Path) -> None:
    env = otelcol_env(tmp_path, "127.0.0.1", 14318, 14317, 0.5)
    cfg = load()
    assert Path(expand(cfg["exporters"]["file/traces"]["path"], env)) == tmp_path.resolve() / "otel" / "traces.jsonl"
    assert Path(expand(cfg["exporters"]["file/logs"]["path"], env)) == tmp_path.resolve() / "otel" / "logs.jsonl"
    assert expand(cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"], env) == "127.0.0.1:14318"
    assert int(expand(str(cfg["exporters"]["file/traces"]["rotation"]["max_megabytes"]), env)) == 1


def test_every_setting_is_commented() -> None:
    for n, line in enumerate(CONFIG.read_text().splitlines(), 1):
        code = line.split(" #")[0]
        if re.match(r"^\s*[\w/.-]+:\s*\S", code) or line.strip().startswith("nop:"):
            assert " # " in line, f"otel-config.yaml:{n} has no comment: {line.strip()}"


@pytest.mark.skipif(shutil.which("otelcol-contrib") is None,
                    reason="otelcol-contrib is not on PATH (it cannot be downloaded on these machines)")
def test_otelcol_contrib_validates_the_config(tmp_path: Path) -> None:
    env = otelcol_env(tmp_path, "127.0.0.1", 4318, 4317, 64)
    result = subprocess.run(["otelcol-contrib", "validate", "--config", str(CONFIG)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def fake_otelcol(tmp_path: Path) -> Path:
    script = tmp_path / "fake-otelcol"
    script.write_text("#!/bin/sh\n"
                      f'echo "$@" > "{tmp_path}/args.txt"\n'
                      f'env | grep ^SPANRL_ | sort > "{tmp_path}/env.txt"\n'
                      "exit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def spanrl(*args: str, env: dict[str, str], cwd: Path = ROOT, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spanrl", "collector", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_runs_otelcol_contrib_from_otelcol_bin(tmp_path: Path) -> None:
    env = {**os.environ, "OTELCOL_BIN": str(fake_otelcol(tmp_path))}
    result = spanrl("--data", str(tmp_path / "d"), "--http-port", "14318", env=env)
    assert result.returncode == 0, result.stderr
    assert "running" in result.stderr and "fake-otelcol" in result.stderr
    assert (tmp_path / "args.txt").read_text().split() == ["--config", str(CONFIG)]
    env_lines = (tmp_path / "env.txt").read_text().splitlines()
    assert f"SPANRL_DATA={(tmp_path / 'd').resolve()}" in env_lines
    assert "SPANRL_OTLP_HTTP_ENDPOINT=127.0.0.1:14318" in env_lines
    assert (tmp_path / "d" / "otel").is_dir()


def test_bad_otelcol_bin_and_unsupported_flags_exit_2(tmp_path: Path) -> None:
    missing = spanrl("--data", str(tmp_path), env={**os.environ, "OTELCOL_BIN": str(tmp_path / "nope")})
    assert missing.returncode == 2 and "OTELCOL_BIN" in missing.stderr
    token = spanrl("--data", str(tmp_path), "--token", "x",
                   env={**os.environ, "OTELCOL_BIN": str(fake_otelcol(tmp_path))})
    assert token.returncode == 2 and "--embedded" in token.stderr
    bad = spanrl("--embedded", "--data", str(tmp_path), "--rotate-mb", "0", env=dict(os.environ))
    assert bad.returncode == 2 and "--rotate-mb" in bad.stderr


def test_falls_back_to_embedded_and_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OTELCOL_BIN"}
    env["PATH"] = str(tmp_path)  # no otelcol-contrib here
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "spanrl", "collector", "--data", str(tmp_path / "d"),
                                 "--http-port", "0", "--grpc-port", "0"], env=env, stdout=f,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "ready" not in out.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    text = out.read_text()
    assert "(embedded receiver; otelcol-contrib not found)" in text, text
    assert "stopped" in text and proc.returncode == 0


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = spanrl("--embedded", "--data", str(tmp_path), "--http-port", str(port), "--grpc-port", "0",
                        env=dict(os.environ))
    assert result.returncode == 2 and "--http-port" in result.stderr
