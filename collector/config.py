"""``CollectorConfig``: what a user sets for ``spanrl collector`` (OTel's Config, not Settings). Every
field is a ``spanrl.config.knob``: the flags are generated from them, and values come from flags, then
``$SPANRL_COLLECTOR_TOKEN`` (the token), then the ``[collector]`` section of ``spanrl.toml``, then these
defaults (``make_collector_config``). The rollout runner and the gateway build one directly for their
embedded receivers (defaults, free ports)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import knob, resolve
from spanrl.errors import InputError

MIB = 1024 * 1024


@dataclass(frozen=True)
class CollectorConfig:
    """Every knob of the collector; defaults match otel-config.yaml where both exist."""

    data_root: Path = knob(help="Data root; span files go to DATA/otel/.")
    config_file: Path | None = knob(None, "spanrl.toml with a [collector] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    embedded: bool = knob(False, "Use the embedded receiver even when otelcol-contrib is installed.")
    host: str = knob("127.0.0.1", "Interface to bind (0.0.0.0 exposes it).")
    http_port: int = knob(4318, "OTLP/HTTP port (0 = any free port).")
    grpc_port: int = knob(4317, "OTLP/gRPC port (0 = any free port).")
    rotate_mb: float = knob(64.0, "Rotate span files at this size.")
    token: str | None = knob(None, "Require 'Authorization: Bearer TOKEN'.", env="SPANRL_COLLECTOR_TOKEN")
    fsync: bool = knob(False, "fsync each batch before acknowledging it (durable on power loss).")
    max_body_mib: float = knob(64.0, "Largest request after decompression (413 above).", flag="--max-body-mb")
    queue_mib: float = knob(256.0, "Memory budget of requests being read, decoded or queued, counted as a multiple "
                            "of their decompressed size (429 / UNAVAILABLE above; the oldest request always passes).",
                            flag="--memory-mb")
    queue_items: int = knob(1024, "Requests waiting for the writer (429 above); spanrl.toml only.")
    max_inflight: int = knob(32, "Requests decoded at once per transport (others wait); spanrl.toml only.")
    read_timeout_s: float = knob(30.0, "Seconds to receive one request body; slower senders get 408 (gRPC: "
                                 "DEADLINE_EXCEEDED).", flag="--read-timeout")
    idle_timeout_s: float = knob(10.0, "Longest pause inside a request body before the sender is cut off (408 / "
                                 "DEADLINE_EXCEEDED).", flag="--idle-timeout")
    report_s: float = knob(60.0, "Seconds between log lines counting refused requests (0: only at shutdown).",
                           flag="--report-interval")
    discard: bool = knob(False, "Parse and drop everything (benchmark baseline).", hidden=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_root", Path(self.data_root))
        if self.rotate_mb <= 0:
            raise InputError(f"--rotate-mb must be positive, got {self.rotate_mb}; try 64")
        if min(self.max_body_mib, self.queue_mib, self.queue_items, self.max_inflight) <= 0:
            raise InputError("body and queue limits must be positive")
        if min(self.read_timeout_s, self.idle_timeout_s) <= 0 or self.report_s < 0:
            raise InputError(f"timeouts must be positive and --report-interval >= 0, got read "
                             f"{self.read_timeout_s}, idle {self.idle_timeout_s}, report {self.report_s}")
        for name in ("http_port", "grpc_port"):
            port = getattr(self, name)
            if not 0 <= port <= 65535:
                raise InputError(f"--{name.replace('_', '-')} must be 0..65535, got {port}")
        if self.token is not None and not self.token.strip():
            raise InputError("--token is empty; give a non-empty token or leave it out")

    @property
    def otel_dir(self) -> Path:
        """Where ``traces.jsonl`` and ``logs.jsonl`` live (docs/architecture.md)."""
        return self.data_root / "otel"

    @property
    def rotate_bytes(self) -> int:
        return max(1, int(self.rotate_mb * MIB))

    @property
    def max_body_bytes(self) -> int:
        return max(1, int(self.max_body_mib * MIB))

    @property
    def queue_bytes(self) -> int:
        return max(1, int(self.queue_mib * MIB))


def make_collector_config(data: Path, **flags: Any) -> CollectorConfig:
    """Flags (None: not given) > $SPANRL_COLLECTOR_TOKEN > [collector] in spanrl.toml > the field defaults.
    ``data`` need not exist yet (the collector starts a data root): the file is then ./spanrl.toml, if any."""
    return resolve(CollectorConfig, {**flags, "data": data, "data_root": data}, "collector")
