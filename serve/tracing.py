"""The server's own OpenTelemetry span per completion (docs/demo.md; docs/lake.md, token ids).

One span named ``chat <model>`` (kind SERVER) per request. It is a child of the caller's span when a
W3C ``traceparent`` header arrives (the global propagator reads it), and carries
``gen_ai.response.id`` = the completion id the client got back, so the ingest can join it to the
client's own span either way. The token ids and log-probs on it are the exact ones the model saw and
produced, so training needs no re-tokenisation.

Export: OTLP/HTTP protobuf to ``--otlp-endpoint`` or ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`` (gRPC
when ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``), through a BatchSpanProcessor with a large queue that is
flushed on shutdown. Nothing is exported when no endpoint is set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span

SERVICE_NAME = "spanrl-serve"


def make_tracer_provider(endpoint: str | None, exporter: Any = None, service_name: str = SERVICE_NAME):
    """A TracerProvider of our own (never the global one, so tests and embedding stay isolated).

    ``exporter`` (tests: an InMemorySpanExporter) gets a SimpleSpanProcessor; an OTLP endpoint gets a
    BatchSpanProcessor with a 64k queue (the SDK's default 2048 drops spans under load).
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    resource = Resource.create({}).merge(Resource({"service.name": service_name}))
    provider = TracerProvider(resource=resource)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    otlp = _otlp_exporter(endpoint)
    if otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(otlp, max_queue_size=65536, schedule_delay_millis=500,
                                                       max_export_batch_size=512))
    return provider


def _otlp_exporter(endpoint: str | None):
    env = os.environ
    traces_env = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    base = endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not (base or traces_env):
        return None
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=endpoint) if endpoint else GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if endpoint:  # an explicit flag wins over the environment
        return OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    return OTLPSpanExporter()  # reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT itself


def start_chat_span(tracer: Any, model: str, headers: Mapping[str, str], path: Mapping[str, str] | None = None) -> Span:
    """Start the SERVER span, parented by the caller's ``traceparent`` when there is one, else by the one in
    the per-attempt base URL ``spanrl rollout`` hands out (``/r/<rollout_id>/<traceparent>/v1``, as the
    gateway's; ``-`` for none), whose rollout id the span then carries: the call joins its attempt with no
    help from the agent."""
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    carrier = {k.lower(): v for k, v in headers.items()}
    path = path or {}
    if "traceparent" not in carrier and path.get("traceparent", "-") != "-":
        carrier = {"traceparent": path["traceparent"]}
    span = tracer.start_span(f"chat {model}", context=extract(carrier), kind=SpanKind.SERVER)
    if path.get("rollout_id"):
        span.set_attribute("spanrl.rollout_id", path["rollout_id"])
    return span


def request_attributes(model: str, body: Mapping[str, Any], capture: bool) -> dict[str, Any]:
    """gen_ai.request.* (and the input messages/tools when content capture is on)."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "spanrl",
        "gen_ai.provider.name": "spanrl",
        "gen_ai.request.model": str(body.get("model", model)),
    }
    for key, attr in (("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed"),
                      ("max_tokens", "max_tokens"), ("max_completion_tokens", "max_tokens"),
                      ("n", "choice.count")):
        value = body.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attrs[f"gen_ai.request.{attr}"] = value
    if capture:
        attrs["gen_ai.input.messages"] = json.dumps(semconv_input(body.get("messages") or []), ensure_ascii=False)
        if body.get("tools"):
            attrs["gen_ai.tool.definitions"] = json.dumps(body["tools"], ensure_ascii=False)
    return attrs


def semconv_input(messages: list[Any]) -> list[dict[str, Any]]:
    """OpenAI chat messages -> GenAI semconv (>=1.37) ``gen_ai.input.messages`` parts."""
    out = []
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        parts: list[dict[str, Any]] = []
        content = msg.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if msg.get("role") == "tool":
            parts.append({"type": "tool_call_response", "id": msg.get("tool_call_id"), "response": content})
        elif content:
            parts.append({"type": "text", "content": content})
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": fn.get("name"),
                          "arguments": _maybe_json(fn.get("arguments"))})
        out.append({"role": msg.get("role"), "parts": parts})
    return out


def semconv_output(choices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """API choices -> ``gen_ai.output.messages``."""
    out = []
    for choice in choices:
        message = choice["message"]
        parts: list[dict[str, Any]] = []
        if message.get("content"):
            parts.append({"type": "text", "content": message["content"]})
        for call in message.get("tool_calls") or []:
            parts.append({"type": "tool_call", "id": call["id"], "name": call["function"]["name"],
                          "arguments": _maybe_json(call["function"]["arguments"])})
        out.append({"role": "assistant", "parts": parts, "finish_reason": choice["finish_reason"]})
    return out


def _maybe_json(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text


def response_attributes(response: dict[str, Any], prompt_ids: list[int], seqs: list[Any],
                        tokenizer_name: str, adapter: str | None, capture: bool) -> dict[str, Any]:
    """gen_ai.response.*, usage, and the spanrl token-id convention (choice 0; others indexed)."""
    first = seqs[0]
    attrs: dict[str, Any] = {
        "gen_ai.response.id": response["id"],
        "gen_ai.response.model": response["model"],
        "gen_ai.response.finish_reasons": [c["finish_reason"] for c in response["choices"]],
        "gen_ai.usage.input_tokens": response["usage"]["prompt_tokens"],
        "gen_ai.usage.output_tokens": response["usage"]["completion_tokens"],
        "spanrl.prompt_token_ids": list(prompt_ids),
        "spanrl.response_token_ids": list(first.output_ids),
        "spanrl.response_logprobs": list(first.logprobs),
        "spanrl.response_logprobs_raw": list(first.raw_logprobs),
        "spanrl.logprobs_mode": "sampling",
        "spanrl.tokenizer": tokenizer_name,
        "spanrl.adapter": adapter or "base",
    }
    for i, seq in enumerate(seqs[1:], start=1):
        attrs[f"spanrl.choices.{i}.response_token_ids"] = list(seq.output_ids)
        attrs[f"spanrl.choices.{i}.response_logprobs"] = list(seq.logprobs)
    if capture:
        attrs["gen_ai.output.messages"] = json.dumps(semconv_output(response["choices"]), ensure_ascii=False)
    return attrs
