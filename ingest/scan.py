"""Which span files are new, from which byte offset, and in which format (DESIGN §3).

The collector writes an *active* file (``traces.jsonl``) and renames it to a backup with a UTC
timestamp when it rotates (``traces-2026-01-02T15-04-05.000.jsonl``, or ``...-size.jsonl``).
``lake/_files.parquet`` remembers, per path, its size, a fingerprint of its first bytes, how many
rows it gave and the byte offset read so far. A closed file is read once; the active file is read
up to its last newline and resumed from there; a rotated backup whose head matches a recorded
active file resumes at that file's offset, so rotation never re-reads a byte.

Everything DuckDB cannot read itself (``format: proto``, zstd framing) is converted here into
JSON lines, whole ``Export*ServiceRequest`` messages at a time; no Python code touches spans.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
FINGERPRINT_BYTES = 4096
# lumberjack: name-2006-01-02T15-04-05.000.ext; timberjack: name-2006-01-02T15-04-05.000-size.ext
_ROTATED = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?(?:-[a-z]+)?(?:\.[^.]+)*$")

FILES_SCHEMA = pa.schema([
    ("path", pa.string()), ("size", pa.int64()), ("fingerprint", pa.string()), ("fp_len", pa.int64()),
    ("format", pa.string()), ("signal", pa.string()), ("active", pa.bool_()), ("offset", pa.int64()),
    ("rows", pa.int64()), ("rejects", pa.int64()), ("status", pa.string()), ("ingested_at", pa.timestamp("us")),
])


@dataclass
class Reject:
    """One bad line (or frame) of a span file: where, and what was wrong."""

    file: str
    line: int
    error: str
    excerpt: str = ""


@dataclass
class SpanFile:
    """One unit of work: bytes [start, end) of ``path`` still to ingest."""

    path: Path
    size: int
    fingerprint: str
    fp_len: int
    fmt: str  # json | proto | zstd-framed | zstd-stream
    signal: str  # traces | logs (a guess from the name; mixed JSON files still work)
    active: bool
    start: int = 0
    end: int = 0
    first_line: int = 1  # line number of the byte at ``start``
    prior_rows: int = 0
    rejects: list[Reject] = field(default_factory=list)


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
    return [p.resolve() for p in paths if not p.name.startswith(".") and p.stat().st_size > 0]


def sniff_format(path: Path) -> str:
    """JSON lines, zstd stream, length+zstd frames, or length-framed protobuf."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    stripped = head.lstrip(b" \t\r\n")
    if stripped.startswith(b"{") or (not stripped and head):
        return "json"
    if head.startswith(ZSTD_MAGIC):
        return "zstd-stream"
    if len(head) >= 8 and head[4:8] == ZSTD_MAGIC:
        return "zstd-framed"
    return "proto"


def fingerprint(path: Path, length: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read(length)).hexdigest()


def read_file_state(lake: Path) -> dict[str, dict]:
    """``lake/_files.parquet`` as {path: record}; empty when the lake is new."""
    path = lake / "_files.parquet"
    if not path.exists():
        return {}
    return {r["path"]: r for r in pq.read_table(path).to_pylist()}


def write_file_state(lake: Path, records: dict[str, dict]) -> None:
    """Rewritten whole (it is one row per file) into a temp file, then renamed into place."""
    lake.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(sorted(records.values(), key=lambda r: r["path"]), schema=FILES_SCHEMA)
    tmp = lake / "_files.parquet.tmp"
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(lake / "_files.parquet")


def _resume_point(path: Path, size: int, state: dict[str, dict]) -> dict | None:
    """The record this file continues: its own, or (for a fresh backup) the active file it was."""
    own = state.get(str(path))
    candidates = [own] if own else [r for r in state.values() if r["active"] and r["path"] != str(path)
                                    and Path(r["path"]).parent == path.parent]
    for rec in candidates:
        if rec["fp_len"] <= size and fingerprint(path, rec["fp_len"]) == rec["fingerprint"]:
            return rec
    return None


def _last_newline_end(path: Path, start: int, size: int) -> int:
    """Offset just past the last newline at or after ``start`` (``start`` when there is none)."""
    block = 1 << 20
    with open(path, "rb") as fh:
        pos = size
        while pos > start:
            lo = max(start, pos - block)
            fh.seek(lo)
            chunk = fh.read(pos - lo)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                return lo + idx + 1
            pos = lo
    return start


def _count_newlines(path: Path, end: int) -> int:
    n = 0
    with open(path, "rb") as fh:
        left = end
        while left > 0:
            chunk = fh.read(min(left, 1 << 22))
            if not chunk:
                break
            n += chunk.count(b"\n")
            left -= len(chunk)
    return n


def plan_files(paths: list[Path], state: dict[str, dict]) -> list[SpanFile]:
    """The work to do this run: new files, grown active files, backups not yet read to the end."""
    plan: list[SpanFile] = []
    for path in paths:
        size = path.stat().st_size
        fp_len = min(size, FINGERPRINT_BYTES)
        fmt = sniff_format(path)
        item = SpanFile(path=path, size=size, fingerprint=fingerprint(path, fp_len), fp_len=fp_len, fmt=fmt,
                        signal=signal_of(path), active=is_active(path), end=size)
        rec = _resume_point(path, size, state)
        own = rec is not None and rec["path"] == str(path)
        if own and rec["status"] == "closed" and rec["size"] == size:
            continue  # a closed file is ingested once
        if rec is not None and fmt != "zstd-stream":  # a zstd stream cannot be resumed mid-way
            item.start = min(rec["offset"], size)
            item.prior_rows = rec["rows"] if own else 0
        if fmt == "json" and item.active:
            item.end = _last_newline_end(path, item.start, size)
        if own and item.end <= item.start and item.active:
            continue  # nothing new since last run
        if fmt == "json" and item.start:
            item.first_line = _count_newlines(path, item.start) + 1
        plan.append(item)
    return plan


# ---------------------------------------------------------------- formats DuckDB cannot read itself


def copy_range(src: Path, start: int, end: int, dst: Path) -> None:
    """Bytes [start, end) of ``src`` into ``dst`` (the unread tail of an active file)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fin.seek(start)
        left = end - start
        while left > 0:
            chunk = fin.read(min(left, 1 << 22))
            if not chunk:
                break
            fout.write(chunk)
            left -= len(chunk)


def iter_frames(buf: bytes | memoryview, start: int = 0) -> Iterator[tuple[int, int, bytes | None]]:
    """(index, end offset, payload) for each ``[u32 BE length][payload]``; payload None if torn."""
    pos, index, n = start, 1, len(buf)
    while pos < n:
        if n - pos < 4:
            yield index, n, None
            return
        (length,) = struct.unpack_from(">I", buf, pos)
        if pos + 4 + length > n:
            yield index, n, None
            return
        yield index, pos + 4 + length, bytes(buf[pos + 4:pos + 4 + length])
        pos += 4 + length
        index += 1


def _proto_to_json_line(payload: bytes, signal: str) -> bytes:
    """One whole ExportTraceServiceRequest / ExportLogsServiceRequest -> one OTLP/JSON line.

    The protobuf JSON mapping writes ids as base64 (the load SQL accepts both) and enums as numbers.
    """
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = ExportLogsServiceRequest() if signal == "logs" else ExportTraceServiceRequest()
    msg.ParseFromString(payload)
    return MessageToJson(msg, use_integers_for_enums=True, indent=None).replace("\n", " ").encode() + b"\n"


def _zstd_decompress_stream(path: Path, dst: Path) -> str | None:
    """Whole-file zstd stream (native-compression gate) -> dst; returns an error text if torn."""
    import zstandard

    with open(path, "rb") as fin, open(dst, "wb") as fout:
        reader = zstandard.ZstdDecompressor().stream_reader(fin, read_across_frames=True)
        try:
            shutil.copyfileobj(reader, fout, 1 << 22)
        except zstandard.ZstdError as exc:
            return f"zstd stream ends early or is corrupt ({exc})"
    return None


def decode_to_json_lines(item: SpanFile, dst: Path) -> Path:
    """Bring any supported span file into JSON lines; records torn frames as rejects.

    Returns the path DuckDB should read (``item.path`` itself when nothing needs converting).
    """
    fmt = item.fmt
    if fmt == "json":
        if item.start == 0 and item.end == item.size:
            return item.path
        copy_range(item.path, item.start, item.end, dst)
        return dst
    if fmt == "zstd-stream":
        raw = dst.with_suffix(".raw")
        err = _zstd_decompress_stream(item.path, raw)
        if err and not item.active:
            item.rejects.append(Reject(str(item.path), 0, err))
        inner = SpanFile(path=raw, size=raw.stat().st_size, fingerprint="", fp_len=0, fmt=sniff_format(raw),
                         signal=item.signal, active=False, end=raw.stat().st_size)
        if inner.fmt == "json":
            return raw
        out = decode_to_json_lines(inner, dst)
        item.rejects.extend(inner.rejects)
        return out
    import zstandard

    data = item.path.read_bytes()
    dctx = zstandard.ZstdDecompressor()
    with open(dst, "wb") as out:
        last_end = item.start
        for index, end, payload in iter_frames(data, item.start):
            if payload is None:
                if not item.active:
                    item.rejects.append(Reject(str(item.path), index, "truncated frame (the file ends mid-message)"))
                break
            last_end = end
            try:
                if fmt == "zstd-framed":
                    payload = dctx.decompress(payload)
                if payload.lstrip()[:1] == b"{":
                    out.write(payload.rstrip(b"\n") + b"\n")
                else:
                    out.write(_proto_to_json_line(payload, item.signal))
            except Exception as exc:  # noqa: BLE001 - any decode failure is a reject, never a crash
                item.rejects.append(Reject(str(item.path), index, f"cannot decode frame: {exc}"))
        item.end = last_end if item.active else item.size
    return dst
