"""The OpenAI Responses API call (``/v1/responses``, what the OpenAI Agents SDK uses by default).

Request: ``instructions`` becomes the system message, ``input`` (a string or items: messages,
``function_call``, ``function_call_output``) the GenAI messages the chat span has; with
``previous_response_id`` the earlier steps come from the gateway's memory (gateway/conversations.py)
or, unknown, the prompt is not recorded and the span says why. Response: the ``output`` items become
one assistant message (text and tool calls, ``call_id`` as the id), ``usage.input_tokens`` /
``output_tokens`` the usage.

Engine token ids: vLLM answers a request with ``"enable_response_messages": true`` with
``input_messages`` / ``output_messages``, each ``[{"type": "raw_message_tokens", "message",
"tokens"}]`` (vllm/entrypoints/openai/protocol.py, ``ResponseRawMessageAndToken``): one of each is
the prompt's and the answer's ids. More than one (tool calls the server ran itself) is several
turns: recorded as text. A stream carries them on the final ``response.completed`` event's response.
"""

from __future__ import annotations

from typing import Any

from spanrl.gateway.calls import (
    Call,
    engine_ids,
    int_list,
    output_message,
    response_basics,
    text_part,
    tool_call_part,
    tool_response_part,
)
from spanrl.gateway.conversations import Conversations

ID_FIELD = "enable_response_messages"
EXTRAS = ("input_messages", "output_messages")
FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}


def content_text(content: Any) -> str:
    """A Responses content value's text: a string, or its text parts (input_text, output_text,
    refusal) joined; images and files are left out."""
    if isinstance(content, str):
        return content
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict):
            out.append(str(part.get("text") or part.get("refusal") or ""))
        elif isinstance(part, str):
            out.append(part)
    return "".join(out)


def items_messages(items: Any, default_role: str = "user") -> list[dict[str, Any]] | None:
    """Responses input items -> GenAI messages (tool calls join the assistant message before them);
    None when an item's content lives only on the server (``item_reference``)."""
    if isinstance(items, str):
        return [{"role": default_role, "parts": [text_part(items)]}]
    out: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "item_reference":
            return None
        if kind == "message":
            role = item.get("role") or default_role
            text = content_text(item.get("content"))
            out.append({"role": "system" if role == "developer" else role, "parts": [text_part(text)] if text else []})
        elif kind in ("function_call", "custom_tool_call"):
            part = tool_call_part(item.get("call_id") or item.get("id"), item.get("name"),
                                  item.get("arguments", item.get("input")))
            if out and out[-1]["role"] == "assistant":
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "assistant", "parts": [part]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out.append({"role": "tool", "parts": [tool_response_part(
                item.get("call_id"), output if isinstance(output, str) else content_text(output))]})
    return out


def output_parts(output: Any) -> list[dict[str, Any]]:
    """A response's ``output`` items -> the parts of one assistant message (reasoning left out)."""
    parts: list[dict[str, Any]] = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            text = content_text(item.get("content"))
            if text:
                parts.append(text_part(text))
        elif item.get("type") in ("function_call", "custom_tool_call"):
            parts.append(tool_call_part(item.get("call_id") or item.get("id"), item.get("name"),
                                        item.get("arguments", item.get("input"))))
    return parts


def finish_reason(response: dict[str, Any], parts: list[dict[str, Any]]) -> str:
    status = response.get("status")
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return FINISH.get(str(reason), str(reason or "incomplete"))
    if status == "failed":
        return "error"
    return "tool_calls" if any(p["type"] == "tool_call" for p in parts) else "stop"


def raw_tokens(messages: Any) -> list[int] | None:
    """The ids of vLLM's ``raw_message_tokens`` list when it holds exactly one message."""
    if isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict):
        return int_list(messages[0].get("tokens"))
    return None


class ResponsesCall(Call):
    route = "/responses"
    id_field = ID_FIELD

    def __init__(self, body: dict[str, Any], capture: bool, conversations: Conversations) -> None:
        super().__init__(body, capture)
        self.conversations = conversations
        self.previous = body.get("previous_response_id") if isinstance(body.get("previous_response_id"), str) else None
        self.new = items_messages(body.get("input"))
        if self.new is None:
            self.missing = "the input names an item_reference: its content is the upstream's, not in the request"

    def input_messages(self) -> list[dict[str, Any]] | None:
        if self.new is None:
            return None
        history: list[dict[str, Any]] | None = []
        if self.previous:
            history = self.conversations.recall(self.previous)
            if history is None:
                self.missing = (f"previous_response_id {self.previous!r} is not a response this gateway remembers "
                                "(served before a restart, by another gateway, or forgotten: memory is bounded); "
                                "the earlier steps of the prompt are unknown")
                return None
        system = items_messages(self.body.get("instructions"), "system") or []
        return system + history + self.new

    def response_attributes(self, data: dict[str, Any]) -> dict[str, Any]:
        parts = output_parts(data.get("output"))
        finish = finish_reason(data, parts)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        attrs = response_basics(data.get("id"), data.get("model"), [finish], usage.get("input_tokens"),
                                usage.get("output_tokens"))
        attrs.update(engine_ids(raw_tokens(data.get("input_messages")), raw_tokens(data.get("output_messages"))))
        if self.capture:
            attrs["gen_ai.output.messages"] = output_message(parts, finish)
        if isinstance(data.get("id"), str) and self.new is not None and not self.missing:
            self.conversations.remember(data["id"], self.previous, [*self.new, {"role": "assistant", "parts": parts}])
        return attrs

    def accumulator(self) -> ResponsesStream:
        return ResponsesStream()

    def strip(self, payload: dict[str, Any]) -> dict[str, Any]:
        for target in (payload, payload.get("response")):
            if isinstance(target, dict):
                for key in EXTRAS:
                    target.pop(key, None)
        return payload


class ResponsesStream:
    """A Responses stream's answer: the response of its last ``response.*`` lifecycle event
    (``response.completed`` holds the whole answer), its output filled from the
    ``response.output_item.done`` events when that response lists none."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}
        self.items: dict[int, dict[str, Any]] = {}

    def add(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("response"), dict):
            self.last = dict(event["response"])  # a copy: the event is stripped for the agent next
        elif event.get("type") == "response.output_item.done" and isinstance(event.get("item"), dict):
            self.items[int(event.get("output_index") or 0)] = event["item"]

    def response(self) -> dict[str, Any]:
        out = dict(self.last)
        if not out.get("output") and self.items:
            out["output"] = [self.items[i] for i in sorted(self.items)]
        return out
