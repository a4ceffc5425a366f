"""A calculator agent traced by OpenLIT (run by record.sh in a venv with openlit; not by pytest).

Three rollouts, each an invoke_agent root span (task id, reward) around two chat calls with a tool
call between them (execute_tool span), the second call's prompt holding the assistant's tool call and
the tool's answer; plus one rollout with a plain call and no tools.
"""

import sys

import openai
import openlit
from opentelemetry import trace

endpoint, url = sys.argv[1], open(sys.argv[2]).read().strip()
openlit.init(otlp_endpoint=endpoint, application_name="calc-openlit", disable_batch=True, disable_metrics=True,
             capture_message_content=True)
tracer = trace.get_tracer("calc-agent")
client = openai.OpenAI(base_url=url, api_key="x")
TOOLS = [{"type": "function", "function": {"name": "calc", "description": "Evaluate an arithmetic expression.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
for task in range(3):
    with tracer.start_as_current_span("invoke_agent calc") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "calc")
        root.set_attribute("spanrl.task_id", f"add-{task}")
        msgs = [{"role": "system", "content": "You are a calculator. Use the tool."},
                {"role": "user", "content": f"what is {task} + 2"}]
        first = client.chat.completions.create(model="fake-model", messages=msgs, tools=TOOLS, temperature=0.7)
        call = first.choices[0].message.tool_calls[0]
        with tracer.start_as_current_span("execute_tool calc") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "calc")
            tool.set_attribute("gen_ai.tool.call.id", call.id)
            result = str(task + 2)
        msgs += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": result}]
        client.chat.completions.create(model="fake-model", messages=msgs, tools=TOOLS, temperature=0.7)
        root.set_attribute("spanrl.reward", 0.0 if task == 1 else 1.0)
with tracer.start_as_current_span("invoke_agent echo") as root:
    root.set_attribute("gen_ai.operation.name", "invoke_agent")
    root.set_attribute("gen_ai.agent.name", "echo")
    root.set_attribute("spanrl.task_id", "echo-0")
    client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "say hi"}])
    root.set_attribute("spanrl.reward", 1.0)
trace.get_tracer_provider().force_flush()
