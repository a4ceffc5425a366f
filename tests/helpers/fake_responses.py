"""The OpenAI Responses API as a local fake speaks it (tests/helpers/fake_apis.py): deterministic
replies and their server-sent events, written from the API reference's object and event shapes.

Reply rules, over the whole conversation (the stored steps of ``previous_response_id`` first):
- a function tool offered and not called yet in the conversation -> a ``function_call`` to the first
  such tool: a handoff (``transfer_to_*``) with ``{}``, any other with ``{"query": <last user text>}``;
- else the conversation ends in a ``function_call_output`` -> ``"Tool said: <output>"``;
- else ``"Echo: <last user text>"``.
With ``"enable_response_messages": true`` (vLLM's field) the reply holds vLLM's ``input_messages`` /
``output_messages``: one ``raw_message_tokens`` each, the ids ``word_ids`` of the rendered text.
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.fake_vllm import word_ids


def as_items(value: Any, role: str = "user") -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "message", "role": role, "content": value}]
    return [dict(i, type=i.get("type") or "message") for i in value or [] if isinstance(i, dict)]


def item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if item["type"] == "function_call":
        return f"call {item.get('name')} {item.get('arguments')}"
    if item["type"] == "function_call_output":
        return f"result {item.get('output')}"
    return f"{item.get('role', '')} {content or ''}"


def reply(body: dict[str, Any], history: list[dict[str, Any]], n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The response to the n-th request and the conversation it ends (for the next step's
    ``previous_response_id``): ``history`` is the stored conversation before this request's input."""
    items = history + as_items(body.get("input"))
    last_user = next((item_text(i).removeprefix("user ") for i in reversed(items)
                      if i["type"] == "message" and i.get("role") == "user"), "")
    called = {i.get("name") for i in items if i["type"] == "function_call"}
    pending = next((t for t in body.get("tools") or [] if t.get("type") == "function" and t["name"] not in called), None)
    if pending is not None:
        args = "{}" if pending["name"].startswith("transfer_to_") else json.dumps({"query": last_user})
        output = [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": pending["name"],
                   "arguments": args, "status": "completed"}]
    else:
        last = items[-1] if items else {}
        text = f"Tool said: {last.get('output')}" if last.get("type") == "function_call_output" else f"Echo: {last_user}"
        output = [{"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    instructions = as_items(body.get("instructions"), "system") if body.get("instructions") else []
    prompt_ids = [t for i in instructions + items for t in word_ids(item_text(i))]
    out_ids = [t for i in output for t in word_ids(item_text(i))]
    resp = {"id": f"resp_{n}", "object": "response", "created_at": 1_700_000_000 + n, "status": "completed",
            "model": body.get("model", "fake-model"), "output": output, "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"), "temperature": body.get("temperature"),
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [], "top_p": None,
            "usage": {"input_tokens": len(prompt_ids), "output_tokens": len(out_ids),
                      "total_tokens": len(prompt_ids) + len(out_ids), "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}
    if body.get("enable_response_messages"):
        resp["input_messages"] = [{"type": "raw_message_tokens", "message": "prompt", "tokens": prompt_ids}]
        resp["output_messages"] = [{"type": "raw_message_tokens", "message": "answer", "tokens": out_ids}]
    return resp, items + output


def events(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of ``resp``: created, in_progress, each output item's added / delta / done
    events, then ``response.completed`` with the whole response (vLLM's id fields on it only)."""
    bare = {k: v for k, v in resp.items() if k not in ("input_messages", "output_messages")}
    out: list[dict[str, Any]] = [{"type": "response.created", "response": dict(bare, status="in_progress", output=[])},
                                 {"type": "response.in_progress", "response": dict(bare, status="in_progress", output=[])}]
    for i, item in enumerate(resp["output"]):
        where = {"item_id": item["id"], "output_index": i}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append({"type": "response.output_item.added", "output_index": i, "item": dict(item, content=[])})
            out.append({"type": "response.content_part.added", **where, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}})
            words = text.split(" ")
            for k, word in enumerate(words):
                out.append({"type": "response.output_text.delta", **where, "content_index": 0, "logprobs": [],
                            "delta": word if k == 0 else " " + word})
            out.append({"type": "response.output_text.done", **where, "content_index": 0, "text": text, "logprobs": []})
            out.append({"type": "response.content_part.done", **where, "content_index": 0, "part": item["content"][0]})
        else:
            out.append({"type": "response.output_item.added", "output_index": i, "item": dict(item, arguments="")})
            half = len(item["arguments"]) // 2
            for piece in (item["arguments"][:half], item["arguments"][half:]):
                out.append({"type": "response.function_call_arguments.delta", **where, "delta": piece})
            out.append({"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"],
                        "name": item["name"]})
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    out.append({"type": "response.completed", "response": resp})
    return [dict(e, sequence_number=k) for k, e in enumerate(out)]
