"""Span file formats: turning what DuckDB cannot read itself
(``format: proto``, zstd framing, a byte range of a growing file) into JSON lines (docs/lake.md).

Whole ``Export*ServiceRequest`` messages are converted at a time; no Python code touches spans.
Every read goes through the handle ``scan.open_planned`` gave (``fd``), never through the name,
so the bytes converted are the bytes that were planned.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

from spanrl.errors import resource_trouble
from spanrl.ingest.scan import WHOLE_STREAMS, Reject, SpanFile, pinned_path, sniff_head


def copy_range(fd: int, start: int, end: int, dst: Path) -> None:
    """Bytes [start, end) of the open file ``fd`` into ``dst`` (the unread part of an active file,
    whose end may be growing: only the planned bytes are taken)."""
    with open(dst, "wb") as fout:
        pos = start
        while pos < end:
            try:
                n = os.copy_file_range(fd, fout.fileno(), end - pos, pos)
            except OSError:  # not supported between these file systems: copy through user space
                chunk = os.pread(fd, min(end - pos, 1 << 22), pos)
                n = fout.write(chunk)
            if n == 0:
                break  # the file shrank under us: ``scan.check_unchanged`` reports it
            pos += n


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


def _zstd_decompress_stream(src: Path, dst: Path) -> str | None:
    """Whole-file zstd stream (native-compression gate) -> dst; returns an error text if torn."""
    import zstandard

    with open(src, "rb") as fin, open(dst, "wb") as fout:
        reader = zstandard.ZstdDecompressor().stream_reader(fin, read_across_frames=True)
        try:
            shutil.copyfileobj(reader, fout, 1 << 22)
        except zstandard.ZstdError as exc:
            return f"zstd stream ends early or is corrupt ({exc})"
    return None


def _gzip_decompress_stream(src: Path, dst: Path) -> str | None:
    """Whole-file gzip stream (members one after another, as ``gzip`` and logrotate write them) -> dst;
    returns an error text if torn or corrupt (what decompressed before the damage is kept)."""
    import gzip
    import zlib

    with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
        try:  # small reads: a read that meets the damage returns nothing, so keep the loss to one of them
            shutil.copyfileobj(fin, fout, 1 << 16)
        except (EOFError, OSError, zlib.error) as exc:
            if resource_trouble(exc):
                raise
            return f"gzip stream ends early or is corrupt ({exc})"
    return None


def _read_all(fd: int, size: int) -> bytes:
    parts, pos = [], 0
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        parts.append(chunk)
        pos += len(chunk)
    return b"".join(parts)


def decode_to_json_lines(item: SpanFile, fd: int, dst: Path) -> Path:
    """Bring the planned bytes of any supported span file into JSON lines; torn frames become rejects.

    Returns the path DuckDB should read: the pinned file itself (``/proc/self/fd/N``) when a closed
    JSON file is read whole, else ``dst``. Only an active file's unread range is ever copied.
    """
    fmt = item.fmt
    if fmt == "json":
        if item.start == 0 and item.end == item.size and not item.active:
            return pinned_path(fd)
        copy_range(fd, item.start, item.end, dst)
        return dst
    if fmt in WHOLE_STREAMS:
        raw = dst.with_suffix(".raw")
        err = (_zstd_decompress_stream if fmt == "zstd-stream" else _gzip_decompress_stream)(pinned_path(fd), raw)
        if err and not item.active:
            item.rejects.append(Reject(str(item.path), 0, err))
        size = raw.stat().st_size
        with open(raw, "rb") as fh:
            inner = SpanFile(path=raw, size=size, fingerprint="", fp_len=0, fmt=sniff_head(fh.read(64)),
                             signal=item.signal, active=False, end=size)
            if inner.fmt == "json":
                return raw
            inner.path = item.path  # rejects name the span file, not the temp file
            out = decode_to_json_lines(inner, fh.fileno(), dst)
        item.rejects.extend(inner.rejects)
        return out
    import zstandard

    data = _read_all(fd, item.size)
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
                if resource_trouble(exc):  # but a full disk under the work folder is not the frame's fault
                    raise
                item.rejects.append(Reject(str(item.path), index, f"cannot decode frame: {exc}"))
        item.end = last_end if item.active else item.size
    return dst


def split_lines(src: Path, work: Path, piece_bytes: int) -> list[Path]:
    """``src`` cut after newlines into pieces of about ``piece_bytes`` under ``work`` (``[src]`` when
    it is at most two pieces). DuckDB's read_ndjson holds the parse of a file's whole buffer at once; a
    list of pieces is parsed in smaller batches (stage 1 of a 60k-span night, one 67 MB file: peak
    600 -> 477 MB, the same time). The pieces are whole lines, in order, copied in the kernel
    (copy_file_range)."""
    size = src.stat().st_size
    if size <= 2 * piece_bytes:
        return [src]
    fd = os.open(src, os.O_RDONLY)
    try:
        cuts = [0]
        while cuts[-1] + piece_bytes < size:
            cut = _next_line_start(fd, cuts[-1] + piece_bytes, size)
            if cut >= size:
                break
            cuts.append(cut)
        cuts.append(size)
        pieces = []
        for i, (start, end) in enumerate(zip(cuts, cuts[1:], strict=False)):
            pieces.append(work / f"piece-{i:04d}.jsonl")
            copy_range(fd, start, end, pieces[-1])
        return pieces
    finally:
        os.close(fd)


def _next_line_start(fd: int, pos: int, size: int) -> int:
    """The offset just past the first newline at or after ``pos`` (``size`` when there is none)."""
    while pos < size:
        block = os.pread(fd, 1 << 16, pos)
        if not block:  # the file shrank under us: scan.check_unchanged reports it
            return size
        idx = block.find(b"\n")
        if idx >= 0:
            return pos + idx + 1
        pos += len(block)
    return size
