"""One collector per data root: two writers appending to the same ``traces.jsonl`` (and rotating it
under each other) would interleave lines and rename files the other still writes.

The lock is an ``flock`` on ``DATA/.collector.lock`` (beside ``otel/``, not in it: the span folder
holds span files only, and may be a mount of its own with few inodes). The
kernel drops it when the process dies, so a ``kill -9`` never leaves a stale lock behind. The file
holds the owner's pid (for the refusal message) and, once it listens, its OTLP/HTTP URL on the
second line (``advertise``): ``spanrl rollout`` and ``spanrl eval`` beside a running gateway or
collector send their spans there instead of starting a collector of their own (``running_endpoint``).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from spanrl.errors import InputError

LOCK_NAME = ".collector.lock"


class CollectorLock:
    """Held from ``acquire`` to ``release``; a second holder (any process) is refused with a message."""

    def __init__(self, data_root: Path) -> None:
        self.path = Path(data_root) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> CollectorLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").split("\n")[0].strip() or "unknown"
            os.close(fd)
            raise InputError(f"another collector (pid {owner}) is already writing {self.path.parent / 'otel'}; "
                             "stop it, or send to it (OTEL_EXPORTER_OTLP_ENDPOINT / --otlp), "
                             "or use another --data") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def advertise(self, endpoint: str) -> None:
        """Write the holder's OTLP/HTTP URL beside its pid (read by ``running_endpoint``)."""
        if self._fd is not None:
            text = f"{os.getpid()}\n{endpoint}\n".encode()
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, text, 0)

    def release(self) -> None:
        """Safe to call twice and without ``acquire``."""
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> CollectorLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def connect_host(host: str) -> str:
    """The address a local sender reaches a collector bound to ``host`` at (a wildcard: loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host in ("::", "[::]"):
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def running_endpoint(data_root: Path) -> tuple[str, str | None] | None:
    """(pid, OTLP/HTTP URL or None when it did not say) of the process holding ``data_root``'s
    collector lock (a ``spanrl collector``, a ``spanrl gateway``'s embedded one, a rollout's); None
    when no process holds it."""
    path = Path(data_root) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            lines = os.pread(fd, 4096, 0).decode(errors="replace").split("\n")
            url = lines[1].strip() if len(lines) > 1 else ""
            return lines[0].strip() or "unknown", url if url.startswith(("http://", "https://")) else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
