"""A real, small file system for disk-full tests: a tmpfs mounted for one test (root only: the test is
skipped elsewhere), and a filler that takes its last byte."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """``folder`` as a tmpfs mounted with ``options`` (e.g. ``size=1m``) for the ``with`` block."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(path: Path) -> None:
    """Writes zeros into ``path`` until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
