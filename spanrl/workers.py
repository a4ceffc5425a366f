"""Spreading a stage's independent pieces over workers: serially in this process, or as Ray tasks
(``--workers N``, docs/scale.md).

Ray is an existing distributed engine, not a home-made cluster: with ``RAY_ADDRESS`` set, the tasks
join that cluster; otherwise a local Ray with N CPUs is started for the run and stopped after it.
Each task runs the same spanrl code (the same DuckDB SQL) on its piece and returns plain values
(counts, bytes of the Parquet it wrote), so the driver never depends on a worker's disk. Ray is the
optional ``scale`` extra; without it ``--workers`` says how to install it.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from spanrl.errors import InputError, resource_trouble
from spanrl.memory import TASK_THREADS_ENV


class WorkerFailed(click.ClickException):
    """A worker died or raised: the run stops before publishing anything (exit 1)."""

    exit_code = 1

TASK_CPUS = 1  # each Ray task reserves one CPU, and its DuckDB runs that many threads

Mapper = Callable[[Callable[..., Any], Sequence[tuple[Any, ...]]], list[Any]]


def _serial(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
    return [fn(*args) for args in calls]


@contextmanager
def worker_pool(workers: int | None) -> Iterator[Mapper]:
    """A ``map(fn, [args, ...]) -> [result, ...]`` (results in call order) over ``workers`` Ray
    workers; in this process when ``workers`` is None or 1."""
    if not workers or workers <= 1:
        yield _serial
        return
    try:
        import ray
    except ImportError:
        raise InputError(f"--workers {workers} runs the stages as Ray tasks, and Ray is not installed: "
                         "pip install 'spanrl[scale]' (or leave --workers out to run in this process)") from None
    if not ray.is_initialized():  # one Ray per process: ingest's two stages share it; stopped at exit
        address = os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        else:  # a local cluster for this run only
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        atexit.register(ray.shutdown)

    def ray_map(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        task = ray.remote(num_cpus=TASK_CPUS, max_retries=0)(_in_task)
        try:
            return ray.get([task.remote(fn, *args) for args in calls])
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None)  # a RayTaskError carries the task's own exception
            if cause is not None and resource_trouble(cause):
                # the machine's trouble (out of memory under --memory-limit, a full disk): the stage's
                # own message says what to do, where "re-run" would fail the same way again
                raise cause from None
            raise WorkerFailed(f"a Ray task of {fn.__module__}.{fn.__name__} failed, so this step publishes "
                               f"nothing; re-run the command (it starts from the last published state).\n"
                               f"{str(exc).strip().splitlines()[-1][:500]}") from None

    yield ray_map


def _in_task(fn: Callable[..., Any], *args: Any) -> Any:
    """A Ray task's body: ``fn`` with DuckDB limited to the task's CPUs (``task_threads``)."""
    os.environ[TASK_THREADS_ENV] = str(TASK_CPUS)
    return fn(*args)


def split_evenly(sizes: Sequence[int], groups: int) -> list[list[int]]:
    """Indexes of ``sizes`` in ``groups`` bins of about equal total (largest first, into the lightest
    bin), each bin in index order; empty bins dropped."""
    bins: list[list[int]] = [[] for _ in range(max(groups, 1))]
    totals = [0] * len(bins)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        j = totals.index(min(totals))
        bins[j].append(i)
        totals[j] += sizes[i]
    return [sorted(b) for b in bins if b]
