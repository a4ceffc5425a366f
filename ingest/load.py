"""Span files -> trace lake: ``spanrl ingest`` stage 1 (docs/lake.md).

Reads like a loop: find the new bytes (``scan.plan_files``) -> per file, DuckDB parses and flattens
the OTLP lines straight into staged Parquet (``spans_load.sql`` / ``logs_load.sql``) -> a file that
had a bad line is redone line by line so every reject gets its line number -> duplicates against the
run and the lake are dropped -> staged files are moved into ``lake/{spans,logs}/date=.../`` -> the
rejects and ``lake/_files.parquet`` are written. Python never loops over spans.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from spanrl.errors import resource_trouble, stops_on_resource_trouble
from spanrl.ingest.anyvalue import register_any_json
from spanrl.ingest.config import LakeConfig
from spanrl.ingest.decode import decode_to_json_lines, split_lines
from spanrl.ingest.housekeeping import finish_interrupted
from spanrl.ingest.lakeio import PARQUET_OPTIONS, lake_lock  # lake_lock: imported from here by later stages
from spanrl.ingest.objects import is_object_url, plan_objects
from spanrl.ingest.scan import (
    REJECTS_COLUMNS,
    FileStateError,
    Reject,
    SpanFile,
    check_unchanged,
    close_planned,
    list_input_files,
    open_planned,
    plan_files,
    read_file_state,
    set_aside_file_state,
    write_file_state,
    write_rows,
)
from spanrl.ingest.views import read_sql, render_sql, sql_literal
from spanrl.memory import resolve_memory_limit, task_threads

SLOW_CHUNK_BYTES = 64 << 20
# read_ndjson's maximum_object_size (per-thread buffers; lines up to ~2x): 16 MiB, 64 MiB for a longer line
FAST_OBJECT_SIZES = (16 << 20, 64 << 20)  # 16 MiB: a 60k-span night peaks 200 MB lower than at 32 MiB
PIECE_BYTES = 8 << 20  # decode.split_lines: a file over two of these is read as line-aligned pieces


@dataclass
class LakeSummary:
    """What one stage-1 run did (printed as the summary table)."""

    files: int = 0
    bytes: int = 0
    spans: int = 0
    logs: int = 0
    rejects: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    reject_samples: list[Reject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # file-level: each names the path and what happened

    @property
    def spans_per_s(self) -> float:
        return self.spans / self.seconds if self.seconds > 0 else 0.0


def open_work_connection(cfg: LakeConfig, tmp: Path) -> duckdb.DuckDBPyConnection:
    """DuckDB for loading: bounded memory, spilling to ``tmp``, OTLP types and macros registered."""
    con = duckdb.connect()
    con.execute(f"SET memory_limit = {sql_literal(resolve_memory_limit(cfg.memory_limit))}")
    con.execute(f"SET temp_directory = {sql_literal(tmp)}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    if threads := cfg.threads or task_threads():  # in a Ray task: its CPUs (spanrl/workers.py)
        con.execute(f"SET threads = {int(threads)}")
    register_any_json(con)  # before otlp_types.sql: its otlp_attrs_deep macro calls it
    con.execute(read_sql("otlp_types"))
    return con


def _copy(con: duckdb.DuckDBPyConnection, select_sql: str, out: Path, params: dict | None = None) -> None:
    """COPY a SELECT into date-partitioned zstd Parquet under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY ({select_sql}) TO {sql_literal(out)} ({PARQUET_OPTIONS}, PARTITION_BY (\"date\"), "
                "FILENAME_PATTERN 'part-{uuid}', OVERWRITE_OR_IGNORE)", params or {})


def _count(con: duckdb.DuckDBPyConnection, folder: Path) -> int:
    glob = sql_literal(str(folder / "*" / "*.parquet"))
    return con.execute(f"SELECT count(*) FROM read_parquet({glob})").fetchone()[0] if any(folder.glob("*/*.parquet")) else 0


def load_fast(con: duckdb.DuckDBPyConnection, item: SpanFile, src: Path, out: Path, params: dict, work: Path) -> bool:
    """read_ndjson -> staged Parquet in one COPY (FAST_OBJECT_SIZES: small buffers unless a line needs
    more; a big file as pieces in ``work``). False when the file needs the line-numbered path (a bad
    line: its rows have no date)."""
    pieces = [str(p) for p in split_lines(src, work, PIECE_BYTES)]
    table = "logs" if item.signal == "logs" else "spans"
    view = "log_batches_ndjson" if table == "logs" else "trace_batches_ndjson"
    for size in FAST_OBJECT_SIZES:
        try:
            con.execute(render_sql(view, src=pieces, source_file=str(item.path), max_object_size=size))
            _copy(con, f"SELECT * EXCLUDE (line_no) FROM ({read_sql(table + '_load')})", out / table, params)
            break
        except duckdb.Error as exc:
            shutil.rmtree(out / table, ignore_errors=True)
            if resource_trouble(exc):  # the machine's, not a bad line's: load_lake stops the run
                raise
            if "maximum_object_size" not in str(exc) or size == FAST_OBJECT_SIZES[-1]:
                return False
    if (out / table / "date=__HIVE_DEFAULT_PARTITION__").exists():
        shutil.rmtree(out / table, ignore_errors=True)
        return False
    return True


def _text_chunks(src: Path, work: Path, first_line: int) -> list[tuple[Path, int, bool]]:
    """Cut ``src`` at newlines into pieces DuckDB's read_text can hold: (path, first line, ends with \\n)."""
    chunks: list[tuple[Path, int, bool]] = []
    line = first_line
    with open(src, "rb") as fh:
        carry = b""
        while True:
            block = fh.read(SLOW_CHUNK_BYTES)
            data = carry + block
            if not data:
                break
            cut = data.rfind(b"\n") + 1 if block else len(data)
            if cut == 0:  # one line longer than a chunk: keep reading
                carry = data
                continue
            piece, carry = data[:cut], data[cut:]
            piece = _valid_utf8(piece)
            path = work / f"chunk-{len(chunks)}.jsonl"
            path.write_bytes(piece)
            chunks.append((path, line, piece.endswith(b"\n")))
            line += piece.count(b"\n")
            if not block:
                break
    return chunks


def _valid_utf8(piece: bytes) -> bytes:
    """``piece`` with bytes that are not UTF-8 replaced (U+FFFD), so DuckDB can split it into lines:
    the lines holding them become rejects, the others load unchanged."""
    try:
        piece.decode("utf-8")
        return piece
    except UnicodeDecodeError:
        return piece.decode("utf-8", errors="replace").encode("utf-8")


def load_slow(con: duckdb.DuckDBPyConnection, item: SpanFile, src: Path, out: Path, params: dict,
              work: Path) -> None:
    """Line by line (in DuckDB): every bad line becomes a reject with its number, the rest loads."""
    for chunk, first_line, ends_nl in _text_chunks(src, work, item.first_line):
        con.execute(render_sql("lines_split", src=str(chunk)),
                    {"first_line": first_line, "ends_with_newline": ends_nl or item.active})
        for line_no, error, excerpt in con.execute(read_sql("lines_rejects")).fetchall():
            item.rejects.append(Reject(str(item.path), line_no, error, excerpt))
        con.execute(render_sql("lines_batches", source_file=str(item.path)))
        for table, batches in (("spans", "trace_batches"), ("logs", "log_batches")):
            if not con.execute(f"SELECT count(*) FROM {batches}").fetchone()[0]:
                continue  # binding a loader costs time: skip the signal this chunk does not hold
            con.execute(f"CREATE OR REPLACE TEMP TABLE staged AS {read_sql(table + '_load')}", params)
            if table == "spans":
                bad = con.execute("SELECT line_no, count(*) FROM staged WHERE \"date\" IS NULL "
                                  "GROUP BY line_no ORDER BY line_no").fetchall()
                for line_no, n in bad:
                    item.rejects.append(Reject(str(item.path), line_no,
                                               f"missing ids: {n} span(s) without a valid traceId/spanId"))
            _copy(con, "SELECT * EXCLUDE (line_no) FROM staged WHERE \"date\" IS NOT NULL", out / table)
        chunk.unlink()


def stage_file(con: duckdb.DuckDBPyConnection, item: SpanFile, fd: int, out: Path, work: Path,
               params: dict) -> tuple[int, int]:
    """The planned bytes of one span file (read through ``fd``) -> staged Parquet under ``out``;
    returns (spans, logs)."""
    if item.end <= item.start and item.fmt == "json":
        return 0, 0
    work.mkdir(parents=True, exist_ok=True)
    src = decode_to_json_lines(item, fd, work / "decoded.jsonl")
    if src.exists() and src.stat().st_size and not load_fast(con, item, src, out, params, work):
        try:
            load_slow(con, item, src, out, params, work)
        except duckdb.Error as exc:  # e.g. not UTF-8 text at all: the whole file is one reject
            for table in ("spans", "logs"):
                shutil.rmtree(out / table, ignore_errors=True)
            if resource_trouble(exc):  # out of memory or disk is no reason to reject a file
                raise
            item.rejects.append(Reject(str(item.path), 0, f"cannot read the file as OTLP JSON lines: {exc}"))
    shutil.rmtree(work, ignore_errors=True)
    return _count(con, out / "spans"), _count(con, out / "logs")


def drop_duplicates(con: duckdb.DuckDBPyConnection, lake: Path, staging: Path, table: str) -> int:
    """Rewrite this run's staged ``table`` without keys already seen (rare path); returns rows dropped."""
    staged_glob = str(staging / "*" / table / "*" / "*.parquet")
    if not any(staging.glob(f"*/{table}/*/*.parquet")):
        return 0
    # A repeated span (log record) has the same start (record) time, so the same date partition:
    # only the lake partitions of the dates staged now can hold one. Comparing with those, not with
    # the whole lake, keeps a night's dedup flat however many nights the lake holds.
    dates = sorted({p.name for p in staging.glob(f"*/{table}/date=*")})
    lake_files = sorted(str(f) for d in dates for f in (lake / table / d).glob("*.parquet"))
    lake_glob: str | list[str]
    if lake_files:
        lake_glob = lake_files
    else:  # compare with an empty file of the same columns
        lake_glob = str(staging / f"_empty_{table}.parquet")
        con.execute(f"COPY (SELECT * FROM read_parquet({sql_literal(staged_glob)}, hive_partitioning = true) "
                    f"LIMIT 0) TO {sql_literal(lake_glob)} (FORMAT parquet)")
    n = con.execute(render_sql(f"{table}_duplicates", staged=staged_glob, lake=lake_glob)).fetchone()[0]
    if not n:
        return 0
    before = _count_glob(con, staged_glob)
    out = staging / f"_dedup_{table}"
    _copy(con, render_sql(f"{table}_dedupe", staged=staged_glob, lake=lake_glob), out / table)
    for path in staging.glob(f"*/{table}"):
        if path.parent != out:
            shutil.rmtree(path)
    return before - _count(con, out / table)


def _count_glob(con: duckdb.DuckDBPyConnection, glob: str) -> int:
    return con.execute(f"SELECT count(*) FROM read_parquet({sql_literal(glob)})").fetchone()[0]


def publish(staging: Path, lake: Path) -> None:
    """Move staged Parquet into ``lake/<table>/date=.../`` (renames on one file system)."""
    for table in ("spans", "logs"):
        for path in sorted(staging.glob(f"*/{table}/date=*/*.parquet")):
            dest = lake / table / path.parent.name
            dest.mkdir(parents=True, exist_ok=True)
            path.replace(dest / path.name)


def rejects_dir(lake: Path) -> Path:
    """Where every run's rejected lines are kept (a Parquet file per run)."""
    return lake / "_rejects"


def write_rejects(lake: Path, run_id: str, rejects: list[Reject], now: datetime) -> None:
    if rejects:
        rejects_dir(lake).mkdir(parents=True, exist_ok=True)
        write_rows(rejects_dir(lake) / f"{run_id}.parquet", [{**r.__dict__, "run_id": run_id, "ingested_at": now}
                                                             for r in rejects], REJECTS_COLUMNS)


def recover_file_state(lake: Path, warnings: list[str]) -> dict[str, dict]:
    """``lake/_files.parquet``, or, when it is corrupt, a repair that loses nothing: the broken file is
    moved aside and every span file is read again; spans already in the lake are dropped as duplicates
    (keys ``trace_id, span_id``), so the lake itself is the record of what was ingested."""
    try:
        return read_file_state(lake)
    except FileStateError as exc:
        aside = set_aside_file_state(lake)
        warnings.append(f"{exc}: moved to {aside} and rebuilt; every span file is read again this run and spans "
                        "already in the lake are dropped as duplicates")
        return {}


def _file_record(item: SpanFile, spans: int, logs: int, now: datetime) -> dict:
    return {"path": str(item.path), "size": item.size, "fingerprint": item.fingerprint, "fp_len": item.fp_len,
            "format": item.fmt, "signal": item.signal, "active": item.active, "offset": item.end,
            "rows": item.prior_rows + spans + logs, "rejects": len(item.rejects),
            "status": "active" if item.active else "closed", "ingested_at": now, **item.record_overrides}


def load_lake(cfg: LakeConfig, on_progress: Callable[[SpanFile, int], None] | None = None,
              on_plan: Callable[[list[SpanFile]], None] | None = None) -> LakeSummary:
    """Stage 1 of ``spanrl ingest``: every new byte of span files into the deduplicated lake. A run the
    machine stops (memory, disk: ``resource_trouble``) records nothing and says so (exit 2)."""
    with lake_lock(cfg.data / "lake"), stops_on_resource_trouble(
            "stage 1 (span files -> lake)", cfg.memory_limit, cfg.data / "lake",
            "Nothing of this run was recorded: the next `spanrl ingest` reads the same span files again (spans "
            "already in the lake are dropped as duplicates)."):
        return _load_lake(cfg, on_progress, on_plan)


def _load_lake(cfg: LakeConfig, on_progress: Callable[[SpanFile, int], None] | None,
               on_plan: Callable[[list[SpanFile]], None] | None) -> LakeSummary:
    t0 = time.perf_counter()
    lake = cfg.data / "lake"
    summary = LakeSummary()
    summary.warnings += finish_interrupted(lake)  # a compaction or prune a crash cut short
    state = recover_file_state(lake, summary.warnings)
    if is_object_url(cfg.input):  # with --workers N the tasks fetch the objects: the driver only lists them
        plan = plan_objects(cfg.input, lake, state, summary.warnings, fetch=(cfg.workers or 1) <= 1)
    else:
        plan = plan_files(list_input_files(cfg.data, cfg.input), state, summary.warnings)
    try:
        if on_plan:
            on_plan(plan)
        if plan:
            _load_plan(cfg, lake, state, plan, summary, on_progress)
    finally:
        for item in plan:
            close_planned(item)
    summary.seconds = time.perf_counter() - t0
    return summary


def _load_plan(cfg: LakeConfig, lake: Path, state: dict[str, dict], plan: list[SpanFile], summary: LakeSummary,
               on_progress: Callable[[SpanFile, int], None] | None) -> None:
    """Stage every planned file, drop duplicates, publish, then record what was really read."""
    now = datetime.now(UTC).replace(tzinfo=None)
    run_id = now.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    staging = lake / "_staging" / run_id
    tmp = lake / "_tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    con = open_work_connection(cfg, tmp)
    records: dict[str, dict] = {}
    done: list[SpanFile] = []
    params = {"ingested_at": now}
    try:
        staged = None
        if (cfg.workers or 1) > 1:  # --workers N: the same staging, by Ray tasks (ingest/parallel.py)
            from spanrl.ingest.parallel import stage_on_workers

            staged = stage_on_workers(cfg, plan, staging, params, open_work_connection, _stage_planned)
        for i, item in enumerate(plan):
            if staged is None:
                counts = _stage_planned(con, item, staging / f"{i:06d}", tmp / f"work-{run_id}-{i}", params,
                                        summary.warnings)
            else:
                counts, warnings, rejects, fetched = staged[i]
                if fetched is not None:  # an object its task fetched: recorded as the task found it
                    item = plan[i] = fetched
                item.rejects = rejects
                summary.warnings += warnings
            if counts is None:
                continue
            spans, logs = counts
            records[str(item.path)] = _file_record(item, spans, logs, now)
            done.append(item)
            summary.spans += spans
            summary.logs += logs
            summary.bytes += max(item.end - item.start, 0)
            if on_progress:
                on_progress(item, max(item.end - item.start, 0))
        for table in ("spans", "logs"):
            dropped = drop_duplicates(con, lake, staging, table)
            if dropped:
                summary.duplicates += dropped
                setattr(summary, table, _count(con, staging / f"_dedup_{table}" / table))
        publish(staging, lake)
    finally:
        con.close()
        shutil.rmtree(staging, ignore_errors=True)
    rejects = [r for item in done for r in item.rejects]
    write_rejects(lake, run_id, rejects, now)
    write_file_state(lake, {**state, **records})
    summary.files = len(done)
    summary.rejects = len(rejects)
    summary.reject_samples = rejects[:5]


def _stage_planned(con: duckdb.DuckDBPyConnection, item: SpanFile, out: Path, work: Path, params: dict,
                   warnings: list[str]) -> tuple[int, int] | None:
    """Stage exactly the planned bytes of ``item``; None (nothing staged, nothing to record, a
    warning instead) when the planned file is gone or changed in place while it was read."""
    fd = open_planned(item)
    if fd is None:
        warnings.append(f"{item.path}: replaced or deleted before it was read; not recorded (read next run "
                        "if it is still there)")
        return None
    counts = stage_file(con, item, fd, out, work, params)
    problem = check_unchanged(item)
    if problem is None:
        return counts
    shutil.rmtree(out, ignore_errors=True)
    warnings.append(f"{item.path}: {problem}; nothing of it was recorded as ingested, it is read again next run")
    return None
