"""An agent with no tracing code at all: the plain ``openai`` SDK, tool call -> tool result ->
answer. Traced only from outside, by ``opentelemetry-instrument python zero_code_agent.py`` (the
standard Python zero-code path: opentelemetry-distro + whatever instrumentors are installed),
configured only by the environment ``spanrl rollout`` and the user set. Reads the task on stdin."""

from __future__ import annotations

import json
import sys

import openai

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def main() -> None:
    question = sys.stdin.read().strip()
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, temperature=0)
    msg = first.choices[0].message
    messages.append({"role": "assistant", "content": msg.content,
                     "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]})
    for call in msg.tool_calls or []:
        query = json.loads(call.function.arguments).get("query", "")
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"found {query}"})
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, temperature=0)
    print(final.choices[0].message.content)


if __name__ == "__main__":
    main()
