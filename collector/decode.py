"""Request bodies -> OTLP request messages, for both front doors, with bounded memory.

OTLP/JSON is decoded span by span: ``json.loads`` of a whole body builds a Python object per value
(about 6x the body's size: a 60 MB body of minimal spans took the receiver to 611 MB), while walking the
``resourceSpans -> scopeSpans -> spans`` skeleton and decoding each span on its own keeps at most one
span's objects alive beside the text and the request message being built (about 3x the body).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

REQUEST_TYPES: dict[str, Any] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
# the nested arrays of each signal: (JSON names, proto field); the last level's elements are the items
_LAYOUT: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "traces": ((("resourceSpans", "resource_spans"), "resource_spans"),
               (("scopeSpans", "scope_spans"), "scope_spans"), (("spans",), "spans")),
    "logs": ((("resourceLogs", "resource_logs"), "resource_logs"),
             (("scopeLogs", "scope_logs"), "scope_logs"), (("logRecords", "log_records"), "log_records")),
}
_ID_LENGTHS = {"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8}
_WS = re.compile(r"[ \t\n\r]*")


class BadPayload(ValueError):
    """The request cannot be decoded; the message says what was wrong (sent back with 400)."""


@dataclass
class Decoded:
    signal: str
    request: Any
    items: int  # spans / log records / data points; 0 -> acknowledged and dropped, as the collector does
    size: int  # decoded body bytes


def decode_protobuf(signal: str, body: bytes | bytearray) -> Decoded:
    """Binary OTLP -> request message, with the id-length checks pdata applies."""
    request = REQUEST_TYPES[signal]()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadPayload(f"malformed protobuf {request.DESCRIPTOR.name}: {exc}") from None
    return Decoded(signal, request, count_and_check(signal, request), len(body))


def decode_json(signal: str, body: bytes | bytearray) -> Decoded:
    """OTLP/JSON (as JS exporters send it: camelCase, hex ids, int64 as string or number) -> request."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadPayload(f"malformed JSON: {exc}") from None
    request = REQUEST_TYPES[signal]()
    cursor = _Cursor(text)
    try:
        if cursor.peek() != "{":
            kind = type(cursor.value()).__name__ if cursor.peek() else "nothing"
            raise BadPayload(f"malformed OTLP/JSON: expected an object at the top, got {kind}")
        _parse_object(cursor, request, _LAYOUT.get(signal, ()))
        cursor.skip_ws()
        if cursor.pos != len(text):
            raise BadPayload(f"malformed JSON: extra data at char {cursor.pos}")
    except json.JSONDecodeError as exc:
        raise BadPayload(f"malformed JSON: {exc}") from None
    except (json_format.ParseError, RecursionError, ValueError, TypeError, AttributeError) as exc:
        if isinstance(exc, BadPayload):
            raise
        raise BadPayload(f"malformed OTLP/JSON {signal} request: {exc}") from None
    return Decoded(signal, request, count_and_check(signal, request), len(body))


class _Cursor:
    """A position in the JSON text; values are decoded one at a time with ``raw_decode``."""

    _decoder = json.JSONDecoder(parse_int=lambda text: -0.0 if text == "-0" else int(text))

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise BadPayload(f"malformed JSON: expected {char!r} at char {self.pos}")
        self.pos += 1

    def value(self) -> Any:
        self.skip_ws()
        obj, self.pos = self._decoder.raw_decode(self.text, self.pos)
        return obj

    def members(self) -> Iterator[str]:
        """Yields each key of an object; the caller reads its value before asking for the next."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise BadPayload(f"malformed JSON: object key expected at char {self.pos}")
            self.expect(":")
            yield key
            if self.peek() == "}":
                self.pos += 1
                return
            self.expect(",")

    def elements(self) -> Iterator[None]:
        """Yields once per array element; the caller reads the element each time."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield
            if self.peek() == "]":
                self.pos += 1
                return
            self.expect(",")


def _parse_object(cursor: _Cursor, message: Any, layout: tuple[tuple[tuple[str, ...], str], ...]) -> None:
    """Parses one object into ``message``; the array named by ``layout[0]`` is parsed element by element."""
    rest: dict[str, Any] = {}
    for key in cursor.members():
        if layout and key in layout[0][0] and cursor.peek() == "[":
            children = getattr(message, layout[0][1])
            for _ in cursor.elements():
                if cursor.peek() != "{":
                    raise BadPayload(f"malformed OTLP/JSON: {key} must hold objects (char {cursor.pos})")
                if len(layout) > 1:
                    _parse_object(cursor, children.add(), layout[1:])
                else:
                    item = cursor.value()
                    _fix_ids(item)
                    for link in _as_list(item.get("links")):
                        if isinstance(link, dict):
                            _fix_ids(link)
                    json_format.ParseDict(item, children.add(), ignore_unknown_fields=True)
        else:
            rest[key] = cursor.value()
    json_format.ParseDict(rest, message, ignore_unknown_fields=True)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _fix_ids(record: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex, protobuf's JSON mapping wants base64: rewrite them in place."""
    for key, length in _ID_LENGTHS.items():
        value = record.get(key)
        if not isinstance(value, str) or not value:
            continue
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raise BadPayload(f"malformed OTLP/JSON: {key} {value[:40]!r} is not hex") from None
        if len(raw) != length:
            raise BadPayload(f"malformed OTLP/JSON: {key} must be {2 * length} hex digits, got {len(value)}")
        record[key] = base64.b64encode(raw).decode("ascii")


def count_and_check(signal: str, request: Any) -> int:
    """Counts items and rejects ids of the wrong length (pdata refuses them too)."""
    n = 0
    if signal == "traces":
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    _check_ids(span.trace_id, span.span_id, span.parent_span_id)
                    for link in span.links:
                        _check_ids(link.trace_id, link.span_id, b"")
                n += len(ss.spans)
    elif signal == "logs":
        for rl in request.resource_logs:
            for sl in rl.scope_logs:
                for record in sl.log_records:
                    _check_ids(record.trace_id, record.span_id, b"")
                n += len(sl.log_records)
    else:
        n = sum(len(sm.metrics) for rm in request.resource_metrics for sm in rm.scope_metrics)
    return n


def _check_ids(trace_id: bytes, span_id: bytes, parent: bytes) -> None:
    if len(trace_id) not in (0, 16):
        raise BadPayload(f"invalid trace id: {len(trace_id)} bytes, want 16")
    if len(span_id) not in (0, 8) or len(parent) not in (0, 8):
        raise BadPayload(f"invalid span id: {max(len(span_id), len(parent))} bytes, want 8")
