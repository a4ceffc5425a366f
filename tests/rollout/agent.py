"""An agent that knows nothing of spanrl: the plain ``openai`` SDK, traced by the official
opentelemetry-instrumentation-openai-v2, configured only by the standard environment variables
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_RESOURCE_ATTRIBUTES, OPENAI_BASE_URL, OPENAI_API_KEY).

It reads the task from stdin, asks the model (tool call -> tool result -> answer) and prints the
answer. Special inputs for the runner's tests: ``crash ...`` exits 3 after its first call (with a
message on stderr); ``sleep ...`` hangs after its first call (the runner's timeout must kill it).
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def main() -> None:
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry import trace
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "plain-agent"})  # + OTEL_RESOURCE_ATTRIBUTES
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    set_logger_provider(logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)

    import openai

    question = sys.stdin.read().strip()
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    tracer = tracer_provider.get_tracer("plain-agent")
    with tracer.start_as_current_span("invoke_agent plain", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                        "gen_ai.agent.name": "plain"}):
        messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}]
        first = client.chat.completions.create(model="policy", messages=messages, tools=TOOLS, temperature=0)
        if question.startswith("crash"):
            print("agent: the tool backend is down", file=sys.stderr)
            tracer_provider.shutdown()
            logger_provider.shutdown()
            sys.exit(3)
        if question.startswith("sleep"):
            tracer_provider.force_flush()
            time.sleep(600)
        msg = first.choices[0].message
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]})
        for call in msg.tool_calls or []:
            query = json.loads(call.function.arguments).get("query", "")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"found {query}"})
        final = client.chat.completions.create(model="policy", messages=messages, tools=TOOLS, temperature=0)
    tracer_provider.shutdown()
    logger_provider.shutdown()
    print(final.choices[0].message.content)


if __name__ == "__main__":
    main()
