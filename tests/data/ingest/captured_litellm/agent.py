"""An agent calling models through LiteLLM with its OpenTelemetry logger (litellm.callbacks = ["otel"]);
run by record.sh in a venv with litellm, not by pytest.

Two rollouts under the agent's own invoke_agent span (LiteLLM then writes its GenAI attributes onto
that span), each two chat calls around a tool call; then one call with no span of the agent open
(LiteLLM makes its own litellm_request span), whose answer is an apostrophe-laden text.
"""

import sys
import time

import litellm
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

endpoint, url = sys.argv[1], open(sys.argv[2]).read().strip()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
trace.set_tracer_provider(provider)
litellm.callbacks = ["otel"]
tracer = trace.get_tracer("calc-agent")
TOOLS = [{"type": "function", "function": {"name": "calc", "description": "Evaluate an arithmetic expression.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def chat(messages: list[dict], **kw):
    return litellm.completion(model="openai/fake-model", api_base=url, api_key="x", messages=messages, **kw)


for task in range(2):
    with tracer.start_as_current_span("invoke_agent calc") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "calc")
        root.set_attribute("spanrl.task_id", f"add-{task}")
        msgs = [{"role": "system", "content": "You are a calculator. Use the tool."},
                {"role": "user", "content": f"what is {task} + 2"}]
        first = chat(msgs, tools=TOOLS, temperature=0.7)
        call = first.choices[0].message.tool_calls[0]
        with tracer.start_as_current_span("execute_tool calc") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "calc")
            tool.set_attribute("gen_ai.tool.call.id", call.id)
            result = str(task + 2)
        msgs += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": result}]
        chat(msgs, tools=TOOLS, temperature=0.7)
        root.set_attribute("spanrl.reward", 0.0 if task == 1 else 1.0)
chat([{"role": "user", "content": "it's \"quoted\" and it's None"}])
time.sleep(2)  # LiteLLM logs from a worker thread
provider.force_flush()
