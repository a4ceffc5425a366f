"""Stage 1 never marks bytes as ingested that it did not read (issue 9, items 1-3).

Rotation between plan and read, odd file heads (BOM, NUL bytes, a torn first line), files deleted or
truncated while ingest runs, and garbage files: each is either ingested in full or made visible (a
reject with file and line, or a warning with the path), never silently lost.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from spanrl.ingest.load import load_lake
from spanrl.ingest.views import connect
from spanrl.transitions.config import IngestConfig
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

CLOSED = "traces-2026-01-01T00-00-00.000.jsonl"


def span_lines(prefix: str, n: int) -> list[str]:
    return [trace_line([span(f"{prefix}{i}", new_trace_id(), new_span_id())]) for i in range(n)]


def names(data: Path) -> list[str]:
    return sorted(r[0] for r in connect(data).execute("SELECT name FROM spans").fetchall())


def rejects_of(data: Path) -> list[tuple]:
    if not any((data / "lake" / "_rejects").glob("*.parquet")):
        return []
    return duckdb.sql(f"SELECT file, line, error FROM '{data}/lake/_rejects/*.parquet' ORDER BY file, line").fetchall()


def ingest(data: Path, on_plan=None):
    return load_lake(IngestConfig(data=data, no_transitions=True, threads=2), on_plan=on_plan)


def rotate(active: Path, backup_name: str, new_lines: list[str]) -> None:
    """What the collector does: rename the active file to its backup name, start a new one."""
    active.rename(active.with_name(backup_name))
    write_lines(active, new_lines)


# ---------------------------------------------------------------- 1. rotation between plan and read


def test_rotation_between_plan_and_read_loses_nothing(tmp_path) -> None:
    """The collector rotates after ingest planned ``traces.jsonl`` and before it read it: the planned
    bytes are still the ones read, and the next run resumes the backup where this run stopped."""
    active = tmp_path / "otel" / "traces.jsonl"
    write_lines(active, span_lines("a", 3))
    assert ingest(tmp_path).spans == 3
    with open(active, "a") as fh:  # more lines arrive; the next run plans them
        fh.write("\n".join(span_lines("b", 4)) + "\n")

    def rotate_now(plan) -> None:
        with open(active, "a") as fh:  # written after the plan: belongs to the next run
            fh.write("\n".join(span_lines("c", 2)) + "\n")
        rotate(active, "traces-2026-01-02T00-00-00.000.jsonl", span_lines("d", 5))

    first = ingest(tmp_path, on_plan=rotate_now)
    assert first.spans == 4 and first.rejects == 0  # exactly the planned b lines
    second = ingest(tmp_path)
    assert (second.spans, second.duplicates, second.rejects) == (7, 0, 0)  # c from the backup, d from the new file
    expected = sorted([f"a{i}" for i in range(3)] + [f"b{i}" for i in range(4)] + [f"c{i}" for i in range(2)]
                      + [f"d{i}" for i in range(5)])
    assert names(tmp_path) == expected
    assert ingest(tmp_path).files == 0


# ---------------------------------------------------------------- 2. odd heads: sniff per line


def test_bom_at_the_head_loses_no_span(tmp_path) -> None:
    path = tmp_path / "otel" / CLOSED
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(span_lines("s", 3)) + "\n").encode())
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (3, 0)


def test_nul_bytes_at_the_head_reject_only_that_line(tmp_path) -> None:
    """A power cut without --fsync leaves NUL bytes where a write was lost; the collector then ends
    that line on restart. Only the NUL line is a reject, with its file and line number."""
    path = tmp_path / "otel" / CLOSED
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00" * 300 + b"\n" + ("\n".join(span_lines("s", 3)) + "\n").encode())
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (3, 1)
    assert [(Path(f).name, line) for f, line, _ in rejects_of(tmp_path)] == [(CLOSED, 1)]


def test_nul_bytes_glued_to_a_line_keep_the_line(tmp_path) -> None:
    path = tmp_path / "otel" / CLOSED
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00" * 64 + ("\n".join(span_lines("s", 3)) + "\n").encode())
    assert (ingest(tmp_path).spans, len(rejects_of(tmp_path))) == (3, 0)


def test_torn_first_line_rejects_only_that_line(tmp_path) -> None:
    lines = span_lines("s", 4)
    path = tmp_path / "otel" / CLOSED
    write_lines(path, [lines[0][37:], *lines[1:]])  # the head of the first line is gone
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (3, 1)
    assert [line for _, line, _ in rejects_of(tmp_path)] == [1]


def test_invalid_utf8_line_rejects_only_that_line(tmp_path) -> None:
    lines = span_lines("s", 3)
    path = tmp_path / "otel" / CLOSED
    path.parent.mkdir(parents=True)
    path.write_bytes((lines[0] + "\n").encode() + b"\xff\xfe\x80 junk\n" + ("\n".join(lines[1:]) + "\n").encode())
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (3, 1)
    assert [line for _, line, _ in rejects_of(tmp_path)] == [2]


# ---------------------------------------------------------------- 3. deleted, truncated, garbage


def test_file_deleted_after_the_plan_is_still_read_in_full(tmp_path) -> None:
    path = tmp_path / "otel" / CLOSED
    write_lines(path, span_lines("s", 5))
    s = ingest(tmp_path, on_plan=lambda plan: path.unlink())
    assert (s.spans, s.rejects) == (5, 0)


def test_file_truncated_during_ingest_is_not_marked_done(tmp_path) -> None:
    """Truncated in place after the plan (copytruncate-style): nothing of it is recorded as done, a
    warning names it, and a rerun reads what the file then holds."""
    path = tmp_path / "otel" / CLOSED
    write_lines(path, span_lines("s", 5))
    s = ingest(tmp_path, on_plan=lambda plan: os.truncate(path, 0))
    assert any(str(path) in w and "shrank" in w for w in s.warnings), s.warnings
    write_lines(path, span_lines("t", 2))
    again = ingest(tmp_path)
    assert again.files == 1 and again.spans == 2
    assert [n for n in names(tmp_path) if n.startswith("t")] == ["t0", "t1"]


def test_file_gone_before_it_is_planned_is_a_warning(tmp_path) -> None:
    from spanrl.ingest.scan import plan_files

    warnings: list[str] = []
    assert plan_files([tmp_path / "otel" / CLOSED], {}, warnings) == []
    assert len(warnings) == 1 and CLOSED in warnings[0] and "not recorded" in warnings[0]


def test_garbage_file_without_timestamp_is_rejected_once(tmp_path) -> None:
    """No rotation timestamp makes it 'active'; binary bytes with no newline were skipped silently
    and re-scanned every run. Now they are a reject naming the file, and consumed."""
    junk = tmp_path / "otel" / "junk.bin"
    junk.parent.mkdir(parents=True)
    junk.write_bytes(bytes(range(11, 256)) * 40)  # no newline
    write_lines(tmp_path / "otel" / CLOSED, span_lines("s", 2))
    s = ingest(tmp_path)
    assert s.spans == 2 and s.rejects == 1
    assert [Path(f).name for f, _, _ in rejects_of(tmp_path)] == ["junk.bin"]
    assert ingest(tmp_path).files == 0  # not re-read


# ---------------------------------------------------------------- 8. a corrupt lake manifest


def test_a_corrupt_manifest_is_rebuilt_not_a_crash_every_run(tmp_path) -> None:
    """lake/_files.parquet torn (or overwritten by a query result): moved aside with a warning, every
    span file read again, spans already in the lake dropped as duplicates; later runs are normal."""
    write_lines(tmp_path / "otel" / CLOSED, span_lines("s", 3))
    active = tmp_path / "otel" / "traces.jsonl"
    write_lines(active, span_lines("a", 2))
    assert ingest(tmp_path).spans == 5
    manifest = tmp_path / "lake" / "_files.parquet"
    for broken in (b"PAR1 torn", None):
        if broken is None:  # a valid Parquet file that is not the manifest (spanrl sql --out, before it refused)
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({"x": [1]}), manifest)
        else:
            manifest.write_bytes(broken)
        with open(active, "a") as fh:
            fh.write(span_lines(f"n{broken is None}-", 1)[0] + "\n")
        s = ingest(tmp_path)
        assert any("_files.parquet" in w and "rebuilt" in w for w in s.warnings), s.warnings
        assert s.spans == 1 and s.duplicates == 5 + (broken is None)
        assert list((tmp_path / "lake").glob("_files.parquet.corrupt-*"))
        assert ingest(tmp_path).files == 0
    assert len(names(tmp_path)) == 7 and len(set(names(tmp_path))) == 7


@pytest.mark.heavy  # ~15 s of real ingest processes: make reliability
def test_more_files_than_the_open_file_limit_wait_for_the_next_run(tmp_path) -> None:
    """Planned files are held open until read; past what the limit allows (keeping room for DuckDB)
    the rest of the backlog is a warning and is read by the next runs. Real processes with a low
    hard limit (``ulimit -n``), so the limit cannot simply be lifted."""
    import resource
    import subprocess
    import sys

    from spanrl.ingest.scan import FD_RESERVE

    for i in range(24):
        write_lines(tmp_path / "otel" / f"traces-2026-01-01T00-00-{i:02d}.000.jsonl", span_lines(f"f{i}-", 1))
    limit = FD_RESERVE + 16  # the interpreter holds a few; room for ~10 span files beside the reserve

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    outputs = []
    for _ in range(10):
        run = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(tmp_path), "--no-transitions"],
                             capture_output=True, text=True, preexec_fn=low_limit, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        outputs.append(run.stdout + run.stderr)
        if "no new span data" in outputs[-1]:
            break
    assert "left for the next run" in outputs[0]
    assert len(outputs) > 2 and len(names(tmp_path)) == 24
