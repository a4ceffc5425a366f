"""The lake's file-level primitives: its writer lock, its Parquet options, and what lake
housekeeping (``spanrl lake compact``, ``spanrl lake prune``) is built from, so that a ``kill -9``
at any point loses no row and the next run finishes the job.

Each housekeeping step follows one pattern: write the new state where no reader looks (a ``.tmp``
file, ``lake/_trash/``), fsync it, write an *intent* (``lake/_compacting.json``,
``lake/_pruning.json``) that says what is about to change, make the change visible with one
``rename``, append the outcome to the lake's journal (``_compacted.jsonl``, ``_pruned.jsonl``), and
only then delete what it replaced and drop the intent. ``finish_interrupted`` reads a leftover intent
and completes (or, when the rename never happened, rolls back) that step (``repair.py``); stage 1 and
the housekeeping commands call it under the lake lock before they change anything.

Test-only: ``SPANRL_TEST_CRASH_AT=<point>`` makes a housekeeping run ``os._exit(137)`` at a named point
(the builder's hook, same variable). Never set it outside tests.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spanrl.layout import read_jsonl  # noqa: F401  (re-exported: the journals' reader, shared by all stages)
from spanrl.publish import exclusive, fsync_path, write_text_atomic

# zstd at level 1, not its default 3: writing 600k spans takes 1.17-1.22 instead of 1.33-1.43 CPU s, for
# 16 instead of 15 MB (one-off measurement, 2026-11-27)
PARQUET_OPTIONS = "FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 20480"  # every lake file is written so
CRASH_ENV = "SPANRL_TEST_CRASH_AT"
HOLD_ENV = "SPANRL_TEST_HOLD_AT"  # "<point>:<file>": wait at <point> until <file> exists (tests only)
TABLES = ("spans", "logs")  # the date-partitioned lake tables housekeeping works on


def lake_lock(lake: Path) -> AbstractContextManager[None]:
    """One writer per lake at a time: a stage-1 run (two would read the same new bytes twice), a
    snapshot build (it would read a lake half published) or lake housekeeping. ``spanrl ingest``
    holds it across both stages; a second writer is refused at once (exit 2) rather than queued
    behind a long run."""
    return exclusive(lake / ".ingest.lock", f"another `spanrl ingest` or `spanrl transitions build` is writing "
                                            f"{lake}; wait for it to finish and run again")


def crash_point(point: str) -> None:
    """Die like ``kill -9`` here when a test asked for it (``SPANRL_TEST_CRASH_AT=<point>``), or wait
    here until a file exists (``SPANRL_TEST_HOLD_AT=<point>:<file>``: a real writer holding its lock)."""
    if os.environ.get(CRASH_ENV) == point:
        os._exit(137)
    hold = os.environ.get(HOLD_ENV, "")
    if hold.startswith(point + ":"):
        release = Path(hold.split(":", 1)[1])
        print(f"holding at {point}", file=sys.stderr, flush=True)
        while not release.exists():
            time.sleep(0.05)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and fsync. A torn last line (a crash mid-append) is closed off with a
    newline first, so it stays one unreadable line that ``read_jsonl`` skips, not a merged one."""
    with open(path, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
        fh.write((json.dumps(record, sort_keys=True) + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())


def write_intent(path: Path, intent: dict[str, Any]) -> None:
    """The intent file, whole or absent (temp file, fsync, rename), and its folder fsynced."""
    write_text_atomic(path, json.dumps(intent, indent=1, sort_keys=True))
    fsync_path(path.parent)


def read_intent(path: Path) -> dict[str, Any] | None:
    """A leftover intent, or None. One that cannot be read was never complete (it is written by
    rename), so nothing it describes has happened yet: it is removed and None returned."""
    if not path.is_file():
        return None
    try:
        intent = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        path.unlink(missing_ok=True)
        return None
    return intent if isinstance(intent, dict) else None


def drop_intent(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_path(path.parent)


def relative(lake: Path, path: Path) -> str:
    """A lake file as the journals name it: relative to ``lake/`` (``spans/date=.../part-X.parquet``)."""
    return path.relative_to(lake).as_posix()

