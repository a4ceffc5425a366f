"""OTLP/gRPC front door (grpcio aio): TraceService, LogsService and MetricsService ``Export``.

The handlers are registered from the opentelemetry-proto service descriptors but take the raw request
bytes, so a malformed message gets INVALID_ARGUMENT with our message instead of grpcio's generic
INTERNAL "Exception deserializing request", and decoding shares ``decode_protobuf`` with HTTP.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from spanrl.collector.receiver import OFFLOAD_BYTES, BadPayload, Receiver, authorized, decode_protobuf
from spanrl.collector.writer import Outcome

SERVICES = {
    "traces": trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"],
    "logs": logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"],
    "metrics": metrics_service_pb2.DESCRIPTOR.services_by_name["MetricsService"],
}
_OUTCOME_CODE = {
    Outcome.BUSY: (grpc.StatusCode.UNAVAILABLE, "receiver queue is full; retry with backoff"),
    Outcome.DISK_FULL: (grpc.StatusCode.UNAVAILABLE, "no space left on the device holding the span files"),
    Outcome.WRITE_FAILED: (grpc.StatusCode.UNAVAILABLE, "could not write the span file; retry later"),
    Outcome.INTERNAL: (grpc.StatusCode.INTERNAL, "internal error while writing the batch"),
}


def server_options(max_body_bytes: int) -> list[tuple[str, Any]]:
    """64 MiB receive limit (grpcio defaults to 4 MiB, which silently loses big LLM spans)."""
    return [
        ("grpc.max_receive_message_length", max_body_bytes),
        ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ("grpc.so_reuseport", 0),
    ]


def _handler(receiver: Receiver, signal: str) -> Any:
    token = receiver.config.token

    async def export(body: bytes, context: grpc.aio.ServicerContext) -> bytes:
        if token is not None:
            metadata = dict(context.invocation_metadata() or ())
            if not authorized(metadata.get("authorization"), token):
                receiver.reject("grpc_unauthenticated")
                await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                    "missing or wrong 'authorization: Bearer <token>' metadata")
        try:
            if len(body) > OFFLOAD_BYTES:  # keep the loop answering while a big message is parsed
                decoded = await asyncio.get_running_loop().run_in_executor(None, decode_protobuf, signal, body)
            else:
                decoded = decode_protobuf(signal, body)
        except BadPayload as exc:
            receiver.reject("grpc_invalid_argument")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        outcome = await receiver.export(signal, decoded.request, decoded.items, decoded.size)
        if outcome is not Outcome.OK:
            code, text = _OUTCOME_CODE[outcome]
            receiver.reject(f"grpc_{code.name.lower()}")
            await context.abort(code, text)
        return b""  # an empty Export*ServiceResponse

    return grpc.unary_unary_rpc_method_handler(
        export, request_deserializer=None, response_serializer=None)


def add_services(server: grpc.aio.Server, receiver: Receiver) -> None:
    """Registers the three OTLP services on ``server``."""
    for signal, service in SERVICES.items():
        handler = grpc.method_handlers_generic_handler(service.full_name, {"Export": _handler(receiver, signal)})
        server.add_generic_rpc_handlers((handler,))


def build_server(receiver: Receiver) -> grpc.aio.Server:
    server = grpc.aio.server(options=server_options(receiver.config.max_body_bytes),
                             maximum_concurrent_rpcs=receiver.config.max_inflight)
    add_services(server, receiver)
    return server
