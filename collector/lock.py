"""One collector per data root: two writers appending to the same ``traces.jsonl`` (and rotating it
under each other) would interleave lines and rename files the other still writes.

The lock is an ``flock`` on ``DATA/.collector.lock`` (beside ``otel/``, not in it: the span folder
holds span files only, and may be a mount of its own with few inodes). The
kernel drops it when the process dies, so a ``kill -9`` never leaves a stale lock behind. The file
holds the owner's pid, only to make the refusal message useful.
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
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise InputError(f"another collector (pid {owner}) is already writing {self.path.parent / 'otel'}; "
                             "stop it, or send to it (OTEL_EXPORTER_OTLP_ENDPOINT / --otlp), "
                             "or use another --data") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

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
