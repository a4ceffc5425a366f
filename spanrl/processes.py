"""Stopping a child process group: what the demo and the rollout runner both need.

Every long-lived child (a collector, ``spanrl serve``, an agent) is started in its own session, so
the whole group (the child and anything it spawned) can be stopped together, and only that group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


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
