"""The OpenAI wire format for ``spanrl serve``: request validation, errors, logprobs, streaming.

Kept apart from the server so the rules a client sees (which fields, which ranges, which error
shapes) read in one place. Errors follow OpenAI's body: ``{"error": {"message", "type", "param",
"code"}}``; validation messages name the field and the allowed range.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from spanrl.serve.engine import SamplingParams, Sequence


class ApiError(Exception):
    """A request the client must fix: becomes an OpenAI-style error body."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


def error_response(exc: ApiError) -> web.Response:
    kind = "invalid_request_error" if exc.status < 500 else "server_error"
    body = {"error": {"message": str(exc), "type": kind, "param": exc.param, "code": exc.status}}
    return web.json_response(body, status=exc.status)


# --------------------------------------------------------------------------- request parsing
def _number(body: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ApiError(f"{key} must be a number in [{lo}, {hi}], got {value!r}", param=key)
    return float(value)


def _integer(body: dict[str, Any], key: str, default: int | None, lo: int, hi: int) -> int | None:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ApiError(f"{key} must be an integer in [{lo}, {hi}], got {value!r}", param=key)
    return value


def parse_sampling(body: dict[str, Any], default_max_tokens: int) -> tuple[SamplingParams, int]:
    """Validate the OpenAI sampling fields -> (params for one choice, n)."""
    max_tokens = _integer(body, "max_completion_tokens", None, 1, 1 << 20)
    max_tokens = _integer(body, "max_tokens", max_tokens or default_max_tokens, 1, 1 << 20)
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop or []
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops) or len(stops) > 4:
        raise ApiError("stop must be a string or a list of up to 4 non-empty strings", param="stop")
    top_logprobs = _integer(body, "top_logprobs", 0, 0, 20) or 0
    if top_logprobs and not body.get("logprobs"):
        raise ApiError("top_logprobs requires logprobs: true", param="top_logprobs")
    params = SamplingParams(
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 1e-6, 1.0),
        max_tokens=max_tokens or default_max_tokens,
        seed=_integer(body, "seed", None, -(1 << 63), (1 << 64) - 1),
        stop=stops,
        top_logprobs=top_logprobs,
    )
    return params, _integer(body, "n", 1, 1, 64) or 1


def messages_and_tools(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("messages must be a non-empty list of chat messages", param="messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in {"system", "developer", "user", "assistant", "tool"}:
            raise ApiError(f"messages[{i}] needs a role of system, developer, user, assistant or tool", param="messages")
    tools = body.get("tools") or None
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise ApiError("tools must be a list of tool objects", param="tools")
    if body.get("tool_choice") == "none":
        tools = None
    return messages, tools


def choice_params(params: SamplingParams, index: int) -> SamplingParams:
    """Choice i of a seeded request samples with seed + i (distinct choices, still reproducible)."""
    seed = None if params.seed is None else params.seed + index
    return SamplingParams(params.temperature, params.top_p, params.max_tokens, seed, list(params.stop), params.top_logprobs)


def logprobs_content(tok: Any, seq: Sequence) -> dict[str, Any]:
    def entry(token_id: int, logprob: float) -> dict[str, Any]:
        piece = tok.decode([token_id])
        return {"token": piece, "logprob": logprob, "bytes": list(piece.encode("utf-8"))}

    content = []
    for i, (token_id, lp) in enumerate(zip(seq.output_ids, seq.logprobs, strict=True)):
        item = entry(token_id, lp)
        item["top_logprobs"] = [entry(j, v) for j, v in seq.top[i]] if seq.top else []
        content.append(item)
    return {"content": content, "refusal": None}


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    return body


async def stream_response(request: web.Request, response: dict[str, Any], headers: dict[str, str],
                  include_usage: bool) -> web.StreamResponse:
    """Server-sent events for ``stream: true``: the finished completion, sent as chunks."""
    out = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await out.prepare(request)
    base = {k: response[k] for k in ("id", "created", "model", "system_fingerprint")} | {"object": "chat.completion.chunk"}

    async def send(payload: dict[str, Any]) -> None:
        await out.write(f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode())

    for choice in response["choices"]:
        message, i = choice["message"], choice["index"]
        await send(base | {"choices": [{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
        if message.get("content"):
            await send(base | {"choices": [{"index": i, "delta": {"content": message["content"]},
                                            "logprobs": choice["logprobs"], "finish_reason": None}]})
        for k, call in enumerate(message.get("tool_calls") or []):
            await send(base | {"choices": [{"index": i, "delta": {"tool_calls": [{"index": k, **call}]}, "finish_reason": None}]})
        await send(base | {"choices": [{"index": i, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if include_usage:
        await send(base | {"choices": [], "usage": response["usage"]})
    await out.write(b"data: [DONE]\n\n")
    await out.write_eof()
    return out
