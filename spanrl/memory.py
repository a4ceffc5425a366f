"""How much memory a run's DuckDB may use: ``--memory-limit auto`` (the default) from the machine.

A fixed default fits no machine. 2GB (the default until issue 46) stopped a one-process night of 2M spans
on a 24 GiB machine with an out-of-memory error that the machine had the memory to avoid, and at 600k
spans it kept stage 2 at the limit, where DuckDB gives memory back and faults it in again (a quarter of
stage 2's CPU time was system time; README "Performance"). ``auto`` is half of the memory this process can
have (the smaller of the machine's RAM and its cgroup's limit), a share of it inside a Ray task (the
task's CPUs out of the node's, so N tasks on one node do not each take half), and never under 1 GB.
DuckDB's own default is 80 %; half leaves room for what is not DuckDB's (Python, the collector beside it).
An explicit size (``2GB``, ``512MB``, ``80%``) is used as written. A Ray task's CPUs (``task_threads``) live
here too, since its memory share follows from them (spanrl/workers.py sets them; this module imports no
other spanrl module, so the error messages can use it).
"""

from __future__ import annotations

import os
from pathlib import Path

AUTO = "auto"
AUTO_FRACTION = 0.5  # of the memory this process can have
FLOOR_MB = 1024  # below it most nights spill everything; a smaller limit is for an explicit flag
TASK_THREADS_ENV = "SPANRL_TASK_THREADS"  # set by spanrl/workers.py in each Ray task: the CPUs Ray reserved
_CGROUP_FILES = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def machine_memory() -> int:
    """Bytes of memory this process can have: the physical RAM, or its cgroup's limit where lower
    (a container's ``--memory``, a systemd ``MemoryMax``)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in _CGROUP_FILES:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:  # "max" (v2) or a huge number (v1) means none
            total = int(text)
    return total


def resolve_memory_limit(value: str) -> str:
    """The DuckDB setting for ``--memory-limit VALUE``: ``auto`` as megabytes for this process (or
    this Ray task), anything else unchanged (DuckDB checks it: ``ingest.config.check_memory_limit``)."""
    if str(value).strip().lower() != AUTO:
        return str(value)
    mb = int(machine_memory() * AUTO_FRACTION * task_share() / 2**20)
    return f"{max(mb, FLOOR_MB)}MB"


def describe_memory_limit(value: str) -> str:
    """``VALUE`` as a message shows it: ``auto`` with what it came to here."""
    resolved = resolve_memory_limit(value)
    return f"{value} (= {resolved} on this machine)" if resolved != str(value) else str(value)


def task_threads() -> int | None:
    """DuckDB's threads inside a Ray task: the CPUs Ray reserved for it. DuckDB's default (every core
    of the node) makes N tasks on one node run N x cores threads: on this 2-core machine two tasks then
    took 117.6 CPU s where one process took 76.3 for the same 600k spans (docs/scale.md). None outside a task."""
    value = os.environ.get(TASK_THREADS_ENV)
    return int(value) if value else None


def task_share() -> float:
    """The part of the node this process may take: a Ray task's CPUs out of the node's (its share of the
    node's memory under ``auto``), 1.0 outside a task."""
    threads = task_threads()
    return min(1.0, threads / (os.cpu_count() or 1)) if threads else 1.0
