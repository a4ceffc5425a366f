"""A real OTel SDK sender, configured only through OTEL_EXPORTER_OTLP_* env vars (run as a subprocess).

    python tests/collector/sender.py --spans 100 --tag a [--logs 10] [--acked FILE] [--rate 200]

The exporter class follows OTEL_EXPORTER_OTLP_PROTOCOL (grpc | http/protobuf), as opentelemetry-distro
does. Spans form one trace per 10 spans (a root and children) and carry ``test.tag`` and ``test.i``.
With ``--acked FILE``, the names of spans whose export call returned SUCCESS are appended to FILE:
the durability test checks each of them reached the collector's files.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class RecordingExporter(SpanExporter):
    """Wraps the real exporter and records which spans the receiver acknowledged."""

    def __init__(self, inner: SpanExporter, path: str | None) -> None:
        self.inner = inner
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS and self.path:
            with open(self.path, "a") as f:
                f.write("".join(f"{s.name}\n" for s in spans))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def exporters() -> tuple[type, type]:
    if os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter, OTLPLogExporter


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=100)
    ap.add_argument("--logs", type=int, default=0)
    ap.add_argument("--tag", default="t")
    ap.add_argument("--acked", default=None)
    ap.add_argument("--rate", type=float, default=0.0, help="spans per second (0 = as fast as possible)")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    span_exporter, log_exporter = exporters()
    resource = Resource.create({})  # service.name comes from OTEL_SERVICE_NAME
    tp = TracerProvider(resource=resource)
    # a large queue: the default (2048) silently drops spans under bursts (docs/demo.md)
    tp.add_span_processor(BatchSpanProcessor(RecordingExporter(span_exporter(), args.acked),
                                             max_queue_size=1_000_000, max_export_batch_size=args.batch,
                                             schedule_delay_millis=50))
    tracer = tp.get_tracer("spanrl.tests.sender", "1.0")
    start = time.monotonic()
    i = 0
    while i < args.spans:
        with tracer.start_as_current_span(f"{args.tag}-{i}") as root:
            root.set_attribute("test.tag", args.tag)
            root.set_attribute("test.i", i)
            for j in range(1, min(10, args.spans - i)):
                with tracer.start_as_current_span(f"{args.tag}-{i + j}") as child:
                    child.set_attribute("test.tag", args.tag)
                    child.set_attribute("test.i", i + j)
                    child.set_attribute("test.ratio", (i + j) / 4)
            i += min(10, args.spans - i)
        if args.rate:
            time.sleep(max(0.0, start + i / args.rate - time.monotonic()))
    ok = tp.force_flush(120_000)
    tp.shutdown()

    if args.logs:
        lp = LoggerProvider(resource=resource)
        lp.add_log_record_processor(BatchLogRecordProcessor(log_exporter(), max_queue_size=100_000))
        logger = lp.get_logger("spanrl.tests.sender.logs")
        for k in range(args.logs):
            logger.emit(body={"content": f"{args.tag} message {k}"}, event_name="gen_ai.user.message",
                        severity_text="INFO", attributes={"test.tag": args.tag, "test.k": k})
        ok = lp.force_flush(60_000) and ok
        lp.shutdown()
    print(f"sent tag={args.tag} spans={args.spans} logs={args.logs} flushed={ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
