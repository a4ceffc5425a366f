"""Free-text search over messages: a background job with progress, cancellable at any moment.

A search reads the text of every span and log record, which no index helps with here (DuckDB's
full-text extension has no wheel for this DuckDB), so it may take a while on a large lake. The job
walks the lake in ``CHUNKS`` time slices (``ui/sql/search_chunk.sql``), so progress is real (slices
done / slices), on its own guarded connection (``spanrl.query.connect`` without the stage-2 views),
and cancel interrupts the running statement (DuckDB ``interrupt()``). The page polls the job and
shows the rollouts of the matched traces once it is done.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from spanrl.query import connect
from spanrl.sqlfiles import SqlFiles

CHUNKS = 20
MAX_TRACES = 200_000  # more matches than this: the words are too common to filter by
KEEP_JOBS = 16

_SQL = SqlFiles("spanrl.ui")


@dataclass
class SearchJob:
    """One search; ``state`` running | done | cancelled | failed."""

    text: str
    version: tuple
    state: str = "running"
    done_chunks: int = 0
    chunks: int = CHUNKS
    traces: set[str] = field(default_factory=set)
    error: str = ""
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0
    _con: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def progress(self) -> float:
        return 1.0 if self.state == "done" else self.done_chunks / max(self.chunks, 1)

    def matches(self) -> pa.Table:
        return pa.table({"trace_id": pa.array(sorted(self.traces), pa.string())})

    def status(self) -> dict:
        return {"text": self.text, "state": self.state, "progress": round(self.progress, 3),
                "traces": len(self.traces), "error": self.error, "seconds": round(self.seconds, 2)}

    def cancel(self) -> None:
        self._cancel.set()
        con = self._con
        if con is not None:
            con.interrupt()

    def run(self, data: Path) -> None:
        t0 = time.perf_counter()
        try:
            self._con = connect(data, stage2=False)
            lo, hi, rows = self._con.execute(_SQL.read("search_range")).fetchone()
            needle = self.text.lower()
            if lo is None or not rows:
                self.chunks, self.state = 0, "done"
                return
            step = max(1, (hi + 1 - lo) // self.chunks + 1)
            for i in range(self.chunks):
                if self._cancel.is_set():
                    self.state = "cancelled"
                    return
                found = self._con.execute(_SQL.read("search_chunk"),
                                          {"lo": lo + i * step, "hi": lo + (i + 1) * step, "needle": needle}).fetchall()
                self.traces.update(r[0] for r in found)
                self.done_chunks = i + 1
                if len(self.traces) > MAX_TRACES:
                    self.state, self.error = "failed", (f"more than {MAX_TRACES:,} traces mention {self.text!r}; "
                                                        "search for rarer words")
                    return
            self.state = "done"
        except duckdb.InterruptException:
            self.state = "cancelled"
        except duckdb.Error as exc:
            self.state, self.error = "failed", f"search failed: {exc}"
        finally:
            self.seconds = time.perf_counter() - t0
            con, self._con = self._con, None
            if con is not None:
                con.close()


class Searches:
    """The running and finished searches of this server, by (text, lake version)."""

    def __init__(self, data: Path, chunks: int = CHUNKS) -> None:
        self.data = Path(data)
        self.chunks = chunks
        self._jobs: dict[tuple[str, tuple], SearchJob] = {}
        self._threads: list[threading.Thread] = []  # joined on shutdown (see cancel_all)
        self._lock = threading.Lock()

    def get(self, text: str, version: tuple, start: bool = True) -> SearchJob | None:
        """The job for ``text`` on this lake version; a new one is started unless ``start`` is False
        (a cancelled or failed search starts again when asked again)."""
        key = (text.strip().lower(), version)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and (job.state in ("running", "done") or not start):
                return job
            if not start:
                return None
            job = SearchJob(text.strip(), version, chunks=self.chunks)
            self._jobs[key] = job
            while len(self._jobs) > KEEP_JOBS:
                oldest = next(iter(self._jobs))
                self._jobs.pop(oldest).cancel()
        thread = threading.Thread(target=job.run, args=(self.data,), name=f"search {text[:20]!r}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return job

    def cancel_all(self, wait_s: float = 30.0) -> None:
        """Cancel every search and wait for its thread to leave DuckDB: on duckdb 2.0 a daemon thread
        still inside DuckDB when the interpreter exits aborts the whole process."""
        with self._lock:
            for job in self._jobs.values():
                job.cancel()
            threads = list(self._threads)
        for thread in threads:
            thread.join(wait_s)
