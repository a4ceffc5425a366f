"""Byte-for-byte golden tests of the collector JSON (reference/otel-formats.md §1.3).

The expected lines in tests/data/collector/ were written by hand from the pdata rules (and the first is
the collector's own golden line from ptraceotlp/request_test.go), not produced by our serialiser.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from spanrl.collector.decode import decode_json
from spanrl.collector.otlpjson import format_double, logs_to_json, quote, traces_to_json

DATA = Path(__file__).resolve().parents[1] / "data" / "collector"
TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
SPAN_ID = bytes.fromhex("eee19b7ec3c1b174")
PARENT_ID = bytes.fromhex("eee19b7ec3c1b173")


def golden(name: str) -> bytes:
    text = (DATA / name).read_bytes()
    assert text.endswith(b"\n") and text.count(b"\n") == 1
    return text[:-1]


def set_value(v: Any, py: Any) -> None:
    """Python value -> AnyValue (dict -> kvlist, list -> array, None -> unset)."""
    if py is None:
        return
    if isinstance(py, bool):
        v.bool_value = py
    elif isinstance(py, int):
        v.int_value = py
    elif isinstance(py, float):
        v.double_value = py
    elif isinstance(py, str):
        v.string_value = py
    elif isinstance(py, bytes):
        v.bytes_value = py
    elif isinstance(py, list):
        v.array_value.SetInParent()
        for item in py:
            set_value(v.array_value.values.add(), item)
    elif isinstance(py, dict):
        v.kvlist_value.SetInParent()
        add_attrs(v.kvlist_value.values, py)


def add_attrs(target: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        kv = target.add(key=key)
        set_value(kv.value, value)


def test_collector_own_golden_line() -> None:
    req = ExportTraceServiceRequest()
    req.resource_spans.add().scope_spans.add().spans.add(name="test_span")
    assert traces_to_json(req) == golden("collector_golden.jsonl")


def test_every_any_value_type() -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    add_attrs(rs.resource.attributes, {"service.name": "agent"})
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = "s", "1.0"
    span = ss.spans.add(trace_id=bytes(range(16)), span_id=bytes(range(1, 9)), name="any", kind=1,
                        start_time_unix_nano=1, end_time_unix_nano=2)
    add_attrs(span.attributes, {
        "str": "hello", "empty_str": "", "bool_t": True, "bool_f": False, "int": 42, "int_neg": -7,
        "int_zero": 0, "int_max": 2**63 - 1, "double": 0.7, "double_one": 1.0, "double_zero": 0.0,
        "arr": ["a", 1, True], "arr_empty": [], "kv": {"k": "v", "n": {"inner": 1.5}}, "kv_empty": {},
        "bytes": b"\x00\xffhi", "bytes_empty": b"", "empty": None, "": "nokey",
    })
    assert traces_to_json(req) == golden("any_values.jsonl")


def test_span_with_events_links_status_and_dropped_counts() -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.21.0")
    rs.resource.dropped_attributes_count = 1
    ss = rs.scope_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    ss.scope.name = "agent.tracer"
    add_attrs(ss.scope.attributes, {"scope.attr": "x"})
    ss.scope.dropped_attributes_count = 2
    span = ss.spans.add(trace_id=TRACE_ID, span_id=SPAN_ID, trace_state="k=v", parent_span_id=PARENT_ID,
                        flags=768, name="chat", kind=3, start_time_unix_nano=1700000000000000000,
                        end_time_unix_nano=1700000000500000000, dropped_attributes_count=2,
                        dropped_events_count=3, dropped_links_count=5)
    add_attrs(span.attributes, {"a": 1})
    ev = span.events.add(time_unix_nano=1700000000100000000, name="gen_ai.choice", dropped_attributes_count=1)
    add_attrs(ev.attributes, {"index": 0})
    span.events.add(name="no_time")
    link = span.links.add(trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
                          span_id=bytes.fromhex("b7ad6b7169203331"), trace_state="x=y",
                          dropped_attributes_count=4, flags=256)
    add_attrs(link.attributes, {"l": True})
    span.status.message, span.status.code = "boom", 2
    root = ss.spans.add(trace_id=TRACE_ID, span_id=PARENT_ID, parent_span_id=bytes(8), flags=256, name="root",
                        kind=2, start_time_unix_nano=1699999999000000000, end_time_unix_nano=1700000001000000000)
    root.status.code = 1
    assert traces_to_json(req) == golden("span_full.jsonl")


def test_escaping_non_ascii_and_go_floats() -> None:
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add(name='naïve <span> & "quotes"')
    add_attrs(span.attributes, {
        "ctrl": "a\x00b\x01\x08\t\n\x0c\r\x1f", "html": '<a href="x">&amp;</a>',
        "uni": "héllo ✓ 日本 😀 \u2028\u2029 \x7f", "backslash": "C:\\path\\b\\f",
        "nan": math.nan, "inf": math.inf, "ninf": -math.inf, "neg_zero": -0.0, "e21": 1e21, "e20": 1e20,
        "small": 1.5e-7, "e_6": 1e-6, "tiny": 1e-300, "huge_neg": -1.7976931348623157e308,
        "frac": 123456.789, "third": 1 / 3,
    })
    assert traces_to_json(req) == golden("strings_floats.jsonl")


def test_log_records() -> None:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    add_attrs(rl.resource.attributes, {"service.name": "agent"})
    sl = rl.scope_logs.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    sl.scope.name = "opentelemetry.instrumentation.openai_v2"
    rec = sl.log_records.add(time_unix_nano=1700000000000000000, observed_time_unix_nano=1700000000000000001,
                             severity_number=9, severity_text="INFO", dropped_attributes_count=1, flags=1,
                             trace_id=TRACE_ID, span_id=SPAN_ID, event_name="gen_ai.user.message")
    set_value(rec.body, {"content": "hi"})
    add_attrs(rec.attributes, {"gen_ai.system": "openai"})
    sl.log_records.add(observed_time_unix_nano=5)
    assert logs_to_json(req) == golden("logs.jsonl")


def test_openai_v2_example_from_reference() -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    add_attrs(rs.resource.attributes, {"service.name": "agent"})
    ss = rs.scope_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    ss.scope.name = "opentelemetry.instrumentation.openai_v2"
    span = ss.spans.add(trace_id=TRACE_ID, span_id=SPAN_ID, parent_span_id=PARENT_ID, flags=256,
                        name="chat gpt-4o-mini", kind=3, start_time_unix_nano=1700000000000000000,
                        end_time_unix_nano=1700000000500000000)
    add_attrs(span.attributes, {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 24,
                                "gen_ai.request.temperature": 0.7})
    assert traces_to_json(req) == golden("openai_v2_span.jsonl")


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1"), (0.5, "0.5"), (-2.25, "-2.25"), (1e20, "100000000000000000000"), (1e21, "1e+21"),
    (1.5e-7, "1.5e-7"), (1e-6, "0.000001"), (9.99e-7, "9.99e-7"), (1e-10, "1e-10"), (1e100, "1e+100"),
    (5e-324, "5e-324"), (0.1 + 0.2, "0.30000000000000004"), (-0.0, "-0"), (0.0, "0"),
    (123456789012345680000.0, "123456789012345680000"), (math.nan, '"NaN"'), (math.inf, '"+Inf"'),
    (-math.inf, '"-Inf"'),
])
def test_go_float_text(value: float, text: str) -> None:
    assert format_double(value) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("plain", '"plain"'), ("\b\f", '"\\u0008\\u000c"'), ("\\b", '"\\\\b"'), ("<>&", '"<>&"'),
    ("\x7f\u2028", '"\x7f\u2028"'), ("\x00\x1f", '"\\u0000\\u001f"'), ('"\\', '"\\"\\\\"'),
])
def test_quote_like_jsoniter(text: str, expected: str) -> None:
    assert quote(text) == expected


_scalars = st.one_of(st.text(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), st.binary(max_size=20))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=8)


@settings(max_examples=100, deadline=None)
@given(attrs=st.dictionaries(st.text(max_size=10), _values, max_size=5), name=st.text(),
       ids=st.tuples(st.binary(min_size=16, max_size=16), st.binary(min_size=8, max_size=8)))
def test_output_is_valid_otlp_json_that_round_trips(attrs: dict[str, Any], name: str,
                                                    ids: tuple[bytes, bytes]) -> None:
    """Any message -> our line parses as JSON, and decoding it as OTLP/JSON and writing it again gives the
    same bytes (the line is a fixed point, so ingest and the collector read what we wrote)."""
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add(name=name, trace_id=ids[0], span_id=ids[1])
    add_attrs(span.attributes, attrs)
    line = traces_to_json(req)
    json.loads(line)
    assert b"\n" not in line
    assert traces_to_json(decode_json("traces", line).request) == line
