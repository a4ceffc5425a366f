"""A tool-calling loop on the plain ``openai`` SDK, as its documentation shows one: call the model, run
every tool call it made (several at once when it asks for them in parallel), send the results back,
until it answers. No spanrl import, no OpenTelemetry code; traced from outside by
``opentelemetry-instrument``. ``--stream`` reads the answers as server-sent events. Task on stdin."""

from __future__ import annotations

import argparse
import json
import sys

import openai

TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"]}}}]


def ask(client: openai.OpenAI, messages: list[dict], stream: bool) -> dict:
    """One model turn as a message dict (streamed deltas put back together when ``stream``)."""
    if not stream:
        msg = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
        return {"role": "assistant", "content": msg.content,
                "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]}
    content, calls = "", {}
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True,
                                                stream_options={"include_usage": True}):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": tc.id, "type": "function",
                                                   "function": {"name": "", "arguments": ""}})
                call["function"]["name"] += tc.function.name or ""
                call["function"]["arguments"] += tc.function.arguments or ""
    return {"role": "assistant", "content": content or None, "tool_calls": [calls[i] for i in sorted(calls)]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--stream", action="store_true")
    args = p.parse_args()
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    messages = [{"role": "system", "content": "Use the add tool."}, {"role": "user", "content": sys.stdin.read().strip()}]
    for _ in range(4):
        reply = ask(client, messages, args.stream)
        if not reply["tool_calls"]:
            print(reply["content"])
            return
        messages.append(reply)
        for call in reply["tool_calls"]:
            a = json.loads(call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(a["a"] + a["b"])})
    print(messages[-1]["content"])


if __name__ == "__main__":
    main()
