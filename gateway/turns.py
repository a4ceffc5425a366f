"""A stored prompt's worked examples as conversation turns (``PromptVersion.turns``, chat messages in
OpenAI shape), put into a request in its own API's shape: after the system message of a chat
completion, before the input items of a Responses call, before the messages of a Messages call. A
model follows examples it sees as its own earlier turns, in the tool-call syntax its chat template
renders, more closely than the same examples written into the system prompt (docs/prompts.md).

A Responses call that continues a stored conversation (``previous_response_id``) gets none: its first
call put them in already.
"""

from __future__ import annotations

import copy
import json
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def responses_items(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses input items (function calls and their outputs as items of their own)."""
    items: list[dict[str, Any]] = []
    for m in turns:
        role = m.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id") or "",
                          "output": _text(m.get("content"))})
            continue
        if _text(m.get("content")) or not _calls(m):
            items.append({"role": role, "content": _text(m.get("content"))})
        for c in _calls(m):
            fn = c.get("function") or {}
            items.append({"type": "function_call", "call_id": c.get("id") or "", "name": fn.get("name") or "",
                          "arguments": fn.get("arguments") or "{}"})
    return items


def messages_turns(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Anthropic Messages turns: tool calls as ``tool_use`` blocks, tool results as a
    user turn's ``tool_result`` blocks, consecutive turns of one role merged (the API wants them to alternate)."""
    out: list[dict[str, Any]] = []
    for m in turns:
        role, text = m.get("role"), _text(m.get("content"))
        if role == "tool":
            role, blocks = "user", [{"type": "tool_result", "tool_use_id": m.get("tool_call_id") or "", "content": text}]
        else:
            blocks = [{"type": "text", "text": text}] if text else []
            for c in _calls(m):
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                blocks.append({"type": "tool_use", "id": c.get("id") or "", "name": fn.get("name") or "",
                               "input": args if isinstance(args, dict) else {}})
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    return out


def insert_turns(body: dict[str, Any], route: str, system: dict[str, Any], turns: list[dict[str, Any]]) -> int:
    """Put ``turns`` into ``body`` (``system``: the object that holds its system prompt); how many chat
    messages went in (0: this call takes none)."""
    if not turns:
        return 0
    if route == "/chat/completions":
        messages = body["messages"]
        at = next(i for i, m in enumerate(messages) if m is system) + 1
        messages[at:at] = copy.deepcopy(turns)
        return len(turns)
    if route == "/responses":
        if body.get("previous_response_id"):
            return 0
        given = body.get("input")
        given = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        body["input"] = responses_items(turns) + given
        return len(turns)
    if route == "/messages":
        body["messages"] = messages_turns(turns) + list(body.get("messages") or [])
        return len(turns)
    return 0
