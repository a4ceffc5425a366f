"""The gateway's span attributes from an upstream response (vLLM's ``return_token_ids`` fields).

serve/tracing.py builds its attributes from its own engine's sequences; the gateway only has the
upstream's JSON, so this reads the documented vLLM fields instead: top-level ``prompt_token_ids``
and ``choices[i].token_ids`` (non-streaming), or the same fields spread over the chunks of a stream
(``Accumulator``: ``prompt_token_ids`` on a chunk, each chunk's ``choices[i].token_ids`` the ids of
its delta). The ids go into the ``spanrl.*`` attributes the ingest reads for ``token_source = engine``.
"""

from __future__ import annotations

import json
from typing import Any

from spanrl.serve.tracing import semconv_output

ENGINE_EXTRAS = ("prompt_token_ids",)  # top-level fields the agent gets only when it asked for ids
CHOICE_EXTRAS = ("token_ids",)


def strip_extras(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` without the token-id fields the gateway asked for on the agent's behalf."""
    for key in ENGINE_EXTRAS:
        payload.pop(key, None)
    for choice in payload.get("choices") or []:
        if isinstance(choice, dict):
            for key in CHOICE_EXTRAS:
                choice.pop(key, None)
    return payload


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


def _logprobs(choice: dict[str, Any]) -> list[float] | None:
    """The sampled tokens' log-probs of a choice: the chat shape (``logprobs.content[i].logprob``) or
    the text-completions one (``logprobs.token_logprobs``)."""
    logprobs = choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else {}
    content = logprobs.get("content")
    if isinstance(content, list) and content:
        values = [c.get("logprob") for c in content if isinstance(c, dict)]
    elif isinstance(logprobs.get("token_logprobs"), list) and logprobs["token_logprobs"]:
        values = list(logprobs["token_logprobs"])
    else:
        return None
    return values if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) else None


def response_attributes(response: dict[str, Any], capture: bool) -> dict[str, Any]:
    """gen_ai.response.*, usage, and the spanrl token-id convention (choice 0; others indexed) from
    an upstream chat completion (assembled from chunks when streamed). Ids absent: none recorded."""
    choices = [c for c in response.get("choices") or [] if isinstance(c, dict)]
    attrs: dict[str, Any] = {}
    if response.get("id"):
        attrs["gen_ai.response.id"] = str(response["id"])
    if response.get("model"):
        attrs["gen_ai.response.model"] = str(response["model"])
        attrs["spanrl.tokenizer"] = str(response["model"])  # the upstream's model names its tokenizer
    attrs["gen_ai.response.finish_reasons"] = [str(c.get("finish_reason")) for c in choices]
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    for key, attr in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        if isinstance(usage.get(key), int):
            attrs[f"gen_ai.usage.{attr}"] = usage[key]
    prompt = _int_list(response.get("prompt_token_ids"))
    if prompt is not None:
        attrs["spanrl.prompt_token_ids"] = prompt
    for i, choice in enumerate(choices):
        ids = _int_list(choice.get("token_ids"))
        logprobs = _logprobs(choice)
        prefix = "spanrl." if i == 0 else f"spanrl.choices.{i}."
        if ids is not None:
            attrs[prefix + "response_token_ids"] = ids
            if logprobs is not None and len(logprobs) == len(ids):
                attrs[prefix + "response_logprobs"] = logprobs
    if "spanrl.response_token_ids" in attrs:
        attrs["spanrl.token_source"] = "engine"
    if capture and choices and all(isinstance(c.get("message"), dict) for c in choices):
        attrs["gen_ai.output.messages"] = json.dumps(semconv_output(
            [{"message": c["message"], "finish_reason": c.get("finish_reason")} for c in choices]), ensure_ascii=False)
    return attrs


class Accumulator:
    """Rebuilds a chat completion from its stream chunks (content, tool calls, token ids, logprobs,
    usage), so a streamed call gets the same span as a non-streamed one. ``text_field="text"``
    reads a text completion's chunks (``choices[i].text``, vLLM's per-choice ``prompt_token_ids``)."""

    def __init__(self, text_field: str | None = None) -> None:
        self.top: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.text_field = text_field

    def add(self, chunk: dict[str, Any]) -> None:
        for key in ("id", "model", "usage", "prompt_token_ids"):
            if chunk.get(key) is not None:
                self.top[key] = chunk[key]
        for c in chunk.get("choices") or []:
            if not isinstance(c, dict):
                continue
            acc = self.choices.setdefault(int(c.get("index", 0)), {"content": [], "tools": {}, "ids": [],
                                                                   "logprobs": [], "finish": None, "has_ids": False})
            delta = c.get("delta") if isinstance(c.get("delta"), dict) else {}
            if self.text_field is not None:
                delta = {"content": c.get(self.text_field)}
                if self.top.get("prompt_token_ids") is None and _int_list(c.get("prompt_token_ids")) is not None:
                    self.top["prompt_token_ids"] = c["prompt_token_ids"]
            if isinstance(delta.get("content"), str):
                acc["content"].append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = acc["tools"].setdefault(int(call.get("index", 0)), {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                fn = call.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            ids = _int_list(c.get("token_ids"))
            if ids is not None:
                acc["ids"].extend(ids)
                acc["has_ids"] = True
            logprobs = _logprobs(c)
            if logprobs:
                acc["logprobs"].extend(logprobs)
            if c.get("finish_reason"):
                acc["finish"] = c["finish_reason"]

    def response(self) -> dict[str, Any]:
        """The assembled completion, in the non-streaming shape."""
        choices = []
        for index in sorted(self.choices):
            acc = self.choices[index]
            message: dict[str, Any] = {"role": "assistant", "content": "".join(acc["content"]) or None}
            if acc["tools"]:
                message["tool_calls"] = [{"id": t["id"], "type": "function",
                                          "function": {"name": t["name"], "arguments": t["arguments"]}}
                                         for _, t in sorted(acc["tools"].items())]
            choice: dict[str, Any] = {"index": index, "message": message, "finish_reason": acc["finish"]}
            if self.text_field is not None:
                choice[self.text_field] = message["content"] or ""
            if acc["has_ids"]:
                choice["token_ids"] = acc["ids"]
            if acc["logprobs"]:
                choice["logprobs"] = {"content": [{"logprob": v} for v in acc["logprobs"]]}
            choices.append(choice)
        return {**self.top, "choices": choices}
