"""Agents on real frameworks, each run correct or with one injected fault, for the AIR corpus
(tests/data/air_corpus/, recorded by its record.sh; asserted by tests/transitions/test_air_corpus.py).

    python tests/helpers/air_agents.py --scenario langgraph_react --base-url http://127.0.0.1:PORT/v1

One scenario per process (instrumentations patch the libraries globally). Every run is one trace
under a root span ``run {scenario}`` carrying ``spanrl.rollout_id`` = ``spanrl.task_id`` = the scenario
name, so the corpus test finds each scenario's rollout by name. What the model answers is scripted
through the fake server's ``fake-script:`` marker (tests/helpers/fake_openai.py): the script is the
tail of the user text. A fault makes the run fail, or the framework recover, exactly as it would
with a real model; the run exits 0 either way (the error is printed) so its spans are kept.
Telemetry goes over OTLP/HTTP to ``$OTEL_EXPORTER_OTLP_ENDPOINT``; prints ``{"scenario", "trace_id", "error"}``.
"""

import argparse
import asyncio
import json
import os
import time
import warnings
from collections.abc import Callable
from typing import Annotated, Any

ADD = {"name": "add", "arguments": {"a": 2, "b": 3}}
LOOKUP = {"name": "lookup", "arguments": {"city": "Paris"}}
# a tool the agent never offered (seen live: a small model invents a plausible tool name)
UNKNOWN = {"name": "calculate_total_remaining", "arguments": {"a": 2, "b": 3}}


def ask(question: str, steps: list[Any]) -> str:
    """The user text: a question with the fake server's script at its end."""
    return f"{question} fake-script: {json.dumps(steps)}"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"rainy in {city}"


def broken_lookup(city: str) -> str:
    """The weather in a city (its backend is down: raises)."""
    raise ConnectionError(f"weather backend unreachable for {city}")


async def slow_lookup(city: str) -> str:
    """The weather in a city (its backend hangs past the tool's timeout)."""
    await asyncio.sleep(5)
    return f"rainy in {city}"


# ---------------------------------------------------------------- LangGraph (OpenInference LangChain)

def _chat_model(base_url: str, **kw: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="fake-model", base_url=base_url, api_key="x", max_retries=0, **kw)


def _react(base_url: str, tools: list[Callable[..., Any]], question: str, **kw: Any) -> str:
    from langgraph.prebuilt import ToolNode, create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents (not installed)
        agent = create_react_agent(_chat_model(base_url, **kw), ToolNode(tools, handle_tool_errors=True))
    out = agent.invoke({"messages": [("user", question)]})
    return str(out["messages"][-1].content)


def langgraph_react(base_url: str) -> str:
    return _react(base_url, [add, lookup], ask("2+3, then the weather in Paris?", [[ADD], [LOOKUP], "5; rainy."]))


def langgraph_parallel(base_url: str) -> str:
    return _react(base_url, [add, lookup], ask("2+3 and the weather in Paris?", [[ADD, LOOKUP], "5; rainy."]))


def langgraph_two_instrumentations(base_url: str) -> str:
    """The issue-24 setup: OpenInference LangChain and the official GenAI openai-v2 (content capture
    off, its default) both active, so every model call is recorded twice."""
    return _react(base_url, [add, lookup], ask("2+3, then the weather in Paris?", [[ADD], [LOOKUP], "5; rainy."]))


def langgraph_streaming(base_url: str) -> str:
    return _react(base_url, [add, lookup], ask("2+3?", [[ADD], "5."]), streaming=True)


def langgraph_handoff(base_url: str) -> str:
    """LangGraph's multi-agent handoff (the langgraph-swarm / supervisor pattern): the triage agent's
    tool ``transfer_to_math_expert`` returns ``Command(goto="math_expert", graph=Command.PARENT)`` with
    the conversation so far; the math expert answers with its own tool. (No "agent" in the tool's
    name: OpenInference records a LangChain run whose name holds "agent" as an AGENT span, not a TOOL.)"""
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import InjectedState, create_react_agent
    from langgraph.types import Command

    @tool
    def transfer_to_math_expert(state: Annotated[dict, InjectedState],
                                tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the conversation to the math expert."""
        done = ToolMessage("Transferred to math_expert", tool_call_id=tool_call_id)
        return Command(goto="math_expert", graph=Command.PARENT, update={"messages": [*state["messages"], done]})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        triage = create_react_agent(_chat_model(base_url), [transfer_to_math_expert], name="triage_agent")
        math = create_react_agent(_chat_model(base_url), [add], name="math_expert")
    graph = (StateGraph(MessagesState).add_node("triage_agent", triage, destinations=("math_expert",))
             .add_node("math_expert", math).add_edge(START, "triage_agent").compile())
    out = graph.invoke({"messages": [("user", ask("2+3?", [[{"name": "transfer_to_math_expert", "arguments": {}}],
                                                           [ADD], "5."]))]})
    return str(out["messages"][-1].content)


def langgraph_fault_tool_raises(base_url: str) -> str:
    return _react(base_url, [add, broken_lookup],
                  ask("Weather in Paris?", [[{"name": "broken_lookup", "arguments": {"city": "Paris"}}], "Sorry."]))


def langgraph_fault_args_schema(base_url: str) -> str:
    return _react(base_url, [add, lookup], ask("2+3?", [[{"name": "add", "arguments": {"a": "two", "b": 3}}], "5."]))


def langgraph_fault_args_not_json(base_url: str) -> str:
    return _react(base_url, [add, lookup], ask("2+3?", [[{"name": "add", "arguments": "{a: 2, b: 3"}], "5."]))


def langgraph_fault_unknown_tool(base_url: str) -> str:
    """The model calls a tool the agent never offered: ToolNode answers it with an error message
    (no tool runs) and the model answers next."""
    return _react(base_url, [add, lookup], ask("2+3?", [[UNKNOWN], "5."]))


def langgraph_fault_retry(base_url: str) -> str:
    """The app retries a failed model request as it was (``with_retry``): the same prompt twice."""
    from langchain_core.messages import HumanMessage

    llm = _chat_model(base_url).with_retry(stop_after_attempt=2, wait_exponential_jitter=False)
    return str(llm.invoke([HumanMessage(ask("Hello?", [{"fail_first": 500, "then": "Hi."}]))]).content)


# ---------------------------------------------------------------- OpenAI Agents SDK (OpenInference)

def _agents_model(base_url: str, responses: bool = False) -> Any:
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    return OpenAIResponsesModel("fake-model", client) if responses else OpenAIChatCompletionsModel("fake-model", client)


def _agents_run(base_url: str, tools: list[Any], question: str, handoff: bool = False, stream: bool = False,
                responses: bool = False) -> str:
    """``responses``: the Responses API model (record.py's fake serves it scripted, not streamed)."""
    from agents import Agent, Runner

    model = _agents_model(base_url, responses)
    math = Agent(name="math_agent", instructions="You do math.", model=model, tools=tools)
    agent = Agent(name="triage_agent", instructions="Route to the right agent.", model=model,
                  handoffs=[math]) if handoff else math
    if not stream:
        return str(Runner.run_sync(agent, question).final_output)

    async def streamed() -> str:
        run = Runner.run_streamed(agent, question)
        async for _ in run.stream_events():
            pass
        return str(run.final_output)

    return asyncio.run(streamed())


def _agents_tool(fn: Callable[..., Any], **kw: Any) -> Any:
    from agents import function_tool

    return function_tool(fn, **kw)


def agents_handoff(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(add)], handoff=True, question=ask(
        "2+3?", [[{"name": "transfer_to_math_agent", "arguments": {}}], [ADD], "5."]))


def agents_streaming(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(add)], handoff=True, stream=True, question=ask(
        "2+3?", [[{"name": "transfer_to_math_agent", "arguments": {}}], [ADD], "5."]))


def agents_parallel(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(add), _agents_tool(lookup)],
                       question=ask("2+3 and the weather in Paris?", [[ADD, LOOKUP], "5; rainy."]))


def agents_responses(base_url: str) -> str:
    """The handoff and tool run on the Responses model (the SDK's default; its spans record the
    offered tools, the handoff among them)."""
    return _agents_run(base_url, [_agents_tool(add)], handoff=True, responses=True, question=ask(
        "2+3?", [[{"name": "transfer_to_math_agent", "arguments": {}}], [ADD], "5."]))


def agents_fault_tool_raises(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(broken_lookup)], question=ask(
        "Weather in Paris?", [[{"name": "broken_lookup", "arguments": {"city": "Paris"}}], "Sorry."]))


def agents_fault_tool_timeout(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(slow_lookup, timeout=0.2, timeout_behavior="raise_exception")],
                       question=ask(
        "Weather in Paris?", [[{"name": "slow_lookup", "arguments": {"city": "Paris"}}], "Sorry."]))


def agents_blind_tool_timeout(base_url: str) -> str:
    """The SDK's default timeout handling ("error_as_result"): the model is told, the tool span ends OK."""
    return _agents_run(base_url, [_agents_tool(slow_lookup, timeout=0.2)], question=ask(
        "Weather in Paris?", [[{"name": "slow_lookup", "arguments": {"city": "Paris"}}], "Sorry."]))


def agents_fault_args_not_json(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(add)], question=ask(
        "2+3?", [[{"name": "add", "arguments": "{a: 2, b: 3"}], "5."]))


def agents_fault_args_schema(base_url: str) -> str:
    return _agents_run(base_url, [_agents_tool(add)], question=ask(
        "2+3?", [[{"name": "add", "arguments": {"a": 2}}], "5."]))


def agents_fault_unknown_tool(base_url: str) -> str:
    """The model calls a tool the agent never offered: the SDK raises ModelBehaviorError, runs no
    tool, and the run ends with no answer. The Responses model (the SDK's default): its spans
    record the tools the call offered."""
    return _agents_run(base_url, [_agents_tool(add)], question=ask("2+3?", [[UNKNOWN], "5."]), responses=True)


def agents_blind_unknown_tool(base_url: str) -> str:
    """The same on the Chat Completions model: OpenInference records no tool definitions on its
    generation span, so which tools were offered is unknown."""
    return _agents_run(base_url, [_agents_tool(add)], question=ask("2+3?", [[UNKNOWN], "5."]))


# ---------------------------------------------------------------- Pydantic AI (its own instrumentation)

def _pydantic_agent(base_url: str, tools: list[Any]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="x"))
    agent = Agent(model, name="helper_bot", system_prompt="Be brief.", tools=tools)
    Agent.instrument_all()
    return agent


def pydantic_ai_tools(base_url: str) -> str:
    agent = _pydantic_agent(base_url, [add, lookup])
    return str(agent.run_sync(ask("2+3, then the weather in Paris?", [[ADD], [LOOKUP], "5; rainy."])).output)


def pydantic_ai_parallel(base_url: str) -> str:
    agent = _pydantic_agent(base_url, [add, lookup])
    return str(agent.run_sync(ask("2+3 and the weather in Paris?", [[ADD, LOOKUP], "5; rainy."])).output)


def pydantic_ai_fault_tool_timeout(base_url: str) -> str:
    from pydantic_ai import Tool

    agent = _pydantic_agent(base_url, [Tool(slow_lookup, timeout=0.2)])
    return str(agent.run_sync(ask("Weather in Paris?", [[{"name": "slow_lookup", "arguments": {"city": "Paris"}}],
                                                        "Sorry."])).output)


def pydantic_ai_fault_args_schema(base_url: str) -> str:
    agent = _pydantic_agent(base_url, [add])
    return str(agent.run_sync(ask("2+3?", [[{"name": "add", "arguments": {"a": "two", "b": 3}}], [ADD], "5."])).output)


def pydantic_ai_fault_unknown_tool(base_url: str) -> str:
    """The model calls a tool the agent never offered: Pydantic AI tells it so (a retry prompt) and
    the model answers next."""
    agent = _pydantic_agent(base_url, [add])
    return str(agent.run_sync(ask("2+3?", [[UNKNOWN], "5."])).output)


def pydantic_ai_fault_gives_up(base_url: str) -> str:
    """The model keeps sending bad arguments: past the tool's retries the run fails (the agent step
    records the exception)."""
    agent = _pydantic_agent(base_url, [add])
    bad = [{"name": "add", "arguments": {"a": "two", "b": 3}}]
    return str(agent.run_sync(ask("2+3?", [bad, bad, bad, "5."])).output)


# ---------------------------------------------------------------- plain openai client (official GenAI openai-v2)

OPENAI_TOOLS = [{"type": "function", "function": {
    "name": name, "description": doc,
    "parameters": {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}}}
    for name, doc, props in [("add", "Add two integers.", {"a": {"type": "integer"}, "b": {"type": "integer"}}),
                             ("lookup", "The weather in a city.", {"city": {"type": "string"}})]]


def _openai_loop(base_url: str, question: str, stream: bool = False, retry: bool = False) -> str:
    """A hand-written tool loop on the openai client, no tool spans (the official instrumentation
    records model calls only); ``retry``: an app-level retry that re-sends a failed request as it was."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]
    for _ in range(4):
        for attempt in range(2 if retry else 1):
            try:
                msg = _complete(client, messages, stream)
                break
            except openai.InternalServerError:
                if attempt:
                    raise
        messages.append({"role": "assistant", "content": msg["content"], "tool_calls": msg["tool_calls"] or None})
        if not msg["tool_calls"]:
            return str(msg["content"])
        for call in msg["tool_calls"]:
            try:
                result = str({"add": add, "lookup": lookup}[call["function"]["name"]](**json.loads(call["function"]["arguments"])))
            except (ValueError, TypeError, KeyError) as exc:
                result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return "gave up"


def _complete(client: Any, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One chat completion as a message dict (a streamed one reassembled from its deltas)."""
    if not stream:
        msg = client.chat.completions.create(model="fake-model", messages=messages, tools=OPENAI_TOOLS).choices[0].message
        return {"content": msg.content, "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]}
    content, calls = "", {}
    for chunk in client.chat.completions.create(model="fake-model", messages=messages, tools=OPENAI_TOOLS,
                                                stream=True, stream_options={"include_usage": True}):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": tc.id, "type": "function", "function": {"name": "", "arguments": ""}})
                c["function"]["name"] += tc.function.name or ""
                c["function"]["arguments"] += tc.function.arguments or ""
    return {"content": content or None, "tool_calls": [calls[i] for i in sorted(calls)]}


def openai_parallel(base_url: str) -> str:
    return _openai_loop(base_url, ask("2+3 and the weather in Paris?", [[ADD, LOOKUP], "5; rainy."]))


def openai_streaming(base_url: str) -> str:
    return _openai_loop(base_url, ask("2+3, then the weather in Paris?", [[ADD], [LOOKUP], "5; rainy."]), stream=True)


def openai_no_content(base_url: str) -> str:
    return _openai_loop(base_url, ask("2+3, then the weather in Paris?", [[ADD], [LOOKUP], "5; rainy."]))


def openai_fault_args_not_json(base_url: str) -> str:
    return _openai_loop(base_url, ask("2+3?", [[{"name": "add", "arguments": "{a: 2, b: 3"}], "5."]))


def openai_blind_args_schema(base_url: str) -> str:
    """Out-of-schema arguments where the instrumentation records no tool definitions (openai-v2 2.4b0)."""
    return _openai_loop(base_url, ask("2+3?", [[{"name": "add", "arguments": {"a": 2, "c": 3}}], "5."]))


def openai_fault_retry(base_url: str) -> str:
    return _openai_loop(base_url, ask("2+3?", [{"fail_first": 500, "then": [ADD]}, "5."]), retry=True)


# scenario -> (instrumentation, agent)
SCENARIOS: dict[str, tuple[str, Callable[[str], str]]] = {
    name: (inst, fn) for inst, fns in {
        "openinference-langchain": [langgraph_react, langgraph_parallel, langgraph_streaming, langgraph_handoff,
                                    langgraph_fault_tool_raises, langgraph_fault_args_schema,
                                    langgraph_fault_args_not_json, langgraph_fault_retry, langgraph_fault_unknown_tool],
        "openinference-openai-agents": [agents_handoff, agents_streaming, agents_parallel, agents_responses,
                                        agents_fault_tool_raises,
                                        agents_fault_tool_timeout, agents_blind_tool_timeout,
                                        agents_fault_args_not_json,
                                        agents_fault_args_schema, agents_fault_unknown_tool,
                                        agents_blind_unknown_tool],
        "pydantic-ai": [pydantic_ai_tools, pydantic_ai_parallel, pydantic_ai_fault_tool_timeout,
                        pydantic_ai_fault_args_schema, pydantic_ai_fault_gives_up, pydantic_ai_fault_unknown_tool],
        "openai-v2": [openai_parallel, openai_streaming, openai_fault_args_not_json, openai_blind_args_schema,
                      openai_fault_retry],
        "openai-v2-no-content": [openai_no_content],
        "openinference-langchain+openai-v2-no-content": [langgraph_two_instrumentations],
    }.items() for fn in fns for name in [fn.__name__]}


def instrument(name: str, provider: Any, logger_provider: Any) -> None:
    """The instrumentation a scenario's users turn on (content capture on unless the name says off;
    ``a+b``: both)."""
    if "+" in name:
        for one in name.split("+"):
            instrument(one, provider, logger_provider)
    elif name == "openinference-langchain":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif name == "openinference-openai-agents":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)  # exclusive: the SDK's own exporter is off
    elif name.startswith("openai-v2"):
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logger_provider)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    p.add_argument("--base-url", required=True)
    args = p.parse_args()
    inst, agent = SCENARIOS[args.scenario]
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = (
        "NO_CONTENT" if inst.endswith("no-content") else "SPAN_ONLY")

    from opentelemetry import trace
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import spanrl

    endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/")
    resource = Resource.create({"service.name": f"air-{inst}"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")))
    set_logger_provider(logger_provider)
    instrument(inst, provider, logger_provider)

    error = None
    attrs = {"spanrl.rollout_id": args.scenario, "spanrl.task_id": args.scenario}
    with trace.get_tracer("air-agents").start_as_current_span(f"run {args.scenario}", attributes=attrs) as root:
        try:
            agent(args.base_url)
        except Exception as exc:  # a fault may end the run: its spans are what the corpus is for
            error = f"{type(exc).__name__}: {exc}"
        spanrl.emit_reward(0.0 if "fault" in args.scenario else 1.0)
        trace_id = format(root.get_span_context().trace_id, "032x")
    time.sleep(0.1)
    provider.shutdown()
    logger_provider.shutdown()
    print(json.dumps({"scenario": args.scenario, "trace_id": trace_id, "error": error}))


if __name__ == "__main__":
    main()
