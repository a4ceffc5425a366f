"""Which span files are new, from which byte offset, and in which format (docs/lake.md).

The collector writes an *active* file (``traces.jsonl``) and renames it to a backup with a UTC
timestamp when it rotates (``traces-2026-01-02T15-04-05.000.jsonl``, or ``...-size.jsonl``).
``lake/_files.parquet`` remembers, per path, its size, a fingerprint of its first bytes, how many
rows it gave and the byte offset read so far. A closed file is read once; the active file is read
up to its last newline and resumed from there; a rotated backup whose head matches a recorded
active file resumes at that file's offset, so rotation never re-reads a byte.

**Read exactly what was planned.** A path names different files over time: the collector may
rename ``traces.jsonl`` and start a new one between the plan and the read. So the plan is made
from an open handle, not from the name: every size, fingerprint and newline search reads through
that handle, which stays open until the file is read (DuckDB reads it through ``/proc/self/fd/N``,
the same inode whatever the name points at by then, even once it is deleted). After the read the
fingerprint and size are checked again (``check_unchanged``) before the offset is recorded.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from spanrl.errors import InputError, resource_trouble
from spanrl.sqlfiles import scratch, sql_literal

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"  # a span file gzipped after the fact (logrotate's compress, say)
MAX_FRAME_BYTES = 64 << 20  # the collector's own limit on one decompressed request
_PROTO_FIRST_TAG = 0x0A  # field 1 (resource_spans / resource_logs), length-delimited
FINGERPRINT_BYTES = 4096
SNIFF_BYTES = 64
# lumberjack: name-2006-01-02T15-04-05.000.ext; timberjack: name-2006-01-02T15-04-05.000-size.ext
_ROTATED = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?(?:-[a-z]+)?(?:\.[^.]+)*$")
# bytes that may precede a JSON line without making it bad (a BOM, power-cut NULs, blanks)
_LINE_PADDING = b"\xef\xbb\xbf \t\r\x00"

# The lake's two bookkeeping tables, as DuckDB column types: read and written by DuckDB, so stage 1
# never imports pyarrow (its import is a third of a small night's fixed cost).
FILES_COLUMNS = {
    "path": "VARCHAR", "size": "BIGINT", "fingerprint": "VARCHAR", "fp_len": "BIGINT", "format": "VARCHAR",
    "signal": "VARCHAR", "active": "BOOLEAN", "offset": "BIGINT", "rows": "BIGINT", "rejects": "BIGINT",
    "status": "VARCHAR", "ingested_at": "TIMESTAMP",
}
REJECTS_COLUMNS = {"file": "VARCHAR", "line": "BIGINT", "error": "VARCHAR", "excerpt": "VARCHAR", "run_id": "VARCHAR",
                   "ingested_at": "TIMESTAMP"}


def empty_rows_sql(columns: dict[str, str]) -> str:
    """A query of no rows with these columns (what a view shows before the first file exists)."""
    return "SELECT " + ", ".join(f'NULL::{t} AS "{c}"' for c, t in columns.items()) + " LIMIT 0"


def write_rows(path: Path, rows: list[dict], columns: dict[str, str]) -> None:
    """``rows`` (dicts with these keys) as one zstd Parquet file, written by DuckDB from one typed list
    parameter. Aware datetimes are stored as naive UTC, whatever the session's time zone."""
    struct = "STRUCT(" + ", ".join(f'"{c}" {t}' for c, t in columns.items()) + ")"
    plain = [{c: _utc(r.get(c)) for c in columns} for r in rows]
    con = scratch()
    try:
        con.execute(f"COPY (SELECT unnest($rows::{struct}[], recursive := true)) TO {sql_literal(str(path))} "
                    "(FORMAT parquet, COMPRESSION zstd)", {"rows": plain})
    finally:
        con.close()


def _utc(v: object) -> object:
    return v.astimezone(UTC).replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo is not None else v


@dataclass
class Reject:
    """One bad line (or frame) of a span file: where, and what was wrong."""

    file: str
    line: int
    error: str
    excerpt: str = ""


@dataclass
class SpanFile:
    """One unit of work: bytes [start, end) of the file planned as ``path`` still to ingest."""

    path: Path
    size: int
    fingerprint: str
    fp_len: int
    fmt: str  # json | proto | zstd-framed | zstd-stream | gzip
    signal: str  # traces | logs (a guess from the name; mixed JSON files still work)
    active: bool
    start: int = 0
    end: int = 0
    first_line: int = 1  # line number of the byte at ``start``
    prior_rows: int = 0
    rejects: list[Reject] = field(default_factory=list)
    inode: tuple[int, int] = (0, 0)  # (st_dev, st_ino) of the file the plan was made from
    fd: int | None = field(default=None, repr=False, compare=False)  # held open from plan to read
    # what the lake manifest records instead (an S3 object: its URL, size and version; ingest/objects.py)
    record_overrides: dict = field(default_factory=dict)


class FileStateError(Exception):
    """``lake/_files.parquet`` cannot be read (corrupt, or not the manifest at all)."""


def is_active(path: Path) -> bool:
    """The active file is the one without a rotation timestamp in its name."""
    return not _ROTATED.search(path.name)


def signal_of(path: Path) -> str:
    return "logs" if "log" in path.name.lower() else "traces"


def list_input_files(data: Path, pattern: str | None) -> list[Path]:
    """``--input`` (a glob or a directory) or ``DATA/otel/``; hidden and empty files are skipped."""
    if pattern is None:
        root = data / "otel"
        paths = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    elif Path(pattern).is_dir():
        paths = sorted(p for p in Path(pattern).rglob("*") if p.is_file())
    else:
        base = Path(pattern)
        anchor = Path(base.anchor) if base.is_absolute() else Path(".")
        rel = str(base.relative_to(anchor)) if base.is_absolute() else pattern
        paths = sorted(p for p in anchor.glob(rel) if p.is_file())
        if not paths:
            raise InputError(f"--input {pattern}: matches no file; check the path or glob (quote a glob, "
                             "e.g. --input 'spans/*.jsonl', so the shell does not expand it)")
    out = []
    for p in paths:
        try:
            if not p.name.startswith(".") and p.stat().st_size > 0:
                out.append(p.resolve())
        except FileNotFoundError:
            continue  # rotated away or deleted while listing: the next listing sees its new name
    return out


WHOLE_STREAMS = ("zstd-stream", "gzip")  # whole-file compressed streams: decompressed whole, never resumed


def sniff_head(head: bytes) -> str:
    """JSON lines, zstd stream, gzip stream, length+zstd frames, or length-framed protobuf.

    Framed formats are recognised by their structure (a zstd magic, or a plausible first frame length
    followed by the first field of an Export*ServiceRequest); everything else is JSON lines and is
    judged line by line, so a UTF-8 BOM, NUL bytes left by a power cut or a torn first line cost
    that line only, never the file.
    """
    if head.startswith(ZSTD_MAGIC):
        return "zstd-stream"
    if head.startswith(GZIP_MAGIC):  # never the first bytes of a JSON line or a plausible frame length
        return "gzip"
    if len(head) >= 8 and head[4:8] == ZSTD_MAGIC:
        return "zstd-framed"
    if len(head) >= 5 and head[4] == _PROTO_FIRST_TAG and 0 < struct.unpack_from(">I", head)[0] <= MAX_FRAME_BYTES:
        return "proto"
    return "json"



def sniff_format(path: Path) -> str:
    """JSON lines, zstd stream, length+zstd frames, or length-framed protobuf (see ``sniff_head``)."""
    with open(path, "rb") as fh:
        return sniff_head(fh.read(SNIFF_BYTES))


def _fingerprint_fd(fd: int, length: int) -> str:
    return hashlib.sha256(os.pread(fd, length, 0)).hexdigest()


def fingerprint(path: Path, length: int) -> str:
    with open(path, "rb") as fh:
        return _fingerprint_fd(fh.fileno(), length)


def read_file_state(lake: Path) -> dict[str, dict]:
    """``lake/_files.parquet`` as {path: record}; empty when the lake is new.

    FileStateError when the file is there but unreadable or has other columns (overwritten by hand,
    or torn by a disk fault): the caller decides how to repair it (``load.recover_file_state``)."""
    path = lake / "_files.parquet"
    if not path.exists():
        return {}
    con = scratch()
    try:
        cur = con.execute(f"SELECT * FROM read_parquet({sql_literal(str(path))})")
        names = [d[0] for d in cur.description]
        missing = set(FILES_COLUMNS) - set(names)
        if missing:
            raise FileStateError(f"{path}: not the lake manifest (no column {', '.join(sorted(missing))})")
        rows = [dict(zip(names, values, strict=True)) for values in cur.fetchall()]
    except duckdb.Error as exc:
        if resource_trouble(exc):  # out of memory is no reason to set the manifest aside and read everything again
            raise
        raise FileStateError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()
    return {r["path"]: {c: r[c] for c in FILES_COLUMNS} for r in rows}


def write_file_state(lake: Path, records: dict[str, dict]) -> None:
    """Rewritten whole (it is one row per file) into a temp file, then renamed into place."""
    lake.mkdir(parents=True, exist_ok=True)
    tmp = lake / "_files.parquet.tmp"
    write_rows(tmp, sorted(records.values(), key=lambda r: r["path"]), FILES_COLUMNS)
    tmp.replace(lake / "_files.parquet")


def file_state_path(lake: Path) -> Path:
    """Where the lake manifest lives, for the read-only ``span_files`` view of ``spanrl sql``
    (``ingest/views.py``); everything else reads and writes it through the two functions above."""
    return lake / "_files.parquet"


def set_aside_file_state(lake: Path) -> Path:
    """Move a corrupt lake manifest aside (kept for a look, never read again) and return where it went;
    the next ``write_file_state`` starts a new one (``load.recover_file_state``)."""
    aside = lake / f"_files.parquet.corrupt-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    (lake / "_files.parquet").replace(aside)
    return aside


def _resume_point(path: Path, fd: int, size: int, state: dict[str, dict]) -> dict | None:
    """The record this file continues: its own, or (for a fresh backup) the active file it was."""
    own = state.get(str(path))
    candidates = [own] if own else [r for r in state.values() if r["active"] and r["path"] != str(path)
                                    and Path(r["path"]).parent == path.parent]
    for rec in candidates:
        if rec["fp_len"] <= size and _fingerprint_fd(fd, rec["fp_len"]) == rec["fingerprint"]:
            return rec
    return None


def _last_newline_end(fd: int, start: int, size: int) -> int:
    """Offset just past the last newline at or after ``start`` (``start`` when there is none)."""
    block = 1 << 20
    pos = size
    while pos > start:
        lo = max(start, pos - block)
        idx = os.pread(fd, pos - lo, lo).rfind(b"\n")
        if idx >= 0:
            return lo + idx + 1
        pos = lo
    return start


def _count_newlines(fd: int, end: int) -> int:
    n, pos = 0, 0
    while pos < end:
        chunk = os.pread(fd, min(end - pos, 1 << 22), pos)
        if not chunk:
            break
        n += chunk.count(b"\n")
        pos += len(chunk)
    return n


def _tail_is_garbage(fd: int, end: int, size: int) -> bool:
    """Bytes after an active file's last newline wait for their line end, unless they cannot start
    an OTLP/JSON line (binary junk, a file that is not a span file at all): no later byte makes
    them valid, so waiting would re-scan them every run and never report them."""
    head = os.pread(fd, min(size - end, 256), end).lstrip(_LINE_PADDING)
    return bool(head) and not head.startswith(b"{")


def _plan_one(path: Path, fd: int, state: dict[str, dict]) -> SpanFile | None:
    """The plan for one opened file, every byte read through ``fd``; None when nothing is new."""
    st = os.fstat(fd)
    size = st.st_size
    if size == 0:
        return None
    fp_len = min(size, FINGERPRINT_BYTES)
    fmt = sniff_head(os.pread(fd, SNIFF_BYTES, 0))
    item = SpanFile(path=path, size=size, fingerprint=_fingerprint_fd(fd, fp_len), fp_len=fp_len, fmt=fmt,
                    signal=signal_of(path), active=is_active(path), end=size, inode=(st.st_dev, st.st_ino))
    rec = _resume_point(path, fd, size, state)
    own = rec is not None and rec["path"] == str(path)
    if own and rec["status"] == "closed" and rec["size"] == size:
        return None  # a closed file is ingested once
    if rec is not None and fmt not in WHOLE_STREAMS:  # a compressed stream cannot be resumed mid-way
        item.start = min(rec["offset"], size)
        item.prior_rows = rec["rows"] if own else 0
    if fmt == "json" and item.active:
        item.end = _last_newline_end(fd, item.start, size)
        if _tail_is_garbage(fd, item.end, size):
            item.end = size  # read (and reject) it now
    if own and item.end <= item.start and item.active:
        return None  # nothing new since last run
    if fmt == "json" and item.start:
        item.first_line = _count_newlines(fd, item.start) + 1
    return item


def plan_files(paths: list[Path], state: dict[str, dict], warnings: list[str] | None = None) -> list[SpanFile]:
    """The work to do this run: new files, grown active files, backups not yet read to the end.

    Each planned file stays open (``SpanFile.fd``) until ``close_planned``, so a rename or delete
    after the plan cannot change what is read. A file gone before it could be opened is a warning;
    past the process's open-file limit the rest wait for the next run (also a warning)."""
    warnings = warnings if warnings is not None else []
    budget = _open_file_budget(len(paths))
    plan: list[SpanFile] = []
    for n, path in enumerate(paths):
        if len(plan) >= budget:
            warnings.append(f"{len(paths) - n} span file(s) left for the next run: no more files can be held "
                            "open at once (raise the open-file limit, ulimit -n, to read them in one run)")
            break
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            warnings.append(f"{path}: gone before it could be read (rotated or deleted); not recorded")
            continue
        except OSError as exc:
            if exc.errno != errno.EMFILE:
                raise
            warnings.append(f"{len(paths) - n} span file(s) left for the next run: no more files can be held "
                            f"open at once ({exc.strerror})")
            break
        item = _plan_one(path, fd, state)
        if item is None:
            os.close(fd)
            continue
        item.fd = fd
        plan.append(item)
    return plan


FD_RESERVE = 256  # descriptors left for DuckDB (its threads, staged Parquet, spill files) and the rest


def _open_file_budget(wanted: int) -> int:
    """How many planned files may be held open at once: the soft open-file limit, lifted towards the
    hard one when a long backlog needs it, minus what is open already and ``FD_RESERVE``. Past it the
    rest of the backlog waits for the next run (a warning), rather than DuckDB failing mid-run."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            target = wanted + 2 * FD_RESERVE
            target = target if hard == resource.RLIM_INFINITY else min(hard, target)
            if target > soft:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
        if soft == resource.RLIM_INFINITY:
            return wanted
        in_use = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
        return max(1, soft - in_use - FD_RESERVE)
    except (ImportError, ValueError, OSError):
        return wanted  # not POSIX, or not allowed: plan_files stops at EMFILE with a warning


def open_planned(item: SpanFile) -> int | None:
    """The read handle on exactly the file that was planned (None once ``close_planned`` ran)."""
    return item.fd


def pinned_path(fd: int) -> Path:
    """A path any reader (DuckDB) can open that names the inode behind ``fd``, whatever its name now."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(folder):
            return Path(folder) / str(fd)
    raise OSError("no /proc/self/fd or /dev/fd here: cannot pin span files while they are read")


def check_unchanged(item: SpanFile) -> str | None:
    """After the read: None when the planned bytes are still there, else why they are not (the
    file shrank or its head was rewritten in place while it was read)."""
    if item.fd is None:
        return "it was not open"
    size = os.fstat(item.fd).st_size
    if size < item.end:
        return f"it shrank from {item.end} to {size} bytes while it was read"
    if _fingerprint_fd(item.fd, item.fp_len) != item.fingerprint:
        return "its first bytes changed while it was read"
    return None


def close_planned(item: SpanFile) -> None:
    if item.fd is not None:
        os.close(item.fd)
        item.fd = None
