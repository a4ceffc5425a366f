"""A vLLM-style upstream that also answers ``logprobs: true`` (chat completions), for the gateway's
behaviour-policy tests: FakeVLLM's replies and token ids (tests/helpers/fake_vllm.py), plus
``choices[0].logprobs.content`` with one entry per output id, ``-(i + 1) / 10`` for the i-th, streamed
with the ids they belong to. ``refuse``: a request with ``logprobs`` gets HTTP 400 with that message
(a model that does not return log-probs), whatever else it asks.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.helpers.fake_openai import make_response
from tests.helpers.fake_vllm import FakeVLLM, _chunks, _message_text, word_ids


def logprob_values(n: int) -> list[float]:
    return [-(i + 1) / 10 for i in range(n)]


def _content(values: list[float]) -> dict[str, Any]:
    return {"content": [{"token": f"t{i}", "logprob": v, "bytes": [116], "top_logprobs": []}
                        for i, v in enumerate(values)]}


class LogprobUpstream(FakeVLLM):
    def __init__(self, refuse: str | None = None) -> None:
        super().__init__()
        self.refuse = refuse

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.refuse and "logprobs" in body:
            error = {"error": {"message": self.refuse, "type": "invalid_request_error", "param": None, "code": None}}
            with self._lock:
                self.exchanges.append((body, error))
            return web.json_response(error, status=400)
        ids, logprobs = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        with self._lock:
            resp = make_response(body, len(self.exchanges) + 1)
            out_ids = word_ids(_message_text(resp["choices"][0]["message"]))
            resp["prompt_token_ids"] = [i for m in body.get("messages", []) for i in word_ids(_message_text(m))]
            resp["choices"][0]["token_ids"] = out_ids
            if logprobs:
                resp["choices"][0]["logprobs"] = _content(logprob_values(len(out_ids)))
            chunks = _chunks(resp, True, out_ids)
            if not ids:
                resp.pop("prompt_token_ids")
                resp["choices"][0].pop("token_ids")
            self.exchanges.append((body, resp))
        if not body.get("stream"):
            return web.json_response(resp)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        used = 0
        for chunk in chunks:
            for choice in chunk["choices"]:
                n = len(choice.get("token_ids") or [])
                choice["logprobs"] = _content(logprob_values(len(out_ids))[used:used + n]) if logprobs and n else None
                used += n
                if not ids:
                    choice.pop("token_ids", None)
            if not ids:
                chunk.pop("prompt_token_ids", None)
            await stream.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await stream.write(b"data: [DONE]\n\n")
        return stream
