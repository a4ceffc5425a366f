"""Runs the real otelcol-contrib with otel-config.yaml when it is installed.

The config reads its paths and endpoints from the environment (``${env:SPANRL_DATA}`` and friends),
so the CLI only sets variables and execs the binary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from spanrl.errors import InputError

CONFIG_NAME = "otel-config.yaml"


def find_otelcol() -> str | None:
    """``$OTELCOL_BIN`` if set (must exist), else ``otelcol-contrib`` on PATH, else None."""
    explicit = os.environ.get("OTELCOL_BIN")
    if explicit:
        if not (Path(explicit).is_file() and os.access(explicit, os.X_OK)):
            raise InputError(f"OTELCOL_BIN={explicit} is not an executable file; fix it or unset it")
        return explicit
    return shutil.which("otelcol-contrib")


def find_config() -> Path:
    """``$SPANRL_OTEL_CONFIG``, else ./otel-config.yaml, else the one at the repository root."""
    candidates = [os.environ.get("SPANRL_OTEL_CONFIG"), CONFIG_NAME,
                  str(Path(__file__).resolve().parents[1] / CONFIG_NAME)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    raise InputError(f"{CONFIG_NAME} not found; set SPANRL_OTEL_CONFIG or run with --embedded")


def otelcol_env(data_root: Path, host: str, http_port: int, grpc_port: int, rotate_mb: float) -> dict[str, str]:
    """The variables otel-config.yaml reads."""
    env = dict(os.environ)
    env.update({
        "SPANRL_DATA": str(data_root.resolve()),
        "SPANRL_OTLP_HTTP_ENDPOINT": f"{host}:{http_port}",
        "SPANRL_OTLP_GRPC_ENDPOINT": f"{host}:{grpc_port}",
        "SPANRL_ROTATE_MB": str(max(1, round(rotate_mb))),
    })
    return env


def run_otelcol(binary: str, config: Path, env: dict[str, str]) -> int:
    """Runs the collector in the foreground and returns its exit code (signals pass through)."""
    Path(env["SPANRL_DATA"], "otel").mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([binary, "--config", str(config)], env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()
