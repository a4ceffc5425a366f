"""Small pure pieces of stage 1: quoting, active-file names, format sniffing, the resume plan."""

from __future__ import annotations

import duckdb
import pytest

from spanrl.errors import InputError
from spanrl.ingest.scan import is_active, plan_files, read_file_state, sniff_format
from spanrl.ingest.views import render_sql, sql_literal


@pytest.mark.parametrize("value", ["plain.jsonl", "it's here/x.jsonl", "a''b", "dir with space/*.parquet", "ü/ñ"])
def test_sql_literal_round_trips_through_duckdb(value: str) -> None:
    assert duckdb.sql(f"SELECT {sql_literal(value)}").fetchall()[0][0] == value


def test_sql_literal_lists_and_nul() -> None:
    lit = sql_literal(["a", "b'c"])
    assert duckdb.sql(f"SELECT {lit}").fetchall()[0][0] == ["a", "b'c"]
    with pytest.raises(InputError):
        sql_literal("bad\x00path")


def test_render_sql_fills_only_literals() -> None:
    text = render_sql("trace_batches_ndjson", src="/x/it's.jsonl", source_file="/x/it's.jsonl", max_object_size=1 << 24)
    assert "'/x/it''s.jsonl'" in text and "maximum_object_size = 16777216" in text and "${" not in text


@pytest.mark.parametrize("name,active", [
    ("traces.jsonl", True), ("logs.jsonl", True), ("traces-2026-01-02T15-04-05.000.jsonl", False),
    ("traces-2026-01-02T15-04-05.000-size.jsonl", False), ("logs-2026-01-02T15-04-05.123.jsonl.zst", False)])
def test_active_file_is_the_one_without_rotation_timestamp(tmp_path, name: str, active: bool) -> None:
    assert is_active(tmp_path / name) is active


def test_sniff_format(tmp_path) -> None:
    cases = {"a": b'\n{"resourceSpans":[]}\n', "b": b"\x28\xb5\x2f\xfd....", "c": b"\x00\x00\x00\x05\x28\xb5\x2f\xfd.",
             "d": b"\x00\x00\x00\x02\x0a\x00"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    assert [sniff_format(tmp_path / n) for n in "abcd"] == ["json", "zstd-stream", "zstd-framed", "proto"]


def test_plan_skips_closed_files_already_read(tmp_path) -> None:
    closed = tmp_path / "traces-2026-01-02T15-04-05.000.jsonl"
    closed.write_text('{"resourceSpans":[]}\n')
    (item,) = plan_files([closed], {})
    assert (item.start, item.end, item.active) == (0, closed.stat().st_size, False)
    state = {str(closed): {"path": str(closed), "size": item.size, "fingerprint": item.fingerprint,
                           "fp_len": item.fp_len, "active": False, "offset": item.end, "rows": 0, "status": "closed"}}
    assert plan_files([closed], state) == []
    assert read_file_state(tmp_path / "nolake") == {}
