"""Dynamic batching and adapter hot reload: the single worker thread that owns the model.

Requests arrive from the event loop as ``Job``s. The worker takes the first waiting job, keeps
collecting for up to ``batch_wait`` seconds (or until ``max_batch`` rows), groups the jobs by the
adapter they asked for, and runs one ``Engine.generate`` per group. Each job is answered as soon as
its own rows end; with ``continuous`` batching, jobs that arrive meanwhile (same adapter, rows
free) join the running batch between decode steps instead of waiting for it. Between batches (and every
``idle_poll`` seconds when idle) it asks the ``AdapterWatcher`` whether ``adapters/LATEST`` moved and
loads the new adapter *there*, on the same thread: no request is ever in flight during a swap, none
is dropped, and each job records the adapter version that actually produced it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl.serve.engine import Engine, Sequence
from spanrl.trainer.adapter import latest_adapter

log = logging.getLogger("spanrl.serve")

DEFAULT = object()  # a job that follows the server's current default adapter


@dataclass
class Job:
    """One API request: its choices (n rows) and where to put the result."""

    seqs: list[Sequence]
    adapter: Any = DEFAULT  # DEFAULT, None (base) or a named adapter id
    future: Future = field(default_factory=Future)
    adapter_used: str | None = None  # filled by the worker: adapter id, or None for the base model


@dataclass
class Control:
    """Work that must run on the model thread between batches (load/unload an adapter)."""

    action: Callable[[], Any]
    future: Future = field(default_factory=Future)


class AdapterWatcher:
    """Decides the default adapter: none, a fixed folder, or whatever ``LATEST`` names.

    ``poll`` is cheap (one small file read) and runs on the worker thread between batches.
    A folder that fails to load is logged and skipped until ``LATEST`` changes again, so a bad
    adapter never takes the server down; the previous one keeps serving.
    """

    def __init__(self, engine: Engine, adapters_root: Path | None = None, fixed: Path | None = None) -> None:
        self.engine = engine
        self.adapters_root = adapters_root  # follow its LATEST pointer (trainer.adapter owns the format)
        self.fixed = fixed
        self.current: str | None = None
        self.loads = 0
        self.errors = 0
        self.last_error: str | None = None
        self._seen: str | None = None

    def poll(self) -> None:
        if self.fixed is not None:
            if self._seen is None:
                self._seen = self.fixed.name
                self._load(self.fixed.name, self.fixed)
            return
        if self.adapters_root is None:
            return
        folder = latest_adapter(self.adapters_root)
        if folder is None or folder.name == self._seen:
            return
        self._seen = folder.name
        self._load(folder.name, folder)

    def pending_change(self) -> bool:
        """True when ``LATEST`` names an adapter not yet tried (one small file read)."""
        if self.fixed is not None or self.adapters_root is None:
            return False
        folder = latest_adapter(self.adapters_root)
        return folder is not None and folder.name != self._seen

    def _load(self, adapter_id: str, folder: Path) -> None:
        previous = self.current
        try:
            self.engine.load_adapter(adapter_id, folder)
        except Exception as exc:  # a bad folder must not stop serving
            self.errors += 1
            self.last_error = f"{folder}: {exc}"
            log.error("adapter %s not loaded (still serving %s): %s", adapter_id, previous or "base", exc)
            return
        self.current = adapter_id
        self.loads += 1
        if previous and previous != adapter_id and previous in self.engine.loaded:
            self.engine.unload_adapter(previous)
        log.info("serving adapter %s", adapter_id)


class Batcher:
    """The worker thread: batches jobs, runs control actions, polls the adapter watcher."""

    def __init__(self, engine: Engine, watcher: AdapterWatcher, max_batch: int = 16,
                 batch_wait: float = 0.01, idle_poll: float = 0.5, continuous: bool = False) -> None:
        self.engine = engine
        self.watcher = watcher
        self.max_batch = max(1, max_batch)
        self.batch_wait = max(0.0, batch_wait)
        self.idle_poll = idle_poll
        self.continuous = continuous
        self.inbox: queue.Queue[Job | Control | None] = queue.Queue()
        self._pending: deque[Job | Control | None] = deque()  # taken from the inbox but not run yet
        self.generate_calls = 0
        self.admitted_rows = 0
        self.batch_sizes: Counter[int] = Counter()
        self.rows = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="spanrl-serve-model", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.inbox.put(None)
        self._thread.join(timeout=30)

    def submit(self, item: Job | Control) -> Future:
        self.inbox.put(item)
        return item.future

    def stats(self) -> dict[str, Any]:
        return {
            "generate_calls": self.generate_calls,
            "rows_generated": self.rows,
            "batch_sizes": {str(k): v for k, v in sorted(self.batch_sizes.items())},
            "max_batch_size": max(self.batch_sizes, default=0),
            "admitted_rows": self.admitted_rows,
            "continuous_batching": self.continuous,
            "failed_batches": self.failed,
            "queued": self.inbox.qsize() + len(self._pending),
        }

    # ----------------------------------------------------------------- worker
    def _run(self) -> None:
        self._safe_poll()
        while True:
            try:
                first = self._next(self.idle_poll)
            except queue.Empty:
                self._safe_poll()
                continue
            if first is None:
                return
            jobs, controls, stop = self._collect(first)
            try:
                for control in controls:
                    self._run_control(control)
                self._safe_poll()
                self._run_jobs(jobs)
            except Exception:  # the model thread must never die: that would hang every request
                log.exception("serving loop error")
            if stop:
                return

    def _next(self, timeout: float) -> Job | Control | None:
        """The oldest waiting item: first what an admission round put back, then the inbox."""
        if self._pending:
            return self._pending.popleft()
        return self.inbox.get(timeout=timeout) if timeout > 0 else self.inbox.get_nowait()

    def _collect(self, first: Job | Control) -> tuple[list[Job], list[Control], bool]:
        jobs: list[Job] = []
        controls: list[Control] = []
        item: Job | Control | None = first
        deadline = time.monotonic() + self.batch_wait
        while True:
            if isinstance(item, Control):
                controls.append(item)
            elif isinstance(item, Job):
                jobs.append(item)
            if sum(len(j.seqs) for j in jobs) >= self.max_batch:
                return jobs, controls, False
            remaining = deadline - time.monotonic()
            try:
                item = self._next(remaining)
            except queue.Empty:
                return jobs, controls, False
            if item is None:
                return jobs, controls, True

    def _run_control(self, control: Control) -> None:
        if not control.future.set_running_or_notify_cancel():
            return
        try:
            control.future.set_result(control.action())
        except Exception as exc:
            control.future.set_exception(exc)

    def _safe_poll(self) -> None:
        try:
            self.watcher.poll()
        except Exception as exc:  # never let the watcher kill the worker
            log.error("adapter watcher failed: %s", exc)

    def _run_jobs(self, jobs: list[Job]) -> None:
        groups: dict[str | None, list[Job]] = {}
        for job in jobs:
            if not job.future.set_running_or_notify_cancel():  # the client went away: skip the work
                continue
            adapter = self.watcher.current if job.adapter is DEFAULT else job.adapter
            if adapter is not None and adapter not in self.engine.loaded:
                job.future.set_exception(KeyError(f"adapter {adapter!r} is not loaded"))
                continue
            job.adapter_used = adapter
            groups.setdefault(adapter, []).append(job)
        for adapter, group in groups.items():
            for chunk in _chunks(group, self.max_batch):
                self._generate(adapter, chunk)

    def _generate(self, adapter: str | None, jobs: list[Job]) -> None:
        """One engine call; each job is answered as soon as all its rows are done."""
        owner: dict[int, Job] = {}
        left: dict[int, int] = {}

        def track(job: Job) -> None:
            left[id(job)] = len(job.seqs)
            owner.update((id(seq), job) for seq in job.seqs)

        def on_finish(seq: Sequence) -> None:
            job = owner.pop(id(seq), None)
            if job is not None:
                left[id(job)] -= 1
                if left[id(job)] == 0 and not job.future.done():
                    job.future.set_result(job)

        admitted: list[Job] = []

        def admit(live_rows: int) -> list[Sequence]:
            new = self._admit(adapter, self.max_batch - live_rows)
            for job in new:
                track(job)
            admitted.extend(new)
            rows = sum(len(job.seqs) for job in new)
            self.admitted_rows += rows
            self.rows += rows
            return [seq for job in new for seq in job.seqs]

        for job in jobs:
            track(job)
        seqs = [s for job in jobs for s in job.seqs]
        self.generate_calls += 1  # counted up front: with early answers a client may look before we return
        self.batch_sizes[len(seqs)] += 1
        self.rows += len(seqs)
        try:
            self.engine.generate(seqs, adapter, admit=admit if self.continuous else None, on_finish=on_finish)
        except Exception as exc:
            self.failed += 1
            log.exception("generate failed for a batch of %d rows", len(seqs))
            for job in jobs + admitted:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        for job in jobs + admitted:  # rows the engine never reported (e.g. a stand-in engine)
            if not job.future.done():
                job.future.set_result(job)

    def _admit(self, adapter: str | None, free_rows: int) -> list[Job]:
        """Continuous batching: waiting jobs for the same adapter that fit, in arrival order.

        Stops at the first item that cannot join (a control action, another adapter, too many
        rows, shutdown) and puts it back, so order is kept; admits nothing while adapters/LATEST
        names a new adapter, so the running batch drains and the swap happens promptly.
        """
        if self.watcher.pending_change():
            return []
        out: list[Job] = []
        while free_rows > 0:
            try:
                item = self._next(0)
            except queue.Empty:
                break
            wanted = (self.watcher.current if item.adapter is DEFAULT else item.adapter) if isinstance(item, Job) else None
            if not isinstance(item, Job) or wanted != adapter or len(item.seqs) > free_rows:
                self._pending.appendleft(item)
                break
            if not item.future.set_running_or_notify_cancel():
                continue  # cancelled while waiting
            item.adapter_used = adapter
            out.append(item)
            free_rows -= len(item.seqs)
        return out


def _chunks(jobs: list[Job], max_rows: int) -> list[list[Job]]:
    """Split jobs into chunks of at most ``max_rows`` rows (a job with n > max_rows goes alone)."""
    chunks: list[list[Job]] = [[]]
    rows = 0
    for job in jobs:
        if chunks[-1] and rows + len(job.seqs) > max_rows:
            chunks.append([])
            rows = 0
        chunks[-1].append(job)
        rows += len(job.seqs)
    return [c for c in chunks if c]
