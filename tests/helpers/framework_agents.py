"""The same one-tool weather agent written with two agent frameworks, each traced the way its users
trace it, exporting OTLP/HTTP to ``$OTEL_EXPORTER_OTLP_ENDPOINT``:

    python tests/helpers/framework_agents.py --framework pydantic-ai --base-url http://127.0.0.1:PORT/v1

--framework
  pydantic-ai     Pydantic AI's own OpenTelemetry instrumentation (``Agent.instrument_all()``): GenAI
                  semconv spans ``invoke_agent`` / ``chat`` / ``execute_tool`` with JSON messages
  openai-agents   the OpenAI Agents SDK (chat-completions model) traced by
                  openinference-instrumentation-openai-agents (OpenInference ``generation`` spans)
  openai-agents+openai  the same plus OpenInference's OpenAI client instrumentation: every call
                  recorded twice, the client span holding the tool definitions the SDK's spans lack

Neither knows about spanrl except ``spanrl.emit_reward`` (``--reward R``), called inside a root span
``run`` that makes the whole run one trace. Prints ``{"trace_id": ..., "output": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os

SYSTEM = "Be brief."
QUESTION = "Weather in Paris?"


def weather(query: str) -> str:
    """Weather for a city."""
    return f"rainy in {query}"


def run_pydantic_ai(base_url: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="x"))
    agent = Agent(model, name="weather_bot", system_prompt=SYSTEM)
    agent.tool_plain(weather, name="get_weather")
    Agent.instrument_all()
    return str(agent.run_sync(QUESTION).output)


def run_openai_agents(base_url: str, provider, client_too: bool = False) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)  # exclusive: the SDK's own exporter is off
    if client_too:  # the client's calls as well: the only instrumentation here that records the tools offered
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    model = OpenAIChatCompletionsModel("fake-model", AsyncOpenAI(base_url=base_url, api_key="x"))
    agent = Agent(name="weather_bot", instructions=SYSTEM, model=model,
                  tools=[function_tool(weather, name_override="get_weather")])
    return str(Runner.run_sync(agent, QUESTION).final_output)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--framework", required=True, choices=["pydantic-ai", "openai-agents", "openai-agents+openai"])
    p.add_argument("--base-url", required=True)
    p.add_argument("--reward", type=float, default=None)
    args = p.parse_args()

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import spanrl

    endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/")
    provider = TracerProvider(resource=Resource.create({"service.name": args.framework}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("framework-agents")
    with tracer.start_as_current_span("run") as root:
        if args.framework == "pydantic-ai":
            output = run_pydantic_ai(args.base_url)
        else:
            output = run_openai_agents(args.base_url, provider, client_too=args.framework.endswith("+openai"))
        if args.reward is not None:
            spanrl.emit_reward(args.reward)
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    print(json.dumps({"trace_id": trace_id, "output": output}))


if __name__ == "__main__":
    main()
