"""Every gateway span delivered or counted: one call's recorded content kept under a size the
exporter sends (``fit``), export batches split by size, and each batch's export result counted
(``DeliveryExporter``).

Why: the OTLP exporter drops a whole request over its limit (opentelemetry-exporter-otlp-proto-http
refuses over 64 MiB itself; a collector answers 413 over its own: the embedded collector's
``--max-body-mib``, 64 MiB by default, the OpenTelemetry Collector's HTTP receiver 20 MiB), and says so
only in a log warning. The batch processor groups spans by count, not size, so one 50 MB call took
the small calls that shared its batch with it, while the gateway counted every call as recorded.
Now no span is over ``max_span_bytes``, no export request holds more than that (unless it is one
span), and what the exporter refused is counted, not just logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("spanrl.gateway")

MIB = 1024 * 1024
ATTRIBUTE_OVERHEAD = 16  # a KeyValue's tags and length prefixes, at most
SPAN_OVERHEAD = 512  # ids, times, kind, flags, and a share of the request's resource and scope
SMALLEST_CUT = 1024  # attributes below this are never cut (model names, rollout ids, counts)
MARKER_RESERVE = 128  # the marker appended to a cut value fits in this
TRUNCATED = "spanrl.gateway.truncated"  # the attributes cut or dropped, by name
ORIGINAL_BYTES = "spanrl.gateway.original_bytes"  # the recorded content's size before cutting


# --------------------------------------------------------------------------- sizes
def _varint_bytes(n: int) -> int:
    return 10 if n < 0 else max(1, (n.bit_length() + 6) // 7)


def value_bytes(value: Any) -> int:
    """An upper bound of one attribute value's size in an OTLP protobuf request (what the exporter's
    and the collector's limits count). A list of ints is bounded from its smallest and largest
    element (C speed: a prompt's ids are a long list)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass")) + 6
    if isinstance(value, bool):
        return 2
    if isinstance(value, int):
        return 11
    if isinstance(value, float):
        return 9
    if isinstance(value, list | tuple):
        if not value:
            return 2
        if isinstance(value[0], int) and not isinstance(value[0], bool):
            try:
                per = 3 + max(_varint_bytes(min(value)), _varint_bytes(max(value)))
            except TypeError:  # mixed types (the SDK refuses them anyway): element by element
                return 6 + sum(2 + value_bytes(v) for v in value)
            return 6 + per * len(value)
        if isinstance(value[0], float):
            return 6 + 11 * len(value)
        return 6 + sum(2 + value_bytes(v) for v in value)
    return 6 + len(str(value).encode("utf-8", "surrogatepass"))


def attribute_bytes(key: str, value: Any) -> int:
    return len(key) + ATTRIBUTE_OVERHEAD + value_bytes(value)


def span_bytes(span: ReadableSpan) -> int:
    """An upper bound of a finished span's size in an export request."""
    size = SPAN_OVERHEAD + len(span.name.encode("utf-8", "surrogatepass"))
    size += len((span.status.description or "").encode("utf-8", "surrogatepass"))
    size += sum(attribute_bytes(k, v) for k, v in (span.attributes or {}).items())
    for event in span.events:
        size += 64 + len(event.name) + sum(attribute_bytes(k, v) for k, v in (event.attributes or {}).items())
    for link in span.links:
        size += 64 + sum(attribute_bytes(k, v) for k, v in (link.attributes or {}).items())
    return size


# --------------------------------------------------------------------------- one call's content
def _is_token_id_attribute(key: str) -> bool:
    """The engine-id attributes: kept all together or not at all (a prompt without its response ids,
    or ids cut short, would train on ids the engine never used)."""
    return key.startswith("spanrl.") and (key.endswith(("token_ids", "logprobs")) or key == "spanrl.token_source")


@dataclass
class Fitted:
    """A call's attributes under the budget; ``truncated`` names what was cut or dropped (empty:
    nothing), ``original_bytes`` is the size before."""

    attributes: dict[str, Any]
    truncated: list[str] = field(default_factory=list)
    original_bytes: int = 0


def fit(attributes: dict[str, Any], budget: int) -> Fitted:
    """``attributes`` in at most ``budget`` bytes (``value_bytes``). The token-id attributes are kept
    whole when they fit beside the rest cut to markers, else dropped together (the call is then
    recorded as text); then the largest text values (the messages, the tool definitions) are cut, each
    ending in a marker naming its original size: no longer JSON, the ingest reads it as missing
    content, never as a shorter conversation. The engine's ids, when kept, are what trains."""
    out = dict(attributes)
    sizes = {k: attribute_bytes(k, v) for k, v in out.items()}
    total = original = sum(sizes.values())
    if total <= budget:
        return Fitted(out)
    ids = [k for k in out if _is_token_id_attribute(k)]
    texts = [k for k in out if k not in ids and sizes[k] > SMALLEST_CUT]
    floor = total - sum(sizes[k] for k in texts) + len(texts) * (2 * MARKER_RESERVE)
    cut: list[str] = []
    if floor > budget:
        for k in ids:
            total -= sizes.pop(k)
            del out[k]
            cut.append(k)
    for key in sorted(texts, key=sizes.__getitem__, reverse=True):
        if total <= budget:
            break
        value = out[key]
        if isinstance(value, str):
            raw = value.encode("utf-8", "surrogatepass")
            keep = max(0, len(raw) - (total - budget) - MARKER_RESERVE)
            out[key] = (raw[:keep].decode("utf-8", "ignore")
                        + f"...[cut by spanrl gateway: {keep} of {len(raw)} bytes kept, see --max-span-mib]")
            total += attribute_bytes(key, out[key]) - sizes[key]
        else:  # a list that is not token ids (none is this big today): dropped whole
            total -= sizes[key]
            del out[key]
        cut.append(key)
    return Fitted(out, sorted(cut), original)


# --------------------------------------------------------------------------- export
@dataclass
class Tally:
    """Spans the exporter confirmed (``written``) or refused (``dropped``); export runs on the batch
    processor's thread, the counters are read on the event loop's."""

    written: int = 0
    dropped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, ok: bool, n: int) -> None:
        with self._lock:
            if ok:
                self.written += n
            else:
                self.dropped += n


def size_batches(spans: Sequence[ReadableSpan], budget: int) -> Iterator[list[ReadableSpan]]:
    """``spans`` in order, in groups of at most ``budget`` bytes (a span bigger than that alone)."""
    group: list[ReadableSpan] = []
    size = 0
    for span in spans:
        n = span_bytes(span)
        if group and size + n > budget:
            yield group
            group, size = [], 0
        group.append(span)
        size += n
    if group:
        yield group


class DeliveryExporter(SpanExporter):
    """Wraps the real exporter: each batch goes out in requests of at most ``max_request_bytes``,
    and every span is counted written or dropped from the exporter's answer, so one oversized
    request cannot take other calls' spans with it unseen."""

    def __init__(self, inner: SpanExporter, max_request_bytes: int, tally: Tally, target: str) -> None:
        self.inner, self.max_request_bytes, self.tally, self.target = inner, max_request_bytes, tally, target

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.SUCCESS
        for group in size_batches(spans, self.max_request_bytes):
            try:
                ok = self.inner.export(group) == SpanExportResult.SUCCESS
            except Exception as exc:  # an exporter bug must not lose the count (the SDK would only log it)
                log.warning("span exporter raised %r", exc)
                ok = False
            self.tally.add(ok, len(group))
            if not ok:
                result = SpanExportResult.FAILURE
                log.warning("spanrl gateway: %d span(s) (%d bytes) not delivered to %s: the exporter refused "
                            "them (its own warning says why); counted in spans_dropped",
                            len(group), sum(map(span_bytes, group)), self.target)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def tracer_provider(endpoint: str | None, exporter: SpanExporter | None, service_name: str,
                    max_request_bytes: int, tally: Tally) -> Any:
    """The gateway's own TracerProvider: ``exporter`` (tests: in memory) through a
    SimpleSpanProcessor, else the OTLP exporter of ``spanrl serve`` (``endpoint`` or the
    OTEL_EXPORTER_OTLP_* environment) through a BatchSpanProcessor with a large queue, both wrapped
    in a DeliveryExporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    from spanrl.serve.tracing import _otlp_exporter

    provider = TracerProvider(resource=Resource.create({}).merge(Resource({"service.name": service_name})))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(
            DeliveryExporter(exporter, max_request_bytes, tally, type(exporter).__name__)))
        return provider
    otlp = _otlp_exporter(endpoint)
    if otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(
            DeliveryExporter(otlp, max_request_bytes, tally, endpoint or "the OTEL_EXPORTER_OTLP endpoint"),
            max_queue_size=65536, schedule_delay_millis=500, max_export_batch_size=512))
    return provider
