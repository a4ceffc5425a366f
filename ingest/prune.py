"""Lake retention: ``spanrl lake prune --keep-days N`` and ``spanrl ingest --keep-days N``.

Drops the date partitions (``lake/spans/date=D/``, ``lake/logs/date=D/``) with D older than the
newest date partition in the lake minus N days. The reference is *data time* (the newest partition),
not the wall clock, so re-running gives the same answer and a lake that stopped receiving data is
not emptied by the calendar. Snapshots are never touched: each holds its own Parquet rows.

Crash safety follows ``lakeio``: the intent ``lake/_pruning.json`` lists the partitions, each is
renamed into ``lake/_trash/<run>/`` (one rename: readers see all of a partition or none of it),
``lake/_pruned.jsonl`` gets ``{"dropped": [files], "older_than": D, "at"}``, then the trash is
deleted and the intent dropped. The next housekeeping run or ingest finishes an interrupted prune.

Test-only crash points (``SPANRL_TEST_CRASH_AT``): ``prune_intent``, ``prune_moved`` (after the
first partition moved), ``prune_recorded``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.ingest.lakeio import (
    TABLES,
    append_jsonl,
    crash_point,
    drop_intent,
    now_iso,
    read_intent,
    read_jsonl,
    relative,
    write_intent,
)
from spanrl.publish import fsync_path

JOURNAL = "_pruned.jsonl"
INTENT = "_pruning.json"
TRASH = "_trash"


@dataclass
class PruneSummary:
    """What a prune dropped (or, in a dry run, would drop)."""

    keep_days: int
    dry_run: bool
    newest: date | None = None
    older_than: date | None = None
    partitions: list[str] = field(default_factory=list)  # relative to lake/: spans/date=...
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    repaired: list[str] = field(default_factory=list)
    seconds: float = 0.0


def plan_prune(lake: Path, summary: PruneSummary) -> list[Path]:
    """Fill ``summary`` (newest partition, cut-off, what goes) and return the partition folders to drop."""
    summary.newest = newest_date(lake)
    if summary.newest is None:
        return []
    summary.older_than = summary.newest - timedelta(days=summary.keep_days)
    folders = [f for table in TABLES for f in _partitions(lake, table) if _date_of(f) < summary.older_than]
    files = [p for f in folders for p in sorted(f.rglob("*")) if p.is_file()]
    summary.partitions = [relative(lake, f) for f in folders]
    summary.files = [relative(lake, p) for p in files]
    summary.bytes = sum(p.stat().st_size for p in files)
    return folders


def newest_date(lake: Path) -> date | None:
    """The newest date partition of spans and logs holding a Parquet file (None: an empty lake)."""
    dates = [_date_of(f) for table in TABLES for f in _partitions(lake, table) if any(f.glob("*.parquet"))]
    return max(dates, default=None)


def _partitions(lake: Path, table: str) -> list[Path]:
    """The ``date=YYYY-MM-DD`` folders of one table (anything else under it is not ours to drop)."""
    out = []
    for folder in sorted((lake / table).glob("date=*")):
        try:
            date.fromisoformat(folder.name.removeprefix("date="))
        except ValueError:
            continue
        if folder.is_dir():
            out.append(folder)
    return out


def _date_of(folder: Path) -> date:
    return date.fromisoformat(folder.name.removeprefix("date="))


def drop_partitions(lake: Path, summary: PruneSummary) -> None:
    """Drop what ``plan_prune`` chose: intent, move to the trash, journal, delete (module docstring)."""
    intent = {"partitions": summary.partitions, "dropped": summary.files, "older_than": summary.older_than.isoformat(),
              "trash": f"{TRASH}/{uuid.uuid4().hex}", "at": now_iso()}
    write_intent(lake / INTENT, intent)
    crash_point("prune_intent")
    _finish(lake, intent, recorded=False)


def _finish(lake: Path, intent: dict[str, Any], recorded: bool) -> None:
    """Move every listed partition still in place into the trash, journal the prune (unless
    ``recorded``), delete the trash, drop the intent. Safe to run again after a crash anywhere."""
    trash = lake / intent["trash"]
    for i, rel in enumerate(intent["partitions"]):
        folder = lake / rel
        if folder.parent.parent != lake or folder.parent.name not in TABLES or not folder.name.startswith("date="):
            raise InputError(f"{lake / INTENT}: names {rel!r}, not a date partition of the lake; remove it by hand")
        if folder.is_dir():
            (trash / folder.parent.name).mkdir(parents=True, exist_ok=True)
            os.rename(folder, trash / folder.parent.name / folder.name)
            fsync_path(folder.parent)
        if i == 0:
            crash_point("prune_moved")
    if not recorded:
        append_jsonl(lake / JOURNAL, {k: intent[k] for k in ("dropped", "older_than", "at")})
    crash_point("prune_recorded")
    shutil.rmtree(lake / TRASH, ignore_errors=True)  # only a prune puts anything there, and one runs at a time
    drop_intent(lake / INTENT)


def finish_prune(lake: Path) -> list[str]:
    """Finish a prune a crash interrupted (it was decided under the lock; completing it is what was
    asked), and delete trash a finished prune left behind."""
    lines = []
    intent = read_intent(lake / INTENT)
    if intent is not None:
        done = any(r.get("at") == intent["at"] and r.get("dropped") == intent["dropped"]
                   for r in read_jsonl(lake / JOURNAL))
        _finish(lake, intent, recorded=done)
        lines.append(f"finished an interrupted prune: {len(intent['partitions'])} partition(s) older than "
                     f"{intent['older_than']} dropped")
    if (lake / TRASH).is_dir():
        shutil.rmtree(lake / TRASH, ignore_errors=True)
    return lines
