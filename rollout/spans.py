"""The runner's own span per attempt (``spanrl.rollout``), so exit codes, timeouts and stderr tails
are in the lake beside the agent's spans, under the same ``spanrl.rollout_id``.

Built with opentelemetry-proto and sent as OTLP/HTTP protobuf, or over OTLP/gRPC when that is the
endpoint's protocol (core dependencies only: no SDK). Status ERROR marks a failed or timed-out
attempt; the ``rollouts`` view counts it in ``n_errors``. The span is sent once the agent's process
has exited (its SDK flushed on the way out), so ``spanrl.rollout.ended = true`` tells stage 2 the
rollout is over: it is complete once its spans are anchored, without waiting for ``--settle``.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from spanrl.rollout.runs import OK, Attempt

SERVICE = "spanrl-rollout"
SCOPE = "spanrl.rollout"  # the instrumentation scope of the runner's own spans


PURPOSE_KEY = "spanrl.rollout.purpose"  # eval: held out of training snapshots (transition_base.sql)
ENDED = "spanrl.rollout.ended"  # _rollout_status.sql: the rollout holding this span is over
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def attempt_request(att: Attempt, run_id: str, start_ns: int, end_ns: int,
                    ids: tuple[bytes, bytes] | None = None, purpose: str | None = None) -> ExportTraceServiceRequest:
    """One ``spanrl.rollout`` span for ``att`` (a root span of its own trace), sent after its process
    exited; ``spanrl.rollout.agent_spans`` is how many spans the agent sent, when the runner could
    count them (its embedded collector). ``ids`` (trace id, span id): chosen before the attempt ran,
    when a gateway parented the attempt's calls to this span (``new_span_ids``); else random.
    ``purpose`` (``eval``): the resource's ``spanrl.rollout.purpose``, which keeps the rollout out of
    training snapshots even when only a gateway or server recorded its calls (the agent sent no span)."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    resource = [("service.name", SERVICE), ("spanrl.rollout_id", att.rollout_id), ("spanrl.task_id", att.task.task_id)]
    for key, value in resource + ([(PURPOSE_KEY, purpose)] if purpose else []):
        rs.resource.attributes.add(key=key).value.string_value = value
    ss = rs.scope_spans.add()
    ss.scope.name = SCOPE
    trace_id, span_id = ids or new_span_ids()
    span = ss.spans.add(trace_id=trace_id, span_id=span_id, name="spanrl.rollout",
                        kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start_ns, end_time_unix_nano=end_ns)
    attrs: dict[str, str | int | bool | float] = {
        "spanrl.rollout_id": att.rollout_id, "spanrl.task_id": att.task.task_id, "spanrl.run_id": run_id,
        "spanrl.rollout.sample": att.sample, "spanrl.rollout.attempt": att.attempt,
        "spanrl.rollout.status": att.status or "unknown", "spanrl.rollout.timed_out": att.status == "timeout",
        ENDED: True,
    }
    if att.agent_spans is not None:
        attrs["spanrl.rollout.agent_spans"] = att.agent_spans
    if att.exit_code is not None:
        attrs["process.exit.code"] = att.exit_code
    if att.status != OK and att.stderr_tail:
        attrs["spanrl.rollout.stderr_tail"] = att.stderr_tail
    for key, value in attrs.items():
        v = span.attributes.add(key=key).value
        if isinstance(value, bool):
            v.bool_value = value
        elif isinstance(value, int):
            v.int_value = value
        else:
            v.string_value = str(value)
    if att.status != OK:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = ("timed out" if att.status == "timeout" else f"exit code {att.exit_code}")
    return req


def new_span_ids() -> tuple[bytes, bytes]:
    """A random (trace id, span id) for an attempt's span."""
    return os.urandom(16), os.urandom(8)


def traceparent(ids: tuple[bytes, bytes]) -> str:
    """The W3C ``traceparent`` naming that span (sampled)."""
    return f"00-{ids[0].hex()}-{ids[1].hex()}-01"


def post_spans(endpoint: str, req: ExportTraceServiceRequest, timeout_s: float = 10.0,
               protocol: str = "http/protobuf") -> str | None:
    """Send to ``endpoint`` (POST ``/v1/traces``, or the gRPC trace service when ``protocol`` is
    ``grpc``); None on success, else why it failed (never raises)."""
    body = req.SerializeToString()
    if protocol == "grpc":
        return _export_grpc(endpoint, body, timeout_s)
    url = endpoint.rstrip("/") + "/v1/traces"
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return str(exc)


def _export_grpc(endpoint: str, body: bytes, timeout_s: float) -> str | None:
    """One unary TraceService/Export call with the serialised request (TLS for https:// URLs)."""
    import grpc

    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if not parts.netloc:
        return f"not a gRPC endpoint: {endpoint!r} (give host:port or http://host:port)"
    channel = (grpc.secure_channel(parts.netloc, grpc.ssl_channel_credentials()) if parts.scheme == "https"
               else grpc.insecure_channel(parts.netloc))
    try:
        channel.unary_unary(TRACE_EXPORT)(body, timeout=timeout_s)
        return None
    except grpc.RpcError as exc:
        return f"gRPC {exc.code().name}: {exc.details()}"  # type: ignore[attr-defined]
    finally:
        channel.close()
