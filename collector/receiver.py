"""The one core path both front doors call: decode -> ``export(signal, request)`` -> writer thread.

Like the collector's ``receiver/otlpreceiver/internal/trace/otlp.go``: gRPC and HTTP only decode and
map outcomes to their status codes; admission, counting and the hand-off to the writer live here.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from spanrl.collector.config import CollectorConfig
from spanrl.collector.limits import QueueBudget, QueueLimits
from spanrl.collector.otlpjson import logs_to_json, traces_to_json
from spanrl.collector.writer import Outcome, SignalWriter, WriteItem

SIGNALS = ("traces", "logs", "metrics")
REQUEST_TYPES: dict[str, Any] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
    "metrics": ExportMetricsServiceRequest,
}
OFFLOAD_BYTES = 1 << 20  # bodies bigger than this are decoded on a worker thread, not on the event loop
_TO_LINE: dict[str, Callable[[Any], bytes]] = {"traces": traces_to_json, "logs": logs_to_json}


class BadPayload(ValueError):
    """The request cannot be decoded; the message says what was wrong (sent back with 400)."""


@dataclass
class Decoded:
    signal: str
    request: Any
    items: int  # spans / log records / data points; 0 -> acknowledged and dropped, as the collector does
    size: int  # decoded body bytes, what the queue budget counts


def decode_protobuf(signal: str, body: bytes) -> Decoded:
    """Binary OTLP -> request message, with the id-length checks pdata applies."""
    request = REQUEST_TYPES[signal]()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadPayload(f"malformed protobuf {request.DESCRIPTOR.name}: {exc}") from None
    return Decoded(signal, request, _count_and_check(signal, request), len(body))


def decode_json(signal: str, body: bytes) -> Decoded:
    """OTLP/JSON (as JS exporters send it: camelCase, hex ids, int64 as string or number) -> request."""
    try:
        data = json.loads(body, parse_int=_parse_int)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadPayload(f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadPayload(f"malformed OTLP/JSON: expected an object at the top, got {type(data).__name__}")
    try:
        _hex_ids_to_base64(signal, data)
        request = json_format.ParseDict(data, REQUEST_TYPES[signal](), ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError, AttributeError) as exc:
        raise BadPayload(f"malformed OTLP/JSON {signal} request: {exc}") from None
    return Decoded(signal, request, _count_and_check(signal, request), len(body))


def _parse_int(text: str) -> int | float:
    """Keeps ``-0`` (the collector's text for a negative-zero double) negative."""
    return -0.0 if text == "-0" else int(text)


_ID_LENGTHS = {"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8}


def _hex_ids_to_base64(signal: str, data: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex, protobuf's JSON mapping wants base64: rewrite them in place."""
    if signal == "traces":
        path = (("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"), ("spans",))
    elif signal == "logs":
        path = (("resourceLogs", "resource_logs"), ("scopeLogs", "scope_logs"), ("logRecords", "log_records"))
    else:
        return
    for record in _walk(data, path):
        _fix_ids(record)
        for nested in ("links",):
            for link in _as_list(record.get(nested)):
                if isinstance(link, dict):
                    _fix_ids(link)


def _walk(node: Any, path: tuple[tuple[str, ...], ...]) -> list[dict[str, Any]]:
    level = [node]
    for keys in path:
        nxt: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                for key in keys:
                    nxt.extend(x for x in _as_list(item.get(key)) if isinstance(x, dict))
        level = nxt
    return level


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _fix_ids(record: dict[str, Any]) -> None:
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


def _count_and_check(signal: str, request: Any) -> int:
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


def authorized(header: str | None, token: str | None) -> bool:
    """``Authorization: Bearer TOKEN`` check, constant time; no token configured -> always true."""
    if token is None:
        return True
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


class Receiver:
    """Admission + hand-off to the writer; counts what happened instead of logging each request."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.budget = QueueBudget(QueueLimits(config.queue_items, config.queue_bytes))
        self.stats: Counter[str] = Counter()
        self.writer = None if config.discard else SignalWriter(
            config.otel_dir, config.rotate_bytes, config.fsync, on_done=self._done)

    def _done(self, item: WriteItem) -> None:
        self.budget.release(item.size)

    def submit(self, decoded: Decoded) -> Future[Outcome]:
        """Thread-safe: queue one decoded request; the future resolves once it is on disk."""
        fut: Future[Outcome] = Future()
        signal = decoded.signal
        if signal == "metrics" or decoded.items == 0 or self.writer is None:
            self.stats[f"{signal}_dropped" if signal == "metrics" else f"{signal}_items"] += decoded.items
            fut.set_result(Outcome.OK)
            return fut
        if not self.budget.try_take(decoded.size):
            self.stats["busy"] += 1
            fut.set_result(Outcome.BUSY)
            return fut
        self.stats[f"{signal}_items"] += decoded.items
        self.stats[f"{signal}_requests"] += 1
        self.writer.submit(WriteItem(signal, decoded.request, _TO_LINE[signal], decoded.size, fut))
        return fut

    async def export(self, signal: str, request: Any, items: int | None = None,
                     size: int | None = None) -> Outcome:
        """The core path: every transport ends here and maps the outcome to its status."""
        if items is None:
            items = _count_and_check(signal, request)
        if size is None:
            size = request.ByteSize()
        return await asyncio.wrap_future(self.submit(Decoded(signal, request, items, size)))

    def reject(self, reason: str) -> None:
        """Counts a refused request (bad payload, auth, size) without logging each one."""
        self.stats[reason] += 1

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
