"""Stage 1 on hand-made span files: every format, every bad-line case, incremental runs, dedupe."""

from __future__ import annotations

import gzip
import json
import shutil
import struct

import duckdb
import pytest
import zstandard

from spanrl.ingest.views import connect
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import (
    T0,
    log_line,
    log_record,
    new_span_id,
    new_trace_id,
    span,
    trace_line,
    write_lines,
)

CLOSED = "traces-2026-01-01T00-00-00.000.jsonl"  # a rotated backup: read once, to the end


def spans_of(data, where: str = "true") -> list[dict]:
    con = connect(data)
    cols = [d[0] for d in con.execute("SELECT * FROM spans LIMIT 0").description]
    return [dict(zip(cols, r, strict=True)) for r in con.execute(f"SELECT * FROM spans WHERE {where} ORDER BY start_ns").fetchall()]


def rejects_of(data) -> list[tuple]:
    return duckdb.sql(f"SELECT line, error FROM '{data}/lake/_rejects/*.parquet' ORDER BY line").fetchall()


def one_span_line(name: str = "s", **attrs) -> str:
    return trace_line([span(name, new_trace_id(), new_span_id(), attrs=attrs)])


def test_span_row_matches_design(tmp_path) -> None:
    tid, root, child = new_trace_id(), new_span_id(), new_span_id()
    line = trace_line([
        span("root", tid, root, kind=2),
        span("chat m", tid, child, parent=root, kind=3, start=T0 + 10, status=2, status_message="boom", attrs={
            "gen_ai.request.model": "m", "n": 42, "big": 2**62, "f": 0.25, "ok": True, "raw": b"\x00\x01",
            "ids": [1, 2, 3], "names": ["a", "b"], "kv": {"x": 1, "y": ["z"]}},
            events=[("exception", {"exception.type": "ValueError"})]),
    ], service="svc")
    write_lines(tmp_path / "otel" / CLOSED, [line])
    s = ingest(tmp_path)
    assert (s.spans, s.rejects, s.files) == (2, 0, 1)
    r0, r1 = spans_of(tmp_path)
    assert r0["parent_span_id"] is None and r0["kind"] == "SERVER" and r0["status_code"] == "UNSET"
    assert (r1["trace_id"], r1["span_id"], r1["parent_span_id"]) == (tid, child, root)
    assert (r1["kind"], r1["status_code"], r1["status_message"]) == ("CLIENT", "ERROR", "boom")
    assert r1["start_ns"] == T0 + 10 and r1["end_ns"] == T0 + 1_000_010 and r1["service_name"] == "svc"
    assert str(r1["date"]) == "2026-01-01" and r1["scope_name"] == "tests"
    attrs = json.loads(r1["attributes"])
    assert attrs == {"gen_ai.request.model": "m", "n": 42, "big": 2**62, "f": 0.25, "ok": True, "raw": "AAE=",
                     "ids": [1, 2, 3], "names": ["a", "b"], "kv": {"x": 1, "y": ["z"]}}
    assert json.loads(r1["events"])[0]["attributes"] == {"exception.type": "ValueError"}
    assert json.loads(r1["resource"]) == {"service.name": "svc"}
    assert r1["source_file"].endswith(CLOSED)
    con = connect(tmp_path)
    assert con.execute("SELECT attributes->>'gen_ai.request.model' FROM spans WHERE span_id = ?",
                       [child]).fetchone()[0] == "m"


def test_bad_lines_become_rejects_and_the_rest_loads(tmp_path) -> None:
    tid = new_trace_id()
    lines = [
        one_span_line("good1"),                                                   # 1
        "not json at all",                                                        # 2 not JSON
        '{"foo": 1}',                                                             # 3 wrong shape
        '{"resourceSpans": "abc"}',                                               # 4 wrong shape
        trace_line([span("noid", "", ""), span("good2", tid, new_span_id())]),    # 5 missing ids (1 of 2)
        "",                                                                       # blank: skipped
        one_span_line("weird", u={"fooValue": 1}),                                # 7 unknown value type: kept
        one_span_line("good3")[:-40],                                             # 8 torn last line
    ]
    lines[6] = lines[6].replace('{"kvlistValue":{"values":[{"key":"fooValue","value":{"intValue":"1"}}]}}',
                                '{"fooValue":1}')
    write_lines(tmp_path / "otel" / CLOSED, lines, trailing_newline=False)
    s = ingest(tmp_path)
    assert s.spans == 3 and s.rejects == 5
    got = rejects_of(tmp_path)
    assert [line for line, _ in got] == [2, 3, 4, 5, 8]
    errors = dict(got)
    assert errors[2] == "not JSON" and errors[3].startswith("wrong shape") and errors[4].startswith("wrong shape")
    assert errors[5].startswith("missing ids: 1 span") and errors[8].startswith("truncated line")
    names = {r["name"]: r for r in spans_of(tmp_path)}
    assert set(names) == {"good1", "good2", "weird"}
    assert json.loads(names["weird"]["attributes"]) == {"u": {"fooValue": 1}}


def test_ten_megabyte_attribute_is_kept_whole(tmp_path) -> None:
    big = "x" * (10 * 1024 * 1024)
    write_lines(tmp_path / "otel" / CLOSED, [one_span_line("big", prompt=big), one_span_line("small")])
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (2, 0)
    con = connect(tmp_path)
    assert con.execute("SELECT length(attributes->>'prompt') FROM spans WHERE name = 'big'").fetchone()[0] == len(big)


def test_a_line_past_the_first_read_size_loads_whole_without_the_slow_path(tmp_path, monkeypatch) -> None:
    """read_ndjson at maximum_object_size 16 MiB reads lines up to about 32 MiB; a 40 MiB batch line is
    past that, so the fast path reads the file again with the larger size (ingest/load.py), and every
    span loads, the long value whole, without the line-numbered path."""
    import spanrl.ingest.load as load

    def no_slow_path(*args, **kw):
        raise AssertionError("the 40 MiB line took the line-numbered path")

    monkeypatch.setattr(load, "load_slow", no_slow_path)
    big = "y" * (40 * 1024 * 1024)
    write_lines(tmp_path / "otel" / CLOSED, [one_span_line("small-1"), one_span_line("big", prompt=big),
                                            one_span_line("small-2")])
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (3, 0)
    con = connect(tmp_path)
    assert con.execute("SELECT length(attributes->>'prompt') FROM spans WHERE name = 'big'").fetchone()[0] == len(big)
    assert sorted(r[0] for r in con.execute("SELECT name FROM spans").fetchall()) == ["big", "small-1", "small-2"]


def test_rerun_adds_nothing_and_duplicates_are_kept_once(tmp_path) -> None:
    line = one_span_line("dup")
    write_lines(tmp_path / "otel" / CLOSED, [line, line, one_span_line("other")])  # exporter retry
    assert ingest(tmp_path).spans == 2
    assert ingest(tmp_path).files == 0  # closed file: ingested once
    shutil.copy(tmp_path / "otel" / CLOSED, tmp_path / "otel" / "traces-2026-01-02T00-00-00.000.jsonl")
    s = ingest(tmp_path)  # the same file copied under another name
    assert (s.files, s.spans, s.duplicates) == (1, 0, 3)
    assert len(spans_of(tmp_path)) == 2


def test_pre_v0131_lines(tmp_path) -> None:
    tid, sid = new_trace_id(), new_span_id()
    line = ('{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"old"}}]},'
            '"scopeSpans":[{"scope":{},"spans":[{"traceId":"TID","spanId":"SID","parentSpanId":"","name":"LOTR\\u003eStarWars",'
            '"kind":1,"startTimeUnixNano":"T0","endTimeUnixNano":"T1","attributes":[{"key":"q","value":{"stringValue":'
            '"a \\u003c b \\u0026 c"}}],"status":{}}]}]}]}')
    line = line.replace("TID", tid.upper()).replace("SID", sid.upper()).replace("T0", str(T0)).replace("T1", str(T0 + 5))
    write_lines(tmp_path / "otel" / CLOSED, [line])
    (r,) = spans_of(tmp_path) if ingest(tmp_path).spans == 1 else pytest.fail("not loaded")
    assert (r["trace_id"], r["span_id"], r["parent_span_id"]) == (tid, sid, None)
    assert r["name"] == "LOTR>StarWars" and json.loads(r["attributes"]) == {"q": "a < b & c"}


def test_active_file_is_read_to_its_last_newline_and_resumed(tmp_path) -> None:
    active = tmp_path / "otel" / "traces.jsonl"
    first, second = one_span_line("a"), one_span_line("b")
    active.parent.mkdir(parents=True)
    active.write_text(first + "\n" + second[:30])  # the collector is mid-write
    assert (ingest(tmp_path).spans, ingest(tmp_path).spans) == (1, 0)
    with open(active, "a") as fh:
        fh.write(second[30:] + "\n")
    s = ingest(tmp_path)
    assert (s.spans, s.rejects) == (1, 0)
    # rotation: the active file is renamed to a backup and a new one starts
    third = one_span_line("c")
    with open(active, "a") as fh:
        fh.write(third + "\n")
    active.rename(tmp_path / "otel" / "traces-2026-01-03T00-00-00.000.jsonl")
    active.write_text(one_span_line("d") + "\n")
    s = ingest(tmp_path)
    assert (s.spans, s.duplicates, s.rejects) == (2, 0, 0)  # c from the backup's unread tail, d from the new file
    assert [r["name"] for r in spans_of(tmp_path)] and {r["name"] for r in spans_of(tmp_path)} == {"a", "b", "c", "d"}


def _proto_request(name: str):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "proto-svc"
    sp = rs.scope_spans.add().spans.add(trace_id=bytes(range(16)), span_id=bytes(range(8)), name=name, kind=3,
                                        start_time_unix_nano=T0, end_time_unix_nano=T0 + 9)
    sp.attributes.add(key="n").value.int_value = 7
    sp.attributes.add(key="ids").value.array_value.values.add().int_value = 5
    return req


@pytest.mark.parametrize("framing", ["proto", "zstd-framed-proto", "zstd-framed-json", "zstd-stream"])
def test_proto_and_zstd_files(tmp_path, framing: str) -> None:
    req = _proto_request("p")
    line = one_span_line("j").encode()
    cctx = zstandard.ZstdCompressor()
    if framing == "proto":
        payloads = [req.SerializeToString()]
    elif framing == "zstd-framed-proto":
        payloads = [cctx.compress(req.SerializeToString())]
    elif framing == "zstd-framed-json":
        payloads = [cctx.compress(line)]
    else:
        payloads = None
    path = tmp_path / "otel" / "traces-2026-01-01T00-00-00.000.bin"
    path.parent.mkdir(parents=True)
    if payloads is None:
        path.write_bytes(cctx.compress(line + b"\n") + cctx.compress(one_span_line("k").encode() + b"\n"))
    else:
        path.write_bytes(b"".join(struct.pack(">I", len(p)) + p for p in payloads) + b"\x00\x00\x01")  # + torn frame
    s = ingest(tmp_path)
    rows = spans_of(tmp_path)
    if framing.endswith("proto"):
        (r,) = rows
        assert (r["trace_id"], r["span_id"], r["kind"]) == (bytes(range(16)).hex(), bytes(range(8)).hex(), "CLIENT")
        assert json.loads(r["attributes"]) == {"n": 7, "ids": [5]} and r["service_name"] == "proto-svc"
    else:
        assert {r["name"] for r in rows} == ({"j"} if framing == "zstd-framed-json" else {"j", "k"})
    assert s.rejects == (0 if framing == "zstd-stream" else 1)  # the torn frame at the end


def _lake_rows(data, table: str) -> set[tuple]:
    return set(connect(data).execute(f"SELECT trace_id, span_id, attributes FROM {table}").fetchall())


def test_gzipped_span_files_load_as_the_plain_ones_do(real_lake, tmp_path) -> None:
    """Span files compressed after the fact (logrotate's ``compress``: gzip, ``.gz``) were read as text: every
    line a "not JSON" reject, the file recorded as read, its spans lost. The real runs' files, gzipped (one of
    them as two members, as ``cat a.gz b.gz`` leaves it), give the real lake's rows."""
    files = sorted(p for p in (real_lake[0] / "otel").iterdir() if p.is_file())
    for i, path in enumerate(files):
        body = path.read_bytes()
        half = body.rfind(b"\n", 0, len(body) // 2) + 1
        packed = gzip.compress(body[:half]) + gzip.compress(body[half:]) if i == 0 else gzip.compress(body)
        (tmp_path / "otel").mkdir(exist_ok=True)
        (tmp_path / "otel" / (path.name + ".gz")).write_bytes(packed)
    s = ingest(tmp_path)
    assert s.rejects == 0 and s.spans > 0
    assert _lake_rows(tmp_path, "spans") == _lake_rows(real_lake[0], "spans")
    assert _lake_rows(tmp_path, "logs") == _lake_rows(real_lake[0], "logs")


def test_a_torn_gzip_file_keeps_what_came_before_the_damage(tmp_path) -> None:
    lines = [one_span_line(f"s{i}", pad="x" * 200) for i in range(3000)]
    blob = gzip.compress(("\n".join(lines) + "\n").encode())
    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / (CLOSED + ".gz")).write_bytes(blob[: len(blob) * 2 // 3])
    s = ingest(tmp_path)
    assert 0 < s.spans < 3000
    assert any("gzip stream ends early or is corrupt" in r.error for r in s.reject_samples)


def test_log_files(tmp_path) -> None:
    tid, sid = new_trace_id(), new_span_id()
    rec = log_record("gen_ai.choice", {"index": 0, "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}, tid, sid, T0)
    write_lines(tmp_path / "otel" / "logs-2026-01-01T00-00-00.000.jsonl", [log_line([rec]), log_line([rec])])
    s = ingest(tmp_path)
    assert (s.logs, s.duplicates, s.rejects) == (1, 1, 0)
    con = connect(tmp_path)
    row = con.execute("SELECT trace_id, span_id, event_name, body, severity_number, service_name FROM logs").fetchone()
    assert row[:3] == (tid, sid, "gen_ai.choice") and row[4:] == (9, "agent")
    assert json.loads(row[3])["message"]["tool_calls"][0]["function"]["name"] == "f"


def test_mixed_trace_and_log_lines_in_one_file(tmp_path) -> None:
    rec = log_record("gen_ai.user.message", {"content": "hi"}, new_trace_id(), new_span_id(), T0)
    write_lines(tmp_path / "otel" / CLOSED, [one_span_line("a"), log_line([rec])])
    s = ingest(tmp_path)
    assert (s.spans, s.logs, s.rejects) == (1, 1, 0)


def test_empty_lake_and_no_input(tmp_path) -> None:
    s = ingest(tmp_path)
    assert (s.files, s.spans) == (0, 0)
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM llm_calls").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == 0


def test_binary_garbage_is_one_reject_not_a_crash(tmp_path) -> None:
    write_lines(tmp_path / "otel" / CLOSED, [one_span_line("ok")])
    (tmp_path / "otel" / "traces-2026-01-05T00-00-00.000.jsonl").write_bytes(b'{"resourceSpans":\xff\xfe\x00garbage\n')
    s = ingest(tmp_path)
    assert s.spans == 1 and s.rejects == 1


def test_input_glob_and_directory(tmp_path) -> None:
    write_lines(tmp_path / "elsewhere" / "a-2026-01-01T00-00-00.000.jsonl", [one_span_line("a")])
    write_lines(tmp_path / "elsewhere" / "b-2026-01-01T00-00-00.000.json", [one_span_line("b")])
    assert ingest(tmp_path / "d1", input=str(tmp_path / "elsewhere" / "*.jsonl")).spans == 1
    assert ingest(tmp_path / "d2", input=str(tmp_path / "elsewhere")).spans == 2


def test_a_second_concurrent_run_is_refused(tmp_path) -> None:
    import threading

    from spanrl.errors import InputError
    from spanrl.ingest.load import lake_lock

    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another writer (a thread here; tests/transitions/test_build_lock.py: processes)
        with lake_lock(tmp_path / "lake"):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(30)
    try:
        with pytest.raises(InputError, match="another `spanrl ingest`"):
            ingest(tmp_path)
    finally:
        release.set()
        holder.join()
    assert ingest(tmp_path).files == 0  # the lock is released afterwards


def test_split_lines_cuts_whole_lines_in_order(tmp_path) -> None:
    from spanrl.ingest.decode import split_lines

    lines = [b"a" * n for n in (10, 300, 5, 2000, 40, 40, 40, 1)]  # the 2000-byte line is longer than a piece
    src = tmp_path / "f.jsonl"
    src.write_bytes(b"\n".join(lines))  # no newline after the last line
    (tmp_path / "work").mkdir()
    pieces = split_lines(src, tmp_path / "work", 100)
    assert len(pieces) > 2 and all(p.parent == tmp_path / "work" for p in pieces)
    assert b"".join(p.read_bytes() for p in pieces) == src.read_bytes()
    assert all(p.read_bytes().endswith(b"\n") for p in pieces[:-1])
    assert b"a" * 2000 + b"\n" in [line + b"\n" for p in pieces for line in p.read_bytes().split(b"\n")]
    assert split_lines(src, tmp_path / "work", len(src.read_bytes())) == [src]  # small: read as it is


def test_a_file_read_as_pieces_loads_the_same_rows_and_numbers_bad_lines(tmp_path, monkeypatch) -> None:
    """A file over two pieces is read as line-aligned pieces in one COPY (load.split_lines): the same
    rows as reading it whole; a bad line still sends the whole file down the line-numbered path."""
    import spanrl.ingest.load as load

    lines = [one_span_line(f"s{i}", pad="p" * (i * 37 % 500)) for i in range(60)]
    write_lines(tmp_path / "whole" / "otel" / CLOSED, lines)
    ingest(tmp_path / "whole")
    monkeypatch.setattr(load, "PIECE_BYTES", 2048)
    pieces = []
    real_split = load.split_lines
    monkeypatch.setattr(load, "split_lines", lambda *a: pieces.extend(real_split(*a)) or pieces)
    write_lines(tmp_path / "pieces" / "otel" / CLOSED, lines)
    s = ingest(tmp_path / "pieces")
    assert s.spans == 60 and s.rejects == 0 and len(pieces) > 10
    def rows(data) -> list[dict]:
        return sorted(({k: v for k, v in r.items() if k not in ("source_file", "ingested_at")}
                       for r in spans_of(data)), key=lambda r: r["span_id"])

    assert rows(tmp_path / "pieces") == rows(tmp_path / "whole")

    pieces.clear()
    write_lines(tmp_path / "bad" / "otel" / CLOSED, lines[:30] + ["not json"] + lines[30:])
    s = ingest(tmp_path / "bad")
    assert s.spans == 60 and [line for line, _ in rejects_of(tmp_path / "bad")] == [31] and len(pieces) > 10
