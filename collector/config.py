"""``CollectorConfig``: what a user sets for the embedded receiver (OTel's Config, not Settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spanrl.errors import InputError

MIB = 1024 * 1024


@dataclass(frozen=True)
class CollectorConfig:
    """Every knob of the embedded receiver; defaults match otel-config.yaml where both exist."""

    data_root: Path = field(metadata={"help": "Data root; span files go to DATA/otel/."})
    host: str = field(default="127.0.0.1", metadata={"help": "Interface to bind; 0.0.0.0 exposes it."})
    http_port: int = field(default=4318, metadata={"help": "OTLP/HTTP port (0 = any free port)."})
    grpc_port: int = field(default=4317, metadata={"help": "OTLP/gRPC port (0 = any free port)."})
    rotate_mb: float = field(default=64.0, metadata={"help": "Rotate a span file once it would pass this size."})
    token: str | None = field(default=None, metadata={"help": "Bearer token required on every request."})
    fsync: bool = field(default=False, metadata={"help": "fsync before acknowledging (survives power loss)."})
    max_body_mib: float = field(default=64.0, metadata={"help": "Largest request after decompression (413 above)."})
    queue_mib: float = field(default=256.0, metadata={
        "help": "Memory budget of requests being read, decoded or waiting for the writer, counted as a "
                "multiple of their decompressed size (429 / UNAVAILABLE above; the oldest request always passes)."})
    queue_items: int = field(default=1024, metadata={"help": "Requests waiting for the writer (429 above)."})
    max_inflight: int = field(default=32, metadata={"help": "Requests decoded at once per transport (others wait)."})
    read_timeout_s: float = field(default=30.0, metadata={
        "help": "Longest time to receive one request body; slower senders get 408 / DEADLINE_EXCEEDED."})
    idle_timeout_s: float = field(default=10.0, metadata={
        "help": "Longest pause inside a request body before the sender is cut off (408 / DEADLINE_EXCEEDED)."})
    report_s: float = field(default=60.0, metadata={
        "help": "Seconds between log lines counting refused requests (0: only the line at shutdown)."})
    discard: bool = field(default=False, metadata={"help": "Parse and drop (benchmark baseline only)."})

    def __post_init__(self) -> None:
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
