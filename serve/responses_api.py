"""The OpenAI Responses API over ``spanrl serve``'s chat pipeline (``POST /v1/responses``).

A Responses request becomes a chat-completions request (``instructions`` the system message,
``input`` items the messages, flat function tools the chat tools, ``max_output_tokens`` the
``max_tokens``), runs through the same engine, template and tool parsing, and its completion is
written back as a Response (``output``: a ``message`` item, then one ``function_call`` item per
tool call). The span is the chat span, so the lake reads it like any other call.

Token ids as for chat completions: ``"enable_response_messages": true`` (vLLM's field) adds vLLM's
``input_messages`` / ``output_messages``, one ``raw_message_tokens`` each (the prompt's ids, the
sampled ids). ``previous_response_id`` is refused: the server keeps no responses; send the whole
conversation (the Agents SDK does by default).
"""

from __future__ import annotations

import time
from typing import Any

from spanrl.serve.api import ApiError

ROLES = {"system", "developer", "user", "assistant"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def _tool(tool: Any, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("name"), str):
        raise ApiError(f"tools[{i}]: spanrl serve runs function tools only ({{type: function, name, parameters}})",
                       param="tools")
    return {"type": "function", "function": {"name": tool["name"], "description": tool.get("description") or "",
                                             "parameters": tool.get("parameters") or {"type": "object"}}}


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise ApiError("input must be a string or a non-empty list of items", param="input")
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        out.append({"role": "system", "content": body["instructions"]})
    for i, item in enumerate(items):
        kind = item.get("type") or "message" if isinstance(item, dict) else None
        if kind == "message" and item.get("role") in ROLES:
            out.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind == "function_call" and isinstance(item.get("name"), str):
            call = {"id": item.get("call_id") or item.get("id"), "type": "function",
                    "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"}}
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool", "tool_call_id": item.get("call_id"),
                        "content": output if isinstance(output, str) else _text(output)})
        elif kind != "reasoning":  # reasoning items are the model's own notes: not part of the prompt here
            raise ApiError(f"input[{i}] is not an item spanrl serve reads (a message with role system, developer, "
                           "user or assistant; function_call; function_call_output)", param="input")
    return out


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request this Responses request is."""
    if body.get("previous_response_id"):
        raise ApiError("spanrl serve keeps no responses, so previous_response_id cannot be resolved: send the whole "
                       "conversation as input", param="previous_response_id")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body)}
    tools = [_tool(t, i) for i, t in enumerate(body.get("tools") or [])]
    if tools:
        chat["tools"] = tools
    if body.get("tool_choice") == "none":
        chat["tool_choice"] = "none"
    for key in ("temperature", "top_p", "seed"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("enable_response_messages"):
        chat["return_token_ids"] = True
    return chat


def from_chat(chat: dict[str, Any], body: dict[str, Any], decode: Any) -> dict[str, Any]:
    """The Response for a finished chat completion (its id is the completion's)."""
    choice = chat["choices"][0]
    message, rid = choice["message"], chat["id"]
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append({"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": message["content"], "annotations": []}]})
    for call in message.get("tool_calls") or []:
        output.append({"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"], "status": "completed",
                       "name": call["function"]["name"], "arguments": call["function"]["arguments"]})
    usage = chat["usage"]
    incomplete = choice["finish_reason"] == "length"
    resp: dict[str, Any] = {
        "id": rid, "object": "response", "created_at": int(time.time()), "model": chat["model"],
        "status": "incomplete" if incomplete else "completed", "output": output, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
        "parallel_tool_calls": True, "previous_response_id": None, "temperature": body.get("temperature"),
        "top_p": body.get("top_p"), "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                  "total_tokens": usage["total_tokens"], "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}}}
    if "prompt_token_ids" in chat:
        resp["input_messages"] = [{"type": "raw_message_tokens", "message": decode(chat["prompt_token_ids"]),
                                   "tokens": chat["prompt_token_ids"]}]
        resp["output_messages"] = [{"type": "raw_message_tokens", "message": decode(choice["token_ids"]),
                                    "tokens": choice["token_ids"]}]
    return resp


def events(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """The finished Response as the API's stream: created, in_progress, per output item its added,
    delta and done events, completed (the whole Response, vLLM's id fields on it only)."""
    start = {k: v for k, v in resp.items() if k not in ("input_messages", "output_messages")}
    start.update(status="in_progress", output=[], usage=None)
    out: list[dict[str, Any]] = [{"type": "response.created", "response": start},
                                 {"type": "response.in_progress", "response": start}]
    for i, item in enumerate(resp["output"]):
        at = {"item_id": item["id"], "output_index": i}
        if item["type"] == "message":
            part = item["content"][0]
            out += [{"type": "response.output_item.added", "output_index": i, "item": {**item, "content": []}},
                    {"type": "response.content_part.added", **at, "content_index": 0, "part": {**part, "text": ""}},
                    {"type": "response.output_text.delta", **at, "content_index": 0, "delta": part["text"], "logprobs": []},
                    {"type": "response.output_text.done", **at, "content_index": 0, "text": part["text"], "logprobs": []},
                    {"type": "response.content_part.done", **at, "content_index": 0, "part": part}]
        else:
            out += [{"type": "response.output_item.added", "output_index": i, "item": {**item, "arguments": ""}},
                    {"type": "response.function_call_arguments.delta", **at, "delta": item["arguments"]},
                    {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"],
                     "name": item["name"]}]
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    out.append({"type": "response.completed" if resp["status"] == "completed" else "response.incomplete",
                "response": resp})
    return [{**e, "sequence_number": n} for n, e in enumerate(out)]
