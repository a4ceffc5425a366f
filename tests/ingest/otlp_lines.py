"""Hand-made OTLP/JSON lines for ingest tests, written the way the collector writes them.

``trace_line([span(...), ...])`` -> one ``{"resourceSpans":[...]}`` line (ints as decimal strings,
lowerCamelCase keys, hex ids), ``log_line([log_record(...)])`` -> one ``{"resourceLogs":[...]}`` line.
Python values become OTLP AnyValues: str, bool, int, float, bytes, list (arrayValue), dict (kvlistValue).
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def any_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]} if v else {}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": key_values(v)} if v else {}}
    if v is None:
        return {}
    return {"stringValue": str(v)}


def key_values(attrs: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in (attrs or {}).items()]


def span(name: str, trace_id: str, span_id: str, parent: str | None = None, attrs: dict | None = None,
         events: list[tuple[str, dict]] | None = None, kind: int = 1, start: int = T0, dur: int = 1_000_000,
         status: int = 0, status_message: str = "") -> dict[str, Any]:
    sp: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent:
        sp["parentSpanId"] = parent
    sp.update({"flags": 256, "name": name, "kind": kind, "startTimeUnixNano": str(start),
               "endTimeUnixNano": str(start + dur)})
    if attrs:
        sp["attributes"] = key_values(attrs)
    if events:
        sp["events"] = [{"timeUnixNano": str(start + i), "name": n, "attributes": key_values(a)}
                        for i, (n, a) in enumerate(events)]
    st: dict[str, Any] = {}
    if status_message:
        st["message"] = status_message
    if status:
        st["code"] = status
    sp["status"] = st
    return sp


def trace_line(spans: list[dict[str, Any]], service: str = "agent", scope: str = "tests") -> str:
    doc = {"resourceSpans": [{"resource": {"attributes": key_values({"service.name": service})},
                              "scopeSpans": [{"scope": {"name": scope}, "spans": spans}]}]}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def log_record(event_name: str, body: Any, trace_id: str, span_id: str, time_ns: int,
               attrs: dict | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"timeUnixNano": str(time_ns), "observedTimeUnixNano": str(time_ns),
                           "severityNumber": 9, "body": any_value(body)}
    if attrs:
        rec["attributes"] = key_values(attrs)
    rec.update({"traceId": trace_id, "spanId": span_id, "eventName": event_name})
    return rec


def log_line(records: list[dict[str, Any]], service: str = "agent", scope: str = "tests") -> str:
    doc = {"resourceLogs": [{"resource": {"attributes": key_values({"service.name": service})},
                             "scopeLogs": [{"scope": {"name": scope}, "logRecords": records}]}]}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def write_lines(path, lines: list[str], trailing_newline: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    path.write_text(text)
