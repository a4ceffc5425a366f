"""An agent with no telemetry at all: the plain ``openai`` SDK, configured only by OPENAI_BASE_URL.

Reads the task from stdin; asks with a tool (non-streaming), answers the tool call itself, then asks
again STREAMING and prints the streamed answer. It never asks for token ids: the gateway does, and
must hand back exactly what a plain OpenAI server would (the test's agent checks no extra field leaks).
"""

from __future__ import annotations

import json
import sys

import openai

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def main() -> None:
    client = openai.OpenAI(max_retries=0)
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": sys.stdin.read().strip()}]
    first = client.chat.completions.create(model="policy", messages=messages, tools=TOOLS, temperature=0)
    extras = {"prompt_token_ids", "token_ids"} & (set(first.model_extra or {}) | set(first.choices[0].model_extra or {}))
    if extras:
        sys.exit(f"the gateway leaked {sorted(extras)} to an agent that did not ask for them")
    msg = first.choices[0].message
    messages.append({"role": "assistant", "content": msg.content, "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]})
    for call in msg.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": f"found {json.loads(call.function.arguments).get('query', '')}"})
    parts = []
    for chunk in client.chat.completions.create(model="policy", messages=messages, tools=TOOLS, stream=True):
        if "prompt_token_ids" in (chunk.model_extra or {}) or any("token_ids" in (c.model_extra or {}) for c in chunk.choices):
            sys.exit("the gateway leaked token ids into a stream")
        parts.extend(c.delta.content or "" for c in chunk.choices)
    print("".join(parts))


if __name__ == "__main__":
    main()
