"""Chat messages in, tool calls out: the text side of ``spanrl serve``.

OpenAI clients send tool calls with JSON-*string* arguments and ``content: None``; chat templates
expect plain strings and (Qwen/Hermes style) argument objects. ``render_prompt`` bridges the two and
returns the exact prompt token ids the model sees (the ids the server's span reports).

Tool format: templates that define ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``
(Qwen2.5, Hermes, our tiny test model) are used as they are. A template that ignores ``tools``
(SmolLM2-135M-Instruct's plain ChatML) gets the same Hermes-style tool block appended to its system
message, so the demo model still sees the tool signatures; replies are parsed the same way.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)

_FALLBACK_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_FALLBACK_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)
_DEFAULT_SYSTEM = "You are a helpful assistant."


@dataclass
class ParsedReply:
    """The assistant message the API returns: text outside tool-call blocks, plus the calls."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def template_handles_tools(template: str | None) -> bool:
    """True when the chat template renders ``tools`` itself (so we must not add our block)."""
    return bool(template) and "tools" in template


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


def _text_of(content: Any) -> str:
    """OpenAI content may be None, a string, or a list of parts; templates want a string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _arguments_object(arguments: Any) -> Any:
    """JSON-string arguments -> object (Qwen-style templates ``tojson`` them); bad JSON stays a string."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _tool_call_text(call: dict[str, Any]) -> str:
    fn = call.get("function", call)
    args = _arguments_object(fn.get("arguments", {}))
    return "<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def normalise_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                       template_tools: bool) -> list[dict[str, Any]]:
    """OpenAI chat messages -> what the chat template can render.

    With ``template_tools`` the tool calls stay structured (arguments as objects). Without it and
    with tools in the request, calls and tool results are written as Hermes text and the tool
    block goes into the system message.
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        item: dict[str, Any] = {"role": role, "content": _text_of(msg.get("content"))}
        calls = msg.get("tool_calls") or []
        if role == "assistant" and calls:
            if template_tools:
                item["tool_calls"] = [{"type": "function", "function": {
                    "name": c.get("function", {}).get("name"),
                    "arguments": _arguments_object(c.get("function", {}).get("arguments", {}))}} for c in calls]
            else:
                parts = [item["content"]] if item["content"] else []
                item["content"] = "\n".join(parts + [_tool_call_text(c) for c in calls])
        if role == "tool":
            if msg.get("tool_call_id"):
                item["tool_call_id"] = msg["tool_call_id"]
            if not template_tools and tools:
                item["content"] = f"<tool_response>\n{item['content']}\n</tool_response>"
        if role == "developer":
            item["role"] = "system"
        out.append(item)
    if tools and not template_tools:
        block = _FALLBACK_TOOLS_HEADER + "".join(
            "\n" + json.dumps(t, ensure_ascii=False) for t in tools) + _FALLBACK_TOOLS_FOOTER
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": out[0]["content"] + block}
        else:
            out.insert(0, {"role": "system", "content": _DEFAULT_SYSTEM + block})
    return out


def render_prompt(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    """Prompt token ids for a chat request: chat template with the generation prompt appended."""
    template_tools = template_handles_tools(getattr(tokenizer, "chat_template", None))
    normalised = normalise_messages(messages, tools, template_tools)
    kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
    if tools and template_tools:
        kwargs["tools"] = tools
    text = tokenizer.apply_chat_template(normalised, **kwargs)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
