"""``spanrl lake compact``: a date partition's many small Parquet files -> one, losing no row.

Every incremental ingest adds a file to each date partition it touches, so after months of nightly
runs a partition holds hundreds of small files and every scan opens them all. Compaction rewrites
the files of a partition (``lake/spans/date=D/``, ``lake/logs/date=D/``) as ONE zstd Parquet file
with the same rows and the same schema (a DuckDB COPY), then retires the old ones, in the order
``lakeio`` describes:

1. COPY into ``.compact-<uuid>.parquet.tmp`` in the partition folder (no reader globs ``*.tmp``),
   check its row count and schema against the old files, fsync it;
2. write the intent ``lake/_compacting.json`` (new name, old names);
3. rename the temp file to ``part-<uuid>.parquet`` (the rows are now visible twice);
4. append ``{"into", "from", "rows", "at"}`` to ``lake/_compacted.jsonl``: the journal the
   incremental stage 2 reads to remap which file holds a trace instead of recomputing it;
5. delete the old files, drop the intent.

A crash before 3 leaves the old files (the next run removes the temp file); after 3, the next run
(``spanrl lake compact`` or any ``spanrl ingest``) finishes 4-5 from the intent. Between 3 and the
last delete a reader that lists the folder sees the partition's rows twice (milliseconds, or until
the next run after a crash); stage 1's own dedup (``spans_dedupe.sql``) compares new spans with the
lake by key, so it is unaffected. Losing rows is never possible: the old files go only once the new
one is complete, renamed and recorded.

Test-only crash points (``SPANRL_TEST_CRASH_AT``): ``compact_written``, ``compact_intent``,
``compact_renamed``, ``compact_recorded``, ``compact_deleting`` (after the first old file is deleted).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from spanrl.errors import InputError
from spanrl.ingest.lakeio import (
    PARQUET_OPTIONS,
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
from spanrl.ingest.views import read_sql, sql_literal
from spanrl.memory import resolve_memory_limit
from spanrl.publish import fsync_path

JOURNAL = "_compacted.jsonl"
INTENT = "_compacting.json"
TMP_GLOB = ".compact-*.parquet.tmp"


@dataclass
class Partition:
    """One date folder of a lake table and the Parquet files it holds."""

    table: str
    folder: Path
    files: list[Path]
    rows: int
    bytes: int

    @property
    def name(self) -> str:
        return f"{self.table}/{self.folder.name}"


@dataclass
class Compacted:
    """One partition rewritten (or, in a dry run, that would be): ``into`` None in a dry run."""

    partition: Partition
    into: Path | None = None
    bytes_after: int = 0


@dataclass
class CompactSummary:
    """What ``compact_lake`` did: the partitions rewritten, those left alone (with why), and the
    interrupted housekeeping it finished first."""

    min_files: int
    dry_run: bool
    done: list[Compacted] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def files_before(self) -> int:
        return sum(len(c.partition.files) for c in self.done)

    @property
    def rows(self) -> int:
        return sum(c.partition.rows for c in self.done)


def compact_partitions(lake: Path, plan: list[Partition], memory_limit: str) -> list[Compacted]:
    """Rewrite each planned partition (steps 1-5), one DuckDB connection for all of them."""
    if not plan:
        return []
    con = _connect(lake, memory_limit)
    try:
        return [compact_partition(con, lake, p) for p in plan]
    finally:
        con.close()


def plan_compaction(lake: Path, min_files: int) -> tuple[list[Partition], list[str]]:
    """The partitions to rewrite, and one line per partition left alone because its files do not
    share one schema (files written by different spanrl versions: merging them would change the
    columns, which compaction never does)."""
    import pyarrow.parquet as pq  # here, not at the top: every ingest imports this module (its intent file)

    plan: list[Partition] = []
    skipped: list[str] = []
    for table in TABLES:
        for folder in sorted((lake / table).glob("date=*")):
            files = sorted(folder.glob("*.parquet"))  # hidden temp files never match
            if not folder.is_dir() or len(files) < min_files:
                continue
            schemas = [pq.read_schema(f) for f in files]
            if any(not s.equals(schemas[0], check_metadata=False) for s in schemas[1:]):
                skipped.append(f"{table}/{folder.name}: its {len(files)} files do not share one schema "
                               "(written by different spanrl versions); left as they are")
                continue
            rows = sum(pq.read_metadata(f).num_rows for f in files)
            plan.append(Partition(table, folder, files, rows, sum(f.stat().st_size for f in files)))
    return plan, skipped


def _connect(lake: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """DuckDB for the rewrites: bounded memory, spilling to ``lake/_tmp``, file order kept."""
    spill = lake / "_tmp"
    spill.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET memory_limit = {sql_literal(resolve_memory_limit(memory_limit))}")
    con.execute(f"SET temp_directory = {sql_literal(spill)}")
    con.execute("SET enable_progress_bar = false")
    return con


def compact_partition(con: duckdb.DuckDBPyConnection, lake: Path, part: Partition) -> Compacted:
    """Steps 1-5 of the module docstring for one partition."""
    import pyarrow.parquet as pq

    token = uuid.uuid4()
    tmp = part.folder / f".compact-{token}.parquet.tmp"
    final = part.folder / f"part-{token}.parquet"
    try:
        con.execute(f"COPY ({read_sql('lake_compact')}) TO {sql_literal(tmp)} ({PARQUET_OPTIONS})",
                    {"files": [str(f) for f in part.files]})
    except BaseException:  # out of memory or disk, say: no half-written temp file is left in the partition
        tmp.unlink(missing_ok=True)
        raise
    written, schema = pq.read_metadata(tmp).num_rows, pq.read_schema(tmp)
    if written != part.rows or not schema.equals(pq.read_schema(part.files[0]), check_metadata=False):
        tmp.unlink()
        raise RuntimeError(f"{part.folder}: the compacted file held {written} rows (expected {part.rows}) or other "
                           "columns; nothing was changed")
    fsync_path(tmp)
    crash_point("compact_written")
    intent = {"into": relative(lake, final), "from": [relative(lake, f) for f in part.files], "rows": written,
              "tmp": relative(lake, tmp), "at": now_iso()}
    write_intent(lake / INTENT, intent)
    crash_point("compact_intent")
    os.rename(tmp, final)
    fsync_path(part.folder)
    crash_point("compact_renamed")
    _retire(lake, intent, recorded=False)
    return Compacted(part, final, final.stat().st_size)


def _retire(lake: Path, intent: dict[str, Any], recorded: bool) -> None:
    """Steps 4-5: journal the new file (unless ``recorded``), delete the old ones, drop the intent."""
    if not recorded:
        append_jsonl(lake / JOURNAL, {k: intent[k] for k in ("into", "from", "rows", "at")})
    crash_point("compact_recorded")
    for i, rel in enumerate(intent["from"]):
        _inside(lake, rel).unlink(missing_ok=True)
        if i == 0:
            crash_point("compact_deleting")
    fsync_path(_inside(lake, intent["into"]).parent)
    drop_intent(lake / INTENT)


def finish_compaction(lake: Path) -> list[str]:
    """Finish the compaction a crash interrupted (its new file is in place: journal it if need be,
    delete the old files) or roll it back (no new file yet: drop the temp file, keep the old ones)."""
    lines = []
    intent = read_intent(lake / INTENT)
    if intent is not None:
        into = _inside(lake, intent["into"])
        if into.is_file():
            done = any(r.get("into") == intent["into"] for r in read_jsonl(lake / JOURNAL))
            _retire(lake, intent, recorded=done)
            lines.append(f"finished an interrupted compaction: {intent['into']} replaces {len(intent['from'])} file(s)")
        else:
            _inside(lake, intent["tmp"]).unlink(missing_ok=True)
            drop_intent(lake / INTENT)
            lines.append(f"rolled back an interrupted compaction of {into.parent.relative_to(lake)}: "
                         f"its {len(intent['from'])} file(s) are kept")
    for stray in sorted(lake.glob(f"*/date=*/{TMP_GLOB}")):  # killed before its intent was written
        stray.unlink()
        lines.append(f"removed {relative(lake, stray)}, left by a compaction killed while writing it")
    return lines


def _inside(lake: Path, rel: str) -> Path:
    """A path from an intent, refused unless it stays inside the lake (the intent is ours, but a
    hand-edited one must not make a cleanup delete files elsewhere)."""
    path = (lake / rel).resolve()
    if not path.is_relative_to(lake.resolve()) or path == lake.resolve():
        raise InputError(f"{lake}: an intent names {rel!r}, outside the lake; remove the intent file by hand")
    return lake / rel
