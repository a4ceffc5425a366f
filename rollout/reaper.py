"""Finding every process an attempt started, wherever it went, and stopping it.

A timeout kills the attempt's process group, but an agent's child that calls ``setsid`` (a daemon,
a browser, ``nohup``-style helpers) leaves the group and would outlive the attempt; after a kill -9
of the runner, its in-flight agents run on, and a resume would start their samples a second time
beside them. What every descendant keeps, whatever it does to its session, is the environment it
inherited: the runner tags each agent with ``SPANRL_ROLLOUT_ID`` (its attempt), ``SPANRL_RUN_ID`` and
``SPANRL_RUNNER_PID``, and this module finds processes by those tags in ``/proc/<pid>/environ``.

Linux only (``/proc``); elsewhere nothing is found and the process-group kill is all there is. A
process that clears its environment escapes (documented, not guarded against).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

from spanrl.processes import pid_alive

PROC = Path("/proc")
TAGS = ("SPANRL_ROLLOUT_ID", "SPANRL_RUN_ID", "SPANRL_RUNNER_PID")


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or not ours
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key.decode(errors="replace") in TAGS:
            out[key.decode()] = value.decode(errors="replace")
    return out


def tagged(**match: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(pid, its spanrl tags) of every process whose tags include all of ``match``."""
    if not PROC.is_dir():
        return
    me = os.getpid()
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        env = _environ(int(entry.name))
        if env and all(env.get(k) == v for k, v in match.items()):
            yield int(entry.name), env


def kill_attempt(rollout_id: str) -> int:
    """SIGKILL every process tagged with this attempt (after its group was killed): how many."""
    killed = 0
    for pid, _ in list(tagged(SPANRL_ROLLOUT_ID=rollout_id)):
        killed += _kill(pid)
    return killed


def reap_orphans(run_id: str) -> list[str]:
    """Before a resume: stop agents of ``run_id`` whose runner is dead (a kill -9 of it), so their
    samples are not run twice at once. Returns their rollout ids. Agents of a live runner are left alone."""
    stopped = []
    for pid, env in list(tagged(SPANRL_RUN_ID=run_id)):
        runner = env.get("SPANRL_RUNNER_PID", "")
        if runner.isdigit() and pid_alive(int(runner)) and int(runner) != os.getpid():
            continue
        if _kill(pid):
            stopped.append(env.get("SPANRL_ROLLOUT_ID", "?"))
    return sorted(set(stopped))


def _kill(pid: int) -> int:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return 0
    return 1
