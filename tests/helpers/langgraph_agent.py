"""A two-node LangGraph agent (researcher -> writer) on the real ``langchain-openai`` client, traced
by OpenInference's LangChain instrumentation, exporting OTLP/HTTP to ``$OTEL_EXPORTER_OTLP_ENDPOINT``.

    python tests/helpers/langgraph_agent.py --base-url http://127.0.0.1:PORT/v1 --question "..." --reward 1

No agent-name attribute is set anywhere: the only hint of who made each LLM call is LangGraph's
node name, which LangChain passes to every run inside the node as ``metadata.langgraph_node`` and
OpenInference records as the ``metadata`` JSON attribute. The researcher node calls the model with
a tool bound (the fake server answers with a tool call), runs the tool inside a LangChain tool span
and calls the model again; the writer node makes one call. ``--reward R`` records the outcome with
``spanrl.emit_reward`` inside the graph's root span. Prints ``{"trace_id": ..., "calls": 3}``.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TypedDict


class State(TypedDict):
    question: str
    notes: str
    answer: str


def build_graph(base_url: str) -> Any:
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    llm = ChatOpenAI(model="fake-model", base_url=base_url, api_key="x", temperature=0.5, max_retries=0)

    @tool
    def search(query: str) -> str:
        """Look something up."""
        return f"facts about {query}"

    def researcher(state: State) -> dict[str, str]:
        messages: list[Any] = [SystemMessage("You research."), HumanMessage(state["question"])]
        first = llm.bind_tools([search]).invoke(messages)
        messages.append(first)
        for call in first.tool_calls:
            messages.append(ToolMessage(search.invoke(call["args"]), tool_call_id=call["id"]))
        second = llm.invoke(messages)
        return {"notes": str(second.content)}

    def writer(state: State) -> dict[str, str]:
        reply = llm.invoke([SystemMessage("You write."), HumanMessage(f"Write up: {state['notes']}")])
        return {"answer": str(reply.content)}

    graph = StateGraph(State)
    graph.add_node("researcher", researcher)
    graph.add_node("writer", writer)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", "writer")
    graph.add_edge("writer", END)
    return graph.compile()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--question", default="What is OTLP?")
    p.add_argument("--reward", type=float, default=None)
    p.add_argument("--service", default="langgraph-agent")
    args = p.parse_args()

    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import spanrl

    os.environ.setdefault("LANGSMITH_TRACING", "false")  # LangSmith's own tracer must not try the network
    endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/")
    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(provider)
    LangChainInstrumentor().instrument(tracer_provider=provider)

    app = build_graph(args.base_url)
    tracer = trace.get_tracer("langgraph-agent")
    with tracer.start_as_current_span("run") as root:  # the rollout's root; its trace id is the rollout id
        result = app.invoke({"question": args.question, "notes": "", "answer": ""})
        if args.reward is not None:
            spanrl.emit_reward(args.reward)
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    print(json.dumps({"trace_id": trace_id, "calls": 3, "answer": result["answer"]}))


if __name__ == "__main__":
    main()
