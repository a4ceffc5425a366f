"""A tiny tool-using agent on the real ``openai`` client, traced by a real instrumentation library.

Run it as a subprocess (one instrumentation per process: they patch the same client):

    python tests/helpers/instrumented_agent.py --base-url http://127.0.0.1:PORT/v1 \\
        --instrumentation openai-v2 --scenario tools --rollout-id r1 --task-id t1 --reward 1.0

Telemetry goes over OTLP to ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (e.g. ``running_collector(...).http``;
``--protocol grpc`` with ``.grpc``). On exit it prints one JSON line: ``{"trace_id": ..., "calls": n}``.

--instrumentation
  openai-v2          opentelemetry-instrumentation-openai-v2, default mode: span ``chat {model}`` +
                     message content as OTel *log records* (``gen_ai.user.message``, ``gen_ai.choice``, ...)
                     with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (with util-genai >= 1.0
                     installed the package would always pick its latest mode; we select its default path)
  openai-v2-latest   the same package with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
                     content ``SPAN_ONLY``: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON attributes
                     (its opentelemetry-util-genai handler; the modes below are that handler's other modes)
  openai-v2-event    ... content ``EVENT_ONLY``: the ``gen_ai.client.inference.operation.details`` log record
  openai-v2-span-and-event  ... content ``SPAN_AND_EVENT``: both (one call, two carriers)
  openai-v2-no-content      ... content ``NO_CONTENT``: spans without messages (capture off)
  openinference      openinference-instrumentation-openai (``llm.input_messages.{i}.message.*``)
  traceloop          Traceloop's opentelemetry-instrumentation-openai (OpenLLMetry)
  none               no LLM instrumentation (only the agent's own spans)
  a,b                two at once (e.g. ``openinference,openai-v2-latest``): every call is recorded twice
--scenario
  single   one call: system + user -> text
  tools    user -> tool call -> the agent runs the tool -> tool result -> final text (2 calls)
  multi    two user turns in one conversation (2 calls, the second carries the history)
Every run is one trace under an ``invoke_agent {--agent-name}`` span carrying ``gen_ai.agent.name``,
``spanrl.rollout_id`` and ``spanrl.task_id`` (when given); ``--reward R`` calls ``spanrl.emit_reward(R)``
inside it. ``--tool-spans`` wraps each tool run in an ``execute_tool {name}`` span (GenAI semconv);
``--tool-error`` makes the tool fail (span status ERROR, ``error.type``). ``--question`` sets the user text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
SYSTEM = "You are a helpful agent."
# opentelemetry-util-genai content capture modes (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)
UTIL_GENAI_MODES = {"openai-v2-latest": "SPAN_ONLY", "openai-v2-event": "EVENT_ONLY",
                    "openai-v2-span-and-event": "SPAN_AND_EVENT", "openai-v2-no-content": "NO_CONTENT"}


def _set_mode_env(instrumentation: str) -> None:
    """Content capture switches are read from the environment at instrument time."""
    if instrumentation == "openai-v2":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    elif instrumentation in UTIL_GENAI_MODES:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = UTIL_GENAI_MODES[instrumentation]
    elif instrumentation == "traceloop":
        os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")


def setup_telemetry(args: argparse.Namespace):
    """Tracer + logger providers exporting OTLP to the collector; returns them for shutdown."""
    from opentelemetry import trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318").rstrip("/")
    if args.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        target = endpoint.removeprefix("http://")
        span_exp, log_exp = OTLPSpanExporter(endpoint=target, insecure=True), OTLPLogExporter(endpoint=target, insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exp = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
        log_exp = OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")
    resource = Resource.create({"service.name": args.service})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exp, max_queue_size=100_000))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exp, max_queue_size=100_000))
    try:
        from opentelemetry._logs import set_logger_provider

        set_logger_provider(logger_provider)
    except ImportError:  # pragma: no cover - older API
        pass
    return tracer_provider, logger_provider


def instrument(name: str, tracer_provider, logger_provider) -> None:
    if name == "openai-v2" or name in UTIL_GENAI_MODES:
        import opentelemetry.instrumentation.openai_v2 as openai_v2
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        if name == "openai-v2":
            # opentelemetry-util-genai >= 1.0 answers "experimental" unconditionally; give the package
            # back the default answer so it runs its own default (log-event) code path.
            openai_v2.is_experimental_mode = lambda: False

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    elif name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    elif name == "traceloop":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    elif name != "none":
        raise SystemExit(f"unknown --instrumentation {name}: use openai-v2, {', '.join(UTIL_GENAI_MODES)}, "
                         "openinference, traceloop or none")


def run_tool(tracer, call, args: argparse.Namespace) -> str:
    """Run the fake tool for one tool call, in an execute_tool span when --tool-spans."""
    from opentelemetry.trace import Status, StatusCode

    query = json.loads(call.function.arguments).get("query", "")
    result = f"sunny in {query}"
    if not args.tool_spans:
        return "error: tool failed" if args.tool_error else result
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
             "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
             "gen_ai.tool.call.arguments": call.function.arguments}
    with tracer.start_as_current_span(f"execute_tool {call.function.name}", attributes=attrs) as span:
        if args.tool_error:
            span.set_attribute("error.type", "ToolError")
            span.set_status(Status(StatusCode.ERROR, "tool failed"))
            result = "error: tool failed"
        span.set_attribute("gen_ai.tool.call.result", result)
    return result


def run_scenario(client, tracer, args: argparse.Namespace) -> int:
    """The agent loop; returns the number of LLM calls."""
    question = args.question
    messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    extra = {"temperature": args.temperature}
    if args.scenario == "single":
        client.chat.completions.create(model=args.model, messages=messages, **extra)
        return 1
    if args.scenario == "multi":
        first = client.chat.completions.create(model=args.model, messages=messages, **extra)
        messages += [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "And tomorrow?"}]
        client.chat.completions.create(model=args.model, messages=messages, **extra)
        return 2
    first = client.chat.completions.create(model=args.model, messages=messages, tools=TOOLS, **extra)
    msg = first.choices[0].message
    messages.append({"role": "assistant", "content": msg.content,
                     "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]})
    for call in msg.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(tracer, call, args)})
    client.chat.completions.create(model=args.model, messages=messages, tools=TOOLS, **extra)
    return 2


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True, help="The fake (or real) OpenAI-compatible /v1 URL.")
    p.add_argument("--instrumentation", default="openai-v2",
                   help="openai-v2 | openai-v2-latest | openinference | traceloop | none; a comma list "
                        "instruments twice (e.g. openinference,openai-v2-latest: one call, two spans)")
    p.add_argument("--scenario", default="tools", choices=["single", "tools", "multi"])
    p.add_argument("--model", default="fake-model")
    p.add_argument("--question", default="What is the weather in Paris?")
    p.add_argument("--temperature", type=float, default=0.5)
    p.add_argument("--agent-name", default="weather-agent")
    p.add_argument("--rollout-id", default=None)
    p.add_argument("--task-id", default=None)
    p.add_argument("--reward", type=float, default=None)
    p.add_argument("--tool-spans", action="store_true")
    p.add_argument("--tool-error", action="store_true")
    p.add_argument("--service", default="instrumented-agent")
    p.add_argument("--protocol", default="http", choices=["http", "grpc"])
    args = p.parse_args(argv)

    names = args.instrumentation.split(",")
    for name in names:
        _set_mode_env(name)
    tracer_provider, logger_provider = setup_telemetry(args)
    for name in names:
        instrument(name, tracer_provider, logger_provider)

    import openai

    import spanrl

    client = openai.OpenAI(base_url=args.base_url, api_key="test-key", max_retries=0)
    tracer = tracer_provider.get_tracer("instrumented_agent")
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": args.agent_name}
    if args.rollout_id:
        attrs["spanrl.rollout_id"] = args.rollout_id
    if args.task_id:
        attrs["spanrl.task_id"] = args.task_id
    with tracer.start_as_current_span(f"invoke_agent {args.agent_name}", attributes=attrs) as root:
        calls = run_scenario(client, tracer, args)
        if args.reward is not None:
            spanrl.emit_reward(args.reward)
        trace_id = format(root.get_span_context().trace_id, "032x")
    tracer_provider.shutdown()
    logger_provider.shutdown()
    print(json.dumps({"trace_id": trace_id, "calls": calls}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
