"""What the gateway records of one call, per API: the recorded routes and, for each, how a request
and its response become the GenAI span attributes the chat-completions span has (so the lake's
``llm_calls`` reads every API the same way, docs/lake.md).

Each API is a ``Call`` subclass (gateway/chat.py, gateway/responses.py, gateway/messages.py): the
gateway's HTTP side (gateway/server.py) forwards, streams and ends the span the same way for all of
them and asks the call only what differs: the upstream path, the field that asks for engine token
ids, the request's and the response's attributes, a stream's assembly, and what to strip from the
answer the agent gets.
"""

from __future__ import annotations

import json
from typing import Any

PROMPT_UNKNOWN = "spanrl.gateway.prompt_unknown"  # why the span has no input messages (the prompt was not knowable)
SAMPLING = (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"), ("seed", "seed"),
            ("max_tokens", "max_tokens"), ("max_completion_tokens", "max_tokens"),
            ("max_output_tokens", "max_tokens"), ("n", "choice.count"))


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def tool_call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A GenAI ``tool_call`` part; ``arguments`` parsed when it is JSON text (as the chat span does)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_response_part(call_id: Any, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def chat_tools(tools: Any) -> list[Any]:
    """Tool definitions in the chat shape ``{"type": "function", "function": {...}}`` (what the chat
    span records): flat Responses-API function tools and Anthropic tools (``input_schema``) are
    rewritten; anything else (a hosted tool such as web_search) is kept as it came."""
    out: list[Any] = []
    for tool in tools if isinstance(tools, list) else []:
        flat = isinstance(tool, dict) and "function" not in tool and isinstance(tool.get("name"), str) and (
            "input_schema" in tool or tool.get("type", "function") == "function")
        out.append({"type": "function", "function": {
            "name": tool["name"], "description": tool.get("description"),
            "parameters": tool.get("parameters", tool.get("input_schema"))}} if flat else tool)
    return out


def int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


class Call:
    """One recorded call of one API. Subclasses set the class attributes and override the methods
    whose default (no engine ids, no streaming fields to strip) does not fit."""

    route = ""  # the agent's path under /v1 (and the upstream's under its base URL)
    operation = "chat"  # gen_ai.operation.name
    id_field: str | None = None  # the request field that asks the upstream for engine token ids
    logprob_field: dict[str, Any] | None = None  # the request fields that ask for the sampled tokens' log-probs

    def __init__(self, body: dict[str, Any], capture: bool) -> None:
        self.body, self.capture = body, capture
        self.added: set[str] = set()  # the fields the gateway added to the agent's request (gateway/asking.py)
        self.missing: str | None = None  # why the prompt cannot be recorded whole (then it is not recorded)

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "unknown")

    def request_attributes(self) -> dict[str, Any]:
        """gen_ai.request.* and, when capturing, the input messages and the tool definitions."""
        attrs: dict[str, Any] = {"gen_ai.operation.name": self.operation, "gen_ai.request.model": self.model}
        for key, attr in SAMPLING:
            value = self.body.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attrs[f"gen_ai.request.{attr}"] = value
        if self.capture:
            messages = self.input_messages()
            if messages is not None:
                attrs["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
            tools = chat_tools(self.body.get("tools"))
            if tools:
                attrs["gen_ai.tool.definitions"] = json.dumps(tools, ensure_ascii=False)
        if self.missing:
            attrs[PROMPT_UNKNOWN] = self.missing
        return attrs

    def input_messages(self) -> list[dict[str, Any]] | None:
        """The prompt as GenAI messages; None when it cannot be known (the span then says why)."""
        raise NotImplementedError

    def response_attributes(self, data: dict[str, Any]) -> dict[str, Any]:
        """gen_ai.response.*, usage, the output message, and engine token ids when the upstream sent them."""
        raise NotImplementedError

    def accumulator(self) -> Any:
        """An object whose ``add(event)`` takes each JSON event of a stream and whose ``response()``
        is then the non-streamed answer."""
        raise NotImplementedError

    def asked(self) -> bool:
        """Whether the agent itself asked for the engine's ids (it then gets them)."""
        return bool(self.id_field and self.body.get(self.id_field))

    def asked_logprobs(self) -> bool:
        """Whether the agent itself asked for log-probs (it then gets them)."""
        return bool(self.body.get("logprobs"))

    def strip(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` (an answer or a stream event) without the engine ids asked for on the agent's behalf."""
        return payload

    def rewrites(self) -> bool:
        """Whether answers need ``for_agent`` (something may have been asked on the agent's behalf)."""
        return (bool(self.id_field) and not self.asked()) or bool(self.added & set(self.logprob_field or ()))

    def for_agent(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The answer (or stream event) as the agent would have got it without the gateway: no engine
        ids it did not ask for, and ``choices[i].logprobs`` null when the gateway asked for them."""
        if not self.asked():
            payload = self.strip(payload)
        if self.added & set(self.logprob_field or ()):
            for choice in payload.get("choices") or []:
                if isinstance(choice, dict) and "logprobs" in choice:
                    choice["logprobs"] = None
        return payload


def response_basics(response_id: Any, model: Any, finish: list[str], input_tokens: Any,
                    output_tokens: Any) -> dict[str, Any]:
    """The gen_ai.response.* and usage attributes every API's span has."""
    attrs: dict[str, Any] = {"gen_ai.response.finish_reasons": finish}
    if response_id:
        attrs["gen_ai.response.id"] = str(response_id)
    if model:
        attrs["gen_ai.response.model"] = str(model)
        attrs["spanrl.tokenizer"] = str(model)  # the upstream's model names its tokenizer
    for value, attr in ((input_tokens, "input_tokens"), (output_tokens, "output_tokens")):
        if isinstance(value, int) and not isinstance(value, bool):
            attrs[f"gen_ai.usage.{attr}"] = value
    return attrs


def engine_ids(prompt: list[int] | None, response: list[int] | None) -> dict[str, Any]:
    """The spanrl token-id attributes (docs/lake.md) when the upstream gave both lists."""
    if prompt is None or response is None:
        return {}
    return {"spanrl.prompt_token_ids": prompt, "spanrl.response_token_ids": response, "spanrl.token_source": "engine"}


def output_message(parts: list[dict[str, Any]], finish: str | None) -> str:
    """``gen_ai.output.messages``: one assistant message."""
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish}], ensure_ascii=False)
