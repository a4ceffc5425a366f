"""One unmodified LangGraph ReAct agent run (two tools) with several OTel instrumentations active at once,
for record.sh (tests/data/ingest/captured_multi/README.md).

    python agent.py BASE_URL --instrument langchain,openai-v2[,openinference-openai] [--v2-content] [--parallel]
    opentelemetry-instrument python agent.py BASE_URL --instrument zero-code

``zero-code``: the agent sets up no telemetry at all; ``opentelemetry-instrument`` (opentelemetry-distro)
does, with every installed instrumentor (OpenInference LangChain, OpenInference openai, openai-v2,
OpenLLMetry openai, ...), the standard Python zero-code path.

Telemetry goes over OTLP/HTTP to ``$OTEL_EXPORTER_OTLP_ENDPOINT``; the resource comes from the
environment (``OTEL_RESOURCE_ATTRIBUTES``, as ``spanrl rollout`` sets ``spanrl.rollout_id``), so the
agent itself names no rollout. ``--v2-content`` turns on the official GenAI instrumentation's
message capture (off by default, as the library ships; on: GenAI >= 1.37 ``SPAN_ONLY``). ``--parallel`` also sends two identical
requests at once (``ChatOpenAI.batch``): two calls with the same input and output whose time intervals
overlap, the case a content match cannot tell apart.
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("base_url")
    p.add_argument("--instrument", default="langchain,openai-v2")
    p.add_argument("--question", default="What is the weather in Paris?")
    p.add_argument("--v2-content", action="store_true")
    p.add_argument("--parallel", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    if args.v2_content:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"

    if args.instrument == "zero-code":
        run_agent(args)
        return
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/")
    resource = Resource.create({"service.name": "weather-agent"})  # + OTEL_RESOURCE_ATTRIBUTES
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")))
    _logs.set_logger_provider(logs)
    chosen = args.instrument.split(",")
    if "langchain" in chosen:
        from openinference.instrumentation.langchain import LangChainInstrumentor
        LangChainInstrumentor().instrument(tracer_provider=provider)
    if "openai-v2" in chosen:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logs)
    if "openinference-openai" in chosen:
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI
        OIOpenAI().instrument(tracer_provider=provider)

    run_agent(args)
    provider.shutdown()
    logs.shutdown()


def run_agent(args: argparse.Namespace) -> None:
    """The unmodified agent: a LangGraph ReAct agent with two tools (and the batched pair)."""
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(query: str) -> str:
        """Current weather for a city."""
        return f"sunny in {query}"

    @tool
    def get_time(city: str) -> str:
        """Local time in a city."""
        return f"noon in {city}"

    llm = ChatOpenAI(model="fake-model", base_url=args.base_url, api_key="x", temperature=0.2, max_retries=0)
    agent = create_react_agent(llm, [get_weather, get_time])
    agent.invoke({"messages": [HumanMessage(args.question)]})
    if args.parallel:
        same = [HumanMessage("Say the same thing twice.")]
        llm.batch([same, same])


if __name__ == "__main__":
    main()
