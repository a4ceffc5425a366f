"""Lake housekeeping, the entry points: ``compact_lake`` (``spanrl lake compact``), ``prune_lake``
(``spanrl lake prune``, ``spanrl ingest --keep-days``) and ``finish_interrupted``, which stage 1,
``spanrl transitions build`` and both commands call under the lake lock first, so no run reads a
partition twice or leaves half a prune behind. The mechanics live in ``compact.py`` and ``prune.py``,
the crash-safe file primitives in ``lakeio.py``."""

from __future__ import annotations

import time
from pathlib import Path

from spanrl.errors import InputError, stops_on_resource_trouble
from spanrl.ingest.compact import INTENT as COMPACT_INTENT
from spanrl.ingest.compact import (
    Compacted,
    CompactSummary,
    compact_partitions,
    finish_compaction,
    plan_compaction,
)
from spanrl.ingest.lakeio import lake_lock
from spanrl.ingest.prune import INTENT as PRUNE_INTENT
from spanrl.ingest.prune import PruneSummary, drop_partitions, finish_prune, plan_prune
from spanrl.options import check_keep


def compact_lake(data: Path, min_files: int = 2, dry_run: bool = False, memory_limit: str = "auto") -> CompactSummary:
    """Rewrite every partition of ``data``'s lake holding >= ``min_files`` Parquet files as one file.

    Holds the lake writer lock (a running ingest or build makes this exit 2 at once) and first
    finishes any compaction or prune a crash interrupted. Re-running is a no-op."""
    if min_files < 2:
        raise InputError(f"--min-files {min_files}: compaction needs at least 2 files in a partition; pass 2 or more")
    lake = _lake(data)
    t0 = time.perf_counter()
    summary = CompactSummary(min_files, dry_run)
    with lake_lock(lake):
        summary.repaired = pending_housekeeping(lake) if dry_run else finish_interrupted(lake)
        plan, summary.skipped = plan_compaction(lake, min_files)
        with stops_on_resource_trouble("lake compaction", memory_limit, lake, "No partition was left half "
                                       "rewritten: those done before it are compacted, the others are as they were."):
            summary.done = [Compacted(p) for p in plan] if dry_run else compact_partitions(lake, plan, memory_limit)
    summary.seconds = time.perf_counter() - t0
    return summary


def prune_lake(data: Path, keep_days: int, dry_run: bool = False) -> PruneSummary:
    """Drop the lake's date partitions older than (newest date partition - ``keep_days`` days).

    Holds the lake writer lock; ``spanrl ingest`` calls it after stage 1, before stage 2, so the
    snapshot it builds reads the pruned lake."""
    check_keep("--keep-days", keep_days)
    lake = _lake(data)
    t0 = time.perf_counter()
    summary = PruneSummary(keep_days, dry_run)
    with lake_lock(lake):
        summary.repaired = pending_housekeeping(lake) if dry_run else finish_interrupted(lake)
        if plan_prune(lake, summary) and not dry_run:
            drop_partitions(lake, summary)
    summary.seconds = time.perf_counter() - t0
    return summary


def finish_interrupted(lake: Path) -> list[str]:
    """Complete (or roll back) a compaction or prune a crash interrupted; one line per repair.

    Call it holding the lake lock (``lake_lock``), before anything reads or writes the lake."""
    if not lake.is_dir():
        return []
    return finish_compaction(lake) + finish_prune(lake)


def pending_housekeeping(lake: Path) -> list[str]:
    """What ``finish_interrupted`` would repair, without repairing it (``--dry-run``)."""
    return [f"{lake / name} is left by an interrupted run; a run without --dry-run (or `spanrl ingest`) "
            "finishes it first" for name in (COMPACT_INTENT, PRUNE_INTENT) if (lake / name).is_file()]


def _lake(data: Path) -> Path:
    lake = Path(data) / "lake"
    if not lake.is_dir():
        raise InputError(f"{lake}: no trace lake here; run `spanrl ingest --data {data}` first (or pass the right --data)")
    return lake
