"""The Anthropic Messages call (``/v1/messages``, what ``anthropic.Anthropic().messages.create`` posts).

Request: ``system`` (a string or text blocks) becomes the system message; each message's content
blocks become GenAI parts: ``text``, ``tool_use`` (a tool call, ``input`` its arguments) and
``tool_result`` (a tool message per result, ``tool_use_id`` its id); images and thinking are left
out. Tools (``name``, ``description``, ``input_schema``) are recorded in the chat shape. Response:
the content blocks become one assistant message, ``stop_reason`` the finish reason in OpenAI's words
(``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``), ``usage`` the token counts. A stream
(``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``,
``message_stop``) is assembled into the same message.

The Messages API has no field that returns the engine's token ids: these calls are text
(``spanrl.token_source = text``, re-tokenised at training).
"""

from __future__ import annotations

import json
from typing import Any

from spanrl.gateway.calls import (
    Call,
    output_message,
    response_basics,
    text_part,
    tool_call_part,
    tool_response_part,
)

FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
          "pause_turn": "pause", "refusal": "content_filter"}


def blocks_text(content: Any) -> str:
    """A content value's text: a string, or its ``text`` blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text") \
        if isinstance(content, list) else ""


def message_parts(role: str, content: Any) -> list[dict[str, Any]]:
    """One Anthropic message -> GenAI messages: its tool results (one tool message each) first, in
    order, then its text and tool calls as one message of ``role``."""
    if isinstance(content, str):
        return [{"role": role, "parts": [text_part(content)]}]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(text_part(str(block["text"])))
        elif kind in ("tool_use", "server_tool_use"):
            parts.append(tool_call_part(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            out.append({"role": "tool", "parts": [tool_response_part(block.get("tool_use_id"),
                                                                     blocks_text(block.get("content")))]})
    if parts or not out:
        out.append({"role": role, "parts": parts})
    return out


class MessagesCall(Call):
    route = "/messages"

    def input_messages(self) -> list[dict[str, Any]] | None:
        system = blocks_text(self.body.get("system"))
        out = [{"role": "system", "parts": [text_part(system)]}] if system else []
        for msg in self.body.get("messages") or []:
            if isinstance(msg, dict):
                out.extend(message_parts(str(msg.get("role") or "user"), msg.get("content")))
        return out

    def response_attributes(self, data: dict[str, Any]) -> dict[str, Any]:
        finish = FINISH.get(str(data.get("stop_reason")), str(data.get("stop_reason")))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        attrs = response_basics(data.get("id"), data.get("model"), [finish], usage.get("input_tokens"),
                                usage.get("output_tokens"))
        if self.capture:
            parts = message_parts("assistant", data.get("content"))[-1]["parts"]
            attrs["gen_ai.output.messages"] = output_message(parts, finish)
        return attrs

    def accumulator(self) -> MessagesStream:
        return MessagesStream()


class MessagesStream:
    """A Messages stream's answer: the message of ``message_start``, its content blocks built from
    the block events (text deltas joined, a tool call's ``input_json_delta`` pieces parsed once
    whole), stop reason and usage from ``message_delta``."""

    def __init__(self) -> None:
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, list[str]] = {}

    def add(self, event: dict[str, Any]) -> None:
        kind, index = event.get("type"), int(event.get("index") or 0)
        if kind == "message_start" and isinstance(event.get("message"), dict):
            self.message = dict(event["message"])
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            self.blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            delta, block = event["delta"], self.blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                self.json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "message_delta":
            delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
            self.message.update({k: v for k, v in delta.items() if v is not None})
            if isinstance(event.get("usage"), dict):
                self.message["usage"] = {**(self.message.get("usage") or {}),
                                         **{k: v for k, v in event["usage"].items() if v is not None}}

    def response(self) -> dict[str, Any]:
        blocks = []
        for index in sorted(self.blocks):
            block = dict(self.blocks[index])
            if index in self.json:
                text = "".join(self.json[index])
                try:
                    block["input"] = json.loads(text) if text else {}
                except json.JSONDecodeError:
                    block["input"] = text
            blocks.append(block)
        return {**self.message, "content": blocks}
