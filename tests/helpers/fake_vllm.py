"""A vLLM-style upstream for the gateway's tests, written from vLLM's documented response fields.

vLLM (>= 0.10.2) answers a chat completion whose body has the extra ``return_token_ids: true`` with
the top-level ``prompt_token_ids`` and ``choices[i].token_ids`` (the sampled ids); when streaming,
``prompt_token_ids`` rides on the first chunk and each chunk's ``choices[i].token_ids`` holds the ids
of that chunk's delta. The replies are FakeOpenAI's (tests/helpers/fake_openai.py); the ids are a
pure function of the text (one id per word, from its characters), so a test can recompute them.
``strict=True`` plays a hosted API instead: a request naming ``return_token_ids`` gets HTTP 400.
``exchanges`` holds (request, full response with the ids) in order; a streamed reply is its chunks.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from tests.helpers.fake_openai import FakeOpenAI, make_response


def word_ids(text: str) -> list[int]:
    """One token id per word: deterministic, in a 32k vocabulary."""
    return [1000 + sum(ord(ch) * (i + 1) for i, ch in enumerate(w)) % 31000 for w in text.split()]


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls = " ".join(c["function"]["name"] + " " + c["function"]["arguments"] for c in message.get("tool_calls") or [])
    return f"{message.get('role', '')} {content or ''} {calls}"


class FakeVLLM(FakeOpenAI):
    """FakeOpenAI plus vLLM's token-id fields (``url`` ends in /v1)."""

    def __init__(self, strict: bool = False, tail_after_done_s: float = 0.0) -> None:
        super().__init__()
        self.strict = strict
        self.tail_after_done_s = tail_after_done_s  # >0: an SSE comment line that long after [DONE]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.strict and "return_token_ids" in body:
            error = {"error": {"message": "Unrecognized request argument supplied: return_token_ids",
                               "type": "invalid_request_error", "param": None, "code": None}}
            with self._lock:
                self.exchanges.append((body, error))
            return web.json_response(error, status=400)
        with self._lock:
            resp = make_response(body, len(self.exchanges) + 1)
            prompt_ids = [i for m in body.get("messages", []) for i in word_ids(_message_text(m))]
            out_ids = word_ids(_message_text(resp["choices"][0]["message"]))
            if body.get("return_token_ids"):
                resp["prompt_token_ids"] = prompt_ids
                resp["choices"][0]["token_ids"] = out_ids
            self.exchanges.append((body, resp))
        if not body.get("stream"):
            return web.json_response(resp)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        for chunk in _chunks(resp, bool(body.get("return_token_ids")), out_ids):
            await stream.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await stream.write(b"data: [DONE]\n\n")
        if self.tail_after_done_s:
            await asyncio.sleep(self.tail_after_done_s)
            await stream.write(b": end of stream\n\n")
        return stream


def _chunks(resp: dict[str, Any], ids: bool, out_ids: list[int]) -> list[dict[str, Any]]:
    """Content word by word, each chunk with its words' ids (vLLM: per-delta ``token_ids``); tool
    calls in one chunk with the remaining ids; then finish_reason; then usage."""
    base = {k: resp[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message, finish = resp["choices"][0]["message"], resp["choices"][0]["finish_reason"]
    chunks = [base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    if ids:
        chunks[0]["prompt_token_ids"] = resp["prompt_token_ids"]
        chunks[0]["choices"][0]["token_ids"] = []
    words = (message.get("content") or "").split(" ") if message.get("content") else []
    used = 0
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        if ids:
            n = len(word.split()) + (1 if i == 0 else 0)  # the role word's id rides on the first piece
            choice["token_ids"] = out_ids[used:used + n]
            used += n
        chunks.append(base | {"choices": [choice]})
    if message.get("tool_calls"):
        delta = {"tool_calls": [dict(tc, index=i) for i, tc in enumerate(message["tool_calls"])]}
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        if ids:
            choice["token_ids"], used = out_ids[used:], len(out_ids)
        chunks.append(base | {"choices": [choice]})
    last: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": finish}
    if ids:
        last["token_ids"] = out_ids[used:]
    chunks.append(base | {"choices": [last]})
    chunks.append(base | {"choices": [], "usage": resp["usage"]})
    return chunks
