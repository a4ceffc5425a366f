"""Publishing a folder atomically: the one "temp folder -> rename -> swap the pointer" helper,
and the one lock that keeps two writers of a data root's lake and snapshots apart.

Snapshots (``transitions/<id>/`` + ``transitions/LATEST``) and adapters (``adapters/<id>/`` +
``adapters/LATEST``) both appear this way, so a reader sees the old state or the new one, never a
half-written folder, and a killed writer leaves only a hidden ``.tmp-*`` folder that
``clean_drafts`` removes later.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TMP_PREFIX = ".tmp-"
TRASH_PREFIX = ".trash-"  # a published folder being deleted: hidden first, so no reader sees half of it
POINTER = "LATEST"


@dataclass
class Cleanup:
    """A retention plan for published folders (snapshots, adapters): which stay, each with why, and
    which go; ``freed`` counts the bytes of those that go (hard-linked bytes another folder keeps
    are not freed)."""

    keep: dict[str, str] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)
    freed: int = 0
    dry_run: bool = False


def fsync_path(path: Path) -> None:
    """fsync a file or a folder (a folder: so a rename or unlink inside it survives a power cut)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a sibling temp file, fsync, then ``os.replace``: readers see old or new, never half."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_pointer(root: Path) -> str | None:
    """The id ``root/LATEST`` names, or None when there is none yet."""
    path = Path(root) / POINTER
    if not path.is_file():
        return None
    return path.read_text().strip() or None


@contextmanager
def draft_folder(root: Path, name: str) -> Iterator[Path]:
    """A fresh hidden temp folder ``root/.tmp-<name>``, removed again unless ``publish`` moved it."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f"{TMP_PREFIX}{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # a no-op once published


def publish(tmp: Path, name: str, point: bool = True) -> Path:
    """Rename the complete temp folder to ``<root>/<name>``, then point ``<root>/LATEST`` at it
    (``point=False``: the folder appears, LATEST stays where it was, e.g. a candidate adapter)."""
    final = tmp.parent / name
    os.rename(tmp, final)
    if point:
        write_pointer(tmp.parent, name)
    return final


def write_pointer(root: Path, name: str) -> None:
    """Point ``root/LATEST`` at ``root/<name>`` (atomically); the folder must already be whole."""
    write_text_atomic(Path(root) / POINTER, name + "\n")


def clean_drafts(root: Path, older_than_s: float = 3600.0) -> int:
    """Remove temp folders left by a killed writer (never visible to readers anyway)."""
    removed = 0
    now = time.time()
    for tmp in Path(root).glob(f"{TMP_PREFIX}*"):
        if tmp.is_dir() and now - tmp.stat().st_mtime > older_than_s:
            shutil.rmtree(tmp, ignore_errors=True)
            removed += 1
    return removed


def discard(folder: Path) -> None:
    """Delete a published folder: one rename to a hidden ``.trash-<name>`` (readers and listings
    skip hidden names, so nobody sees a half-deleted folder), then ``rmtree``. Hard links into
    other folders (a snapshot reusing its predecessor's parts) keep those files alive there."""
    folder = Path(folder)
    trash = folder.with_name(f"{TRASH_PREFIX}{folder.name}")
    shutil.rmtree(trash, ignore_errors=True)
    os.rename(folder, trash)
    shutil.rmtree(trash)


def sweep_trash(root: Path) -> int:
    """Finish deletes a killed ``discard`` left (hidden ``.trash-*`` folders, never drafts)."""
    removed = 0
    for trash in Path(root).glob(f"{TRASH_PREFIX}*"):
        if trash.is_dir():
            shutil.rmtree(trash, ignore_errors=True)
            removed += 1
    return removed


_held: dict[tuple[str, int], int] = {}  # (lock file, thread) -> depth (flock is per open file)
_held_guard = threading.Lock()


@contextmanager
def exclusive(lock_file: Path, busy: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` for the block, or raise InputError(``busy``) at
    once when another process (or thread) holds it. Re-entrant within one thread (``spanrl ingest``
    holds it across both stages; the builder inside takes it again). The kernel drops it if the holder dies,
    so a ``kill -9`` never leaves a stale lock."""
    from spanrl.errors import InputError

    key = (str(Path(lock_file).resolve()), threading.get_ident())
    with _held_guard:
        if _held.get(key):
            _held[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held[key] -= 1
        return
    Path(lock_file).parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(busy) from None
        with _held_guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(key, None)
            fcntl.flock(fh, fcntl.LOCK_UN)
