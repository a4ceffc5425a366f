"""Anthropic's Messages API over ``spanrl serve``'s chat pipeline (``POST /v1/messages``).

A Messages request becomes a chat-completions request (``system`` the system message; ``text``
blocks the text, ``tool_use`` blocks the assistant's tool calls, each ``tool_result`` a tool
message; tools with ``input_schema`` the chat tools; ``stop_sequences`` the stops), runs through the
same engine, template and tool parsing, and its completion is written back as a Message (a ``text``
block, then a ``tool_use`` block per tool call; ``stop_reason`` in Anthropic's words). Streamed as
the API streams: message_start, the blocks' start / delta / stop, message_delta, message_stop.

The Messages API has no token-id field; the server's own span records the ids all the same (as for
every completion it serves), so the lake has them.
"""

from __future__ import annotations

import json
from typing import Any

from spanrl.serve.api import ApiError

STOP = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise ApiError(f"{where}.content must be a string or a list of content blocks", param="messages")
    return content


def _text(blocks: list[dict[str, Any]]) -> str:
    return "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("messages must be a non-empty list", param="messages")
    system = body.get("system")
    out = [{"role": "system", "content": system if isinstance(system, str) else _text(_blocks(system, "system"))}] \
        if system else []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            raise ApiError(f"messages[{i}] needs a role of user or assistant", param="messages")
        blocks = _blocks(msg.get("content"), f"messages[{i}]")
        if msg["role"] == "assistant":
            calls = [{"id": b.get("id"), "type": "function", "function": {
                "name": b.get("name"), "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                for b in blocks if b.get("type") == "tool_use"]
            out.append({"role": "assistant", "content": _text(blocks) or None, **({"tool_calls": calls} if calls else {})})
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                content = b.get("content")
                out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"),
                            "content": content if isinstance(content, str) else _text(_blocks(content or [], "tool_result"))})
        if _text(blocks) or not any(b.get("type") == "tool_result" for b in blocks):
            out.append({"role": "user", "content": _text(blocks)})
    return out


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request this Messages request is."""
    chat: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body)}
    tools = []
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise ApiError(f"tools[{i}] needs a name (and an input_schema)", param="tools")
        tools.append({"type": "function", "function": {"name": tool["name"], "description": tool.get("description") or "",
                                                       "parameters": tool.get("input_schema") or {"type": "object"}}})
    if tools:
        chat["tools"] = tools
    if isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "none":
        chat["tool_choice"] = "none"
    for key, chat_key in (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "max_tokens"),
                          ("stop_sequences", "stop")):
        if body.get(key) is not None:
            chat[chat_key] = body[key]
    return chat


def from_chat(chat: dict[str, Any], body: dict[str, Any], _decode: Any) -> dict[str, Any]:
    """The Message for a finished chat completion (its id is the completion's)."""
    choice = chat["choices"][0]
    message = choice["message"]
    content: list[dict[str, Any]] = [{"type": "text", "text": message["content"]}] if message.get("content") else []
    for call in message.get("tool_calls") or []:
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
        except json.JSONDecodeError:
            args = {"arguments": call["function"]["arguments"]}  # Anthropic's input is an object: never drop the text
        content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": args})
    return {"id": chat["id"], "type": "message", "role": "assistant", "model": chat["model"], "content": content,
            "stop_reason": STOP.get(choice["finish_reason"], "end_turn"), "stop_sequence": None,
            "usage": {"input_tokens": chat["usage"]["prompt_tokens"], "output_tokens": chat["usage"]["completion_tokens"]}}


def events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The finished Message as the API's stream."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0}}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            out += [{"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                    {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}}]
        else:
            out += [{"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}},
                    {"type": "content_block_delta", "index": i,
                     "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}}]
        out.append({"type": "content_block_stop", "index": i})
    out += [{"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
             "usage": {"output_tokens": message["usage"]["output_tokens"]}},
            {"type": "message_stop"}]
    return out
