"""The exporter side: one writer thread, size-rotated JSON-lines files, fsync on demand.

Why a thread: network handlers must not block on disk, and acks must wait for the bytes to be in the
OS (the durability promise). Items arrive with a ``concurrent.futures.Future`` that resolves to an
``Outcome`` once the line is written (and fsynced with ``--fsync``), so both transports ack only then.
The thread drains whatever is queued and writes it as one ``write()`` per file (group commit).
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from spanrl.publish import fsync_path


class Outcome(Enum):
    """What happened to one request; each transport maps it to its own status."""

    OK = "ok"
    BUSY = "busy"  # queue full: 429 / UNAVAILABLE, retry later
    DISK_FULL = "disk_full"  # ENOSPC: 503 / UNAVAILABLE, the receiver keeps running
    WRITE_FAILED = "write_failed"  # any other OSError: 503 / UNAVAILABLE
    INTERNAL = "internal"  # a bug: 500 / INTERNAL, counted


def backup_name(path: Path, when: datetime) -> Path:
    """lumberjack's backup name: ``traces.jsonl`` -> ``traces-2026-01-02T15-04-05.000.jsonl`` (UTC)."""
    stamp = when.strftime("%Y-%m-%dT%H-%M-%S.") + f"{when.microsecond // 1000:03d}"
    return path.with_name(f"{path.stem}-{stamp}{path.suffix}")


class RotatingFile:
    """An append-only file rotated by size like lumberjack: rotate when size + write > max.

    Unlike the collector we write the payload and its newline in one call, so a rotated file always ends
    with ``\\n``; a line bigger than the limit goes alone into a fresh file (lumberjack refuses it).
    A torn last line (kill -9 mid-write) is closed with ``\\n`` before the next write, so it never merges
    with new data.

    A full disk never stops it: when the active file cannot be opened or created (no space, no inode),
    at start or at a rotation, it stays closed and every write tries to open it again, so the writer
    recovers by itself once space is freed.
    """

    def __init__(self, path: Path, max_bytes: int, fsync: bool = False,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.fsync = fsync
        self._clock = clock
        self._fd = -1
        self._torn = False  # the file ends in a torn line: write "\n" before the next line
        self.size = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._open()
        except OSError as exc:
            if exc.errno not in _NO_SPACE:
                raise  # a wrong path or permissions: say so at start

    def _open(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._fd = fd
        self.size = os.fstat(fd).st_size
        self._torn = bool(self.size) and _last_byte(self.path) != b"\n"

    def _write_all(self, data: bytes) -> None:
        start = self.size
        try:
            if self._torn:
                self._write_raw(b"\n")
            self._write_raw(data)
        except OSError:
            self._undo(start)
            raise
        self._torn = False

    def _write_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self.size += n

    def _undo(self, size: int) -> None:
        """Cuts a partial write back off so the file never holds half a line followed by more lines."""
        try:
            os.ftruncate(self._fd, size)
            self.size = size
        except OSError:
            self.size = os.fstat(self._fd).st_size

    def rotate(self) -> Path:
        """Renames the active file to a unique backup name and starts an empty one."""
        when = self._clock()
        target = backup_name(self.path, when)
        while target.exists():  # two rotations in one millisecond: lumberjack would overwrite
            when += timedelta(milliseconds=1)
            target = backup_name(self.path, when)
        os.rename(self.path, target)  # first, so a failure leaves the active file as it was
        os.close(self._fd)
        self._fd = -1
        self._open()  # may fail (no space, no inode): the next write opens it again
        if self.fsync:
            fsync_path(self.path.parent)
        return target

    def write_lines(self, lines: list[bytes]) -> None:
        """Writes lines (each ending in ``\\n``), rotating between lines when the limit would be passed."""
        if self._fd < 0:
            self._open()
        chunk: list[bytes] = []
        chunk_size = 0
        for line in lines:
            if chunk_size + self.size + len(line) > self.max_bytes and self.size + chunk_size > 0:
                if chunk:
                    self._write_all(_joined(chunk))
                    chunk, chunk_size = [], 0
                self._sync()
                self.rotate()
            chunk.append(line)
            chunk_size += len(line)
        if chunk:
            self._write_all(_joined(chunk))
        self._sync()

    def _sync(self) -> None:
        if self.fsync and self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            self._sync()
            os.close(self._fd)
            self._fd = -1


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def _joined(lines: list[bytes]) -> bytes:
    """One buffer for one write; a single (possibly huge) line is written as it is, not copied."""
    return lines[0] if len(lines) == 1 else b"".join(lines)


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


@dataclass
class WriteItem:
    """One request on its way to disk: ``to_line`` is called on the writer thread."""

    signal: str
    request: Any
    to_line: Callable[[Any], bytes]
    size: int
    future: Future[Outcome]
    release: Callable[[], None] | None = None  # gives the request's memory back once it is answered


_STOP = object()
GROUP_MAX_ITEMS = 256
GROUP_MAX_BYTES = 4 * 1024 * 1024


class SignalWriter:
    """The writer thread: serialises queued requests and appends them to ``<signal>.jsonl``."""

    def __init__(self, otel_dir: Path, max_bytes: int, fsync: bool,
                 on_done: Callable[[WriteItem], None] = lambda item: None) -> None:
        self.files = {signal: RotatingFile(otel_dir / f"{signal}.jsonl", max_bytes, fsync)
                      for signal in ("traces", "logs")}
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._on_done = on_done
        self.errors = {"disk_full": 0, "write_failed": 0, "internal": 0}
        self._thread = threading.Thread(target=self._run, name="spanrl-writer", daemon=True)
        self._thread.start()

    def submit(self, item: WriteItem) -> None:
        self._queue.put(item)

    def close(self) -> None:
        """Writes everything already queued, then closes the files (safe to call twice)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        for f in self.files.values():
            f.close()

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            group_bytes = getattr(items[0], "size", 0)
            # group commit, capped so acks keep flowing while a backlog drains
            while len(items) < GROUP_MAX_ITEMS and group_bytes < GROUP_MAX_BYTES:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
                group_bytes += getattr(items[-1], "size", 0)
            stop = any(item is _STOP for item in items)
            batch = [item for item in items if item is not _STOP]
            try:
                self._write(batch)
            except Exception:  # a bug must not leave senders waiting forever on their acks
                self.errors["internal"] += 1
                for item in batch:
                    if not item.future.done():
                        self._finish(item, Outcome.INTERNAL)
            if stop:
                return

    def _write(self, items: list[WriteItem]) -> None:
        by_signal: dict[str, list[tuple[WriteItem, bytes]]] = {}
        for item in items:
            try:
                line = item.to_line(item.request)
                item.request = None  # the message can go as soon as its line exists (big batches)
                if not line.endswith(b"\n"):
                    line += b"\n"
                by_signal.setdefault(item.signal, []).append((item, line))
            except Exception:  # a serialiser bug must not kill the thread
                self.errors["internal"] += 1
                self._finish(item, Outcome.INTERNAL)
        for signal, pairs in by_signal.items():
            outcome = Outcome.OK
            try:
                self.files[signal].write_lines([line for _, line in pairs])
            except OSError as exc:
                outcome = Outcome.DISK_FULL if exc.errno == errno.ENOSPC else Outcome.WRITE_FAILED
                self.errors[outcome.value] += 1
            for item, _ in pairs:
                self._finish(item, outcome)

    def _finish(self, item: WriteItem, outcome: Outcome) -> None:
        self._on_done(item)
        if not item.future.done():
            item.future.set_result(outcome)
