"""Stopping a child process group: what the demo and the rollout runner both need.

Every long-lived child (a collector, ``spanrl serve``, an agent) is started in its own session, so
the whole group (the child and anything it spawned) can be stopped together, and only that group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

PROC = Path("/proc")


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process on this machine: a zombie (exited, not yet reaped) is
    not; a pid we may not signal is; so is a pid <= 0, which names no single process."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return (PROC / str(pid) / "stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def stop_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM the group we started, then SIGKILL after ``grace_s`` (never another process)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_until_signalled(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``main()`` on a new event loop until it returns, or SIGINT/SIGTERM cancels it: a clean stop
    (its ``finally`` blocks run), which the servers (``spanrl serve``, ``spanrl gateway``) rely on to
    flush their spans and stop their embedded collector."""
    import asyncio

    loop = asyncio.new_event_loop()
    task = loop.create_task(main())
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        pass
    finally:
        loop.close()
