"""The OpenAI wire format for ``spanrl serve``: request validation, errors, logprobs, streaming.

Kept apart from the server so the rules a client sees (which fields, which ranges, which error
shapes) read in one place. Errors follow OpenAI's body: ``{"error": {"message", "type", "param",
"code"}}``; validation messages name the field and the allowed range.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Any

from aiohttp import web

from spanrl.serve.engine import SamplingParams, Sequence
from spanrl.trainer.adapter import ADAPTER_CONFIG, is_peft_folder


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
    """The request's messages and tools, every field the server reads checked for its shape first,
    so a malformed message is a 400 naming it, never an exception deeper down (a 500)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("messages must be a non-empty list of chat messages", param="messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in {"system", "developer", "user", "assistant", "tool"}:
            raise ApiError(f"messages[{i}] needs a role of system, developer, user, assistant or tool", param="messages")
        _check_message(i, msg)
    tools = body.get("tools") or None
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise ApiError("tools must be a list of tool objects", param="tools")
    if body.get("tool_choice") == "none":
        tools = None
    return messages, tools


def _check_message(i: int, msg: dict[str, Any]) -> None:
    content = msg.get("content")
    if content is not None and not isinstance(content, str | list):
        raise ApiError(f"messages[{i}].content must be a string, a list of parts or null", param="messages")
    if isinstance(content, list) and not all(isinstance(part, dict | str) for part in content):
        raise ApiError(f"messages[{i}].content parts must be objects (or strings)", param="messages")
    calls = msg.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise ApiError(f"messages[{i}].tool_calls must be a list of tool call objects", param="messages")
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) \
                or not isinstance(fn.get("arguments", "{}"), str | dict):
            raise ApiError(f"messages[{i}].tool_calls[{k}] must be an object with function: {{name: string, "
                           "arguments: JSON string}}", param="messages")


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


MAX_JSON_DEPTH = 64  # no chat request nests deeper; deeper bodies would recurse through the server


async def json_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object, at most ``MAX_JSON_DEPTH`` levels deep (else a 400, not a
    RecursionError somewhere in parsing, tracing or the chat template)."""
    try:
        body = await request.json()
    except RecursionError:
        raise ApiError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    if _depth(body) > MAX_JSON_DEPTH:
        raise ApiError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return body


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            break
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def authorized(header: str | None, token: str | None) -> bool:
    """``Authorization: Bearer TOKEN`` in constant time (the collector's rule); no token: open. Any
    header text is answered, never raised on: non-ASCII is simply not the token."""
    if token is None:
        return True
    scheme, _, value = (header or "").strip().partition(" ")
    given = value.strip().encode("utf-8", "surrogatepass")
    return scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode("utf-8"))


def auth_middleware(token: str | None, open_paths: frozenset[str] = frozenset({"/health"})) -> Any:
    """Every route but ``open_paths`` (liveness probes) needs the token: ``Authorization: Bearer
    TOKEN`` (the OpenAI SDKs) or ``x-api-key: TOKEN`` (the Anthropic SDK's header for its
    ANTHROPIC_API_KEY); 401 otherwise."""

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        if token is not None and request.path not in open_paths \
                and not authorized(request.headers.get("Authorization"), token) \
                and not authorized("Bearer " + request.headers.get("x-api-key", ""), token):
            return error_response(ApiError("missing or wrong 'Authorization: Bearer <token>' (or 'x-api-key: <token>') "
                                           "header: send the server's --token", 401))
        return await handler(request)

    return check


def check_adapter_path(path: str, adapters_root: Path, allow_any: bool) -> Path:
    """A ``load_lora_adapter`` path: a PEFT folder, and (unless ``allow_any``) inside the data root's
    adapters folder once symlinks are resolved, so a client cannot make the server read any path."""
    folder = Path(path).expanduser().resolve()
    root = adapters_root.resolve()
    if not allow_any and root not in folder.parents:
        raise ApiError(f"{path} is outside {root}; this server loads adapters from there only "
                       "(start it with --allow-any-adapter-path to load others)", 403, "lora_path")
    if not is_peft_folder(folder):
        raise ApiError(f"{path} holds no {ADAPTER_CONFIG}; pass a PEFT adapter folder", param="lora_path")
    return folder


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
        first: dict[str, Any] = {"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        head = base | {"choices": [first]}
        if "token_ids" in choice:  # return_token_ids, as vLLM streams it: the ids of the chunk's delta
            first["token_ids"] = choice["token_ids"]  # (here all of them: the completion is finished)
        if i == 0 and "prompt_token_ids" in response:
            head["prompt_token_ids"] = response["prompt_token_ids"]
        await send(head)
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
