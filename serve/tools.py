"""Chat messages in, tool calls out: the text side of ``spanrl serve``.

Rendering (OpenAI messages with JSON-*string* arguments and ``content: None`` -> the exact prompt ids
the model sees, the ids the server's span reports) is ``spanrl.trainer.render``: one renderer, so the
trainer's text path re-renders a stored call exactly as the server rendered it. Its names are
re-exported here for the code that imports them from serve. What stays here is the way back: the
model's ``<tool_call>{json}</tool_call>`` text (the format the renderer prompts a template without
tool support for, and Qwen/Hermes templates use natively) parsed into API tool calls.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from spanrl.trainer.render import (
    normalise_messages,
    render_prompt,
    template_handles_tools,
    tool_call_text,
)

__all__ = ["TOOL_CALL_RE", "ParsedReply", "normalise_messages", "parse_tool_calls", "render_prompt",
           "template_handles_tools", "tool_call_text"]  # the renderer's names, re-exported for serve's callers
_tool_call_text = tool_call_text  # the name this module gave it before the renderer moved

TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


@dataclass
class ParsedReply:
    """The assistant message the API returns: text outside tool-call blocks, plus the calls."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def parse_tool_calls(text: str) -> ParsedReply:
    """Split ``<tool_call>{json}</tool_call>`` blocks out of a reply (Hermes/Qwen format).

    All-or-nothing: if any block is not a JSON object with a string ``name``, the whole reply
    stays plain content (like vLLM's hermes parser), so no text is ever lost. An unclosed last
    block (the model hit max_tokens or stopped early) is accepted when its JSON is complete.
    """
    if "<tool_call>" not in text:
        return ParsedReply(content=text)
    calls: list[dict[str, Any]] = []
    for match in TOOL_CALL_RE.finditer(text):
        try:
            obj = json.loads(match.group(1))
        except json.JSONDecodeError:
            return ParsedReply(content=text)
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return ParsedReply(content=text)
        args = obj.get("arguments", obj.get("parameters", {}))
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append({
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": obj["name"], "arguments": arguments},
        })
    content = TOOL_CALL_RE.sub("", text).strip()
    return ParsedReply(content=content or None, tool_calls=calls)
