"""OTLP/gRPC front door (grpcio aio): TraceService, LogsService and MetricsService ``Export``.

The handlers are registered from the opentelemetry-proto service descriptors but take the raw request
bytes, so a malformed message gets INVALID_ARGUMENT with our message instead of grpcio's generic
INTERNAL "Exception deserializing request", and decoding shares ``decode_protobuf`` with HTTP.

Each ``Export`` is served as a request-streaming handler (the wire is the same for a unary client) so
that the handler runs as soon as the call's metadata arrives: the token is checked before a byte of the
message is read or inflated, and the message is read under the idle timeout, so a client that never
finishes sending is cut off instead of holding a slot.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from spanrl.collector.decode import BadPayload, decode_protobuf
from spanrl.collector.limits import READ_COST
from spanrl.collector.receiver import OFFLOAD_BYTES, Receiver, authorized
from spanrl.collector.writer import Outcome

SERVICES = {
    "traces": trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"],
    "logs": logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"],
    "metrics": metrics_service_pb2.DESCRIPTOR.services_by_name["MetricsService"],
}
_OUTCOME_CODE = {
    Outcome.BUSY: (grpc.StatusCode.UNAVAILABLE, "receiver memory budget or queue is full; retry with backoff"),
    Outcome.DISK_FULL: (grpc.StatusCode.UNAVAILABLE, "no space left on the device holding the span files"),
    Outcome.WRITE_FAILED: (grpc.StatusCode.UNAVAILABLE, "could not write the span file; retry later"),
    Outcome.INTERNAL: (grpc.StatusCode.INTERNAL, "internal error while writing the batch"),
}
CALLS_PER_DECODE_SLOT = 8  # calls open at once = this x max_inflight (waiting calls hold no body)


def server_options(max_body_bytes: int) -> list[tuple[str, Any]]:
    """64 MiB receive limit (grpcio defaults to 4 MiB, which silently loses big LLM spans)."""
    return [
        ("grpc.max_receive_message_length", max_body_bytes),
        ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ("grpc.so_reuseport", 0),
    ]


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _handler(receiver: Receiver, signal: str, decoding: asyncio.Semaphore) -> Any:
    config = receiver.config

    async def export(_requests: Any, context: grpc.aio.ServicerContext) -> bytes:
        reservation = receiver.budget.reserve()
        try:
            metadata = dict(context.invocation_metadata() or ())
            if not authorized(metadata.get("authorization"), config.token):
                raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "grpc_unauthenticated",
                               "missing or wrong 'authorization: Bearer <token>' metadata")
            body = await _read_message(context, config.idle_timeout_s)
            if not reservation.grow(READ_COST * len(body)):
                raise _Refused(*_busy())
            async with decoding:
                try:
                    if len(body) > OFFLOAD_BYTES:  # keep the loop answering while a big message is parsed
                        decoded = await asyncio.get_running_loop().run_in_executor(
                            None, decode_protobuf, signal, body)
                    else:
                        decoded = decode_protobuf(signal, body)
                except BadPayload as exc:
                    raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "grpc_invalid_argument", str(exc)) from None
            del body
            outcome = await receiver.export(decoded, reservation)
            reservation = None  # the receiver owns it now
            if outcome is not Outcome.OK:
                code, text = _OUTCOME_CODE[outcome]
                raise _Refused(code, f"grpc_{code.name.lower()}", text)
            return b""  # an empty Export*ServiceResponse
        except _Refused as refused:
            receiver.reject(refused.reason)
            await context.abort(refused.code, refused.message)
        finally:
            if reservation is not None:
                reservation.release()
        return b""  # not reached: abort raises

    return grpc.stream_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=None)


def _busy() -> tuple[grpc.StatusCode, str, str]:
    code, text = _OUTCOME_CODE[Outcome.BUSY]
    return code, "grpc_unavailable", text


async def _read_message(context: grpc.aio.ServicerContext, idle_timeout_s: float) -> bytes:
    """The call's one request message, within the idle timeout."""
    try:
        message = await asyncio.wait_for(context.read(), idle_timeout_s)
    except TimeoutError:
        raise _Refused(grpc.StatusCode.DEADLINE_EXCEEDED, "grpc_deadline_exceeded",
                       f"no request message within {idle_timeout_s:g} s; send it again") from None
    if message is grpc.aio.EOF:
        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "grpc_invalid_argument", "the call carried no message")
    return message


def add_services(server: grpc.aio.Server, receiver: Receiver) -> None:
    """Registers the three OTLP services on ``server``."""
    decoding = asyncio.Semaphore(receiver.config.max_inflight)
    for signal, service in SERVICES.items():
        handler = grpc.method_handlers_generic_handler(
            service.full_name, {"Export": _handler(receiver, signal, decoding)})
        server.add_generic_rpc_handlers((handler,))


def build_server(receiver: Receiver) -> grpc.aio.Server:
    server = grpc.aio.server(options=server_options(receiver.config.max_body_bytes),
                             maximum_concurrent_rpcs=CALLS_PER_DECODE_SLOT * receiver.config.max_inflight)
    add_services(server, receiver)
    return server
