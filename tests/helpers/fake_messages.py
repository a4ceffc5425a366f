"""Anthropic's Messages API as a local fake speaks it (tests/helpers/fake_apis.py): deterministic
replies and their server-sent events, written from the API reference's message and event shapes.

Reply rules: the last message holds a ``tool_result`` -> ``"Tool said: <its content>"``; else tools
offered -> a ``tool_use`` of the first tool with ``{"query": <last user text>}``; else
``"Echo: <last user text>"``. Usage counts words. The Messages API returns no token ids.
"""

from __future__ import annotations

import json
from typing import Any


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _text(blocks: list[dict[str, Any]]) -> str:
    return " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    messages = body.get("messages") or []
    last = _blocks(messages[-1].get("content")) if messages else []
    last_user = next((_text(_blocks(m.get("content"))) for m in reversed(messages)
                      if m.get("role") == "user" and _text(_blocks(m.get("content")))), "")
    results = [b for b in last if b.get("type") == "tool_result"]
    if results:
        content = results[-1].get("content")
        said = content if isinstance(content, str) else _text(_blocks(content))
        blocks, stop = [{"type": "text", "text": f"Tool said: {said}"}], "end_turn"
    elif body.get("tools"):
        blocks = [{"type": "tool_use", "id": f"toolu_{n}", "name": body["tools"][0]["name"], "input": {"query": last_user}}]
        stop = "tool_use"
    else:
        blocks, stop = [{"type": "text", "text": f"Echo: {last_user}"}], "end_turn"
    words = sum(len(_text(_blocks(m.get("content"))).split()) for m in messages) or 1
    out = sum(len(str(b.get("text") or json.dumps(b.get("input"))).split()) for b in blocks)
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body.get("model", "fake-claude"),
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": words, "output_tokens": out}}


def events(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """message_start, per block content_block_start / _delta (text word by word, a tool's input JSON
    in two pieces) / _stop, a ping, message_delta (stop reason, output tokens), message_stop."""
    start = dict(resp, content=[], stop_reason=None, usage={"input_tokens": resp["usage"]["input_tokens"],
                                                            "output_tokens": 1})
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for i, block in enumerate(resp["content"]):
        if block["type"] == "text":
            out.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            words = block["text"].split(" ")
            out.extend({"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": w if k == 0 else " " + w}} for k, w in enumerate(words))
        else:
            out.append({"type": "content_block_start", "index": i, "content_block": dict(block, input={})})
            raw = json.dumps(block["input"])
            out.extend({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}
                       for piece in (raw[:len(raw) // 2], raw[len(raw) // 2:]))
        out.append({"type": "content_block_stop", "index": i})
    out.append({"type": "message_delta", "delta": {"stop_reason": resp["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": resp["usage"]["output_tokens"]}})
    out.append({"type": "message_stop"})
    return out
