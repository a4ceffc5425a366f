"""An agent on Anthropic's SDK with one tool, configured only by the environment
(``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, which ``spanrl rollout`` sets): no spanrl import, no
OpenTelemetry. It asks with the tool, runs the tool call itself, and asks again with the result:
once for the task as it came (``messages.create``), once for ``stream <task>`` with both requests
streamed (``messages.stream``), in one process. Reads the task on stdin, prints both answers.
"""

from __future__ import annotations

import sys

import anthropic

TOOLS = [{"name": "lookup", "description": "Look something up.",
          "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}]
SYSTEM = "Answer briefly, using the lookup tool."


def ask(client: anthropic.Anthropic, messages: list, stream: bool):
    if not stream:
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=256, system=SYSTEM, tools=TOOLS,
                                      messages=messages)
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256, system=SYSTEM, tools=TOOLS,
                                messages=messages) as events:
        return events.get_final_message()


def solve(client: anthropic.Anthropic, question: str, stream: bool) -> str:
    messages: list = [{"role": "user", "content": question}]
    first = ask(client, messages, stream)
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    results = [{"type": "tool_result", "tool_use_id": b.id, "content": f"found {b.input['query']}"}
               for b in first.content if b.type == "tool_use"]
    if not results:
        sys.exit(f"expected a tool call, got {first.content}")
    messages.append({"role": "user", "content": results})
    final = ask(client, messages, stream)
    return "".join(b.text for b in final.content if b.type == "text")


def main() -> None:
    question = sys.stdin.read().strip()
    client = anthropic.Anthropic(max_retries=0)
    print(solve(client, question, stream=False))
    print(solve(client, f"stream {question}", stream=True))


if __name__ == "__main__":
    main()
