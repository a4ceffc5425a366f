"""An upstream for the gateway's size and error tests: any body size, and answers chosen by ``model``.

FakeVLLM (tests/helpers/fake_vllm.py) reads its requests with aiohttp's 1 MiB limit and tokenises
them word by word in Python, too slow for a 50 MB prompt. This one reads any size and answers with
``prompt_token_ids`` one per 4 request bytes (a tokenizer's rate, at most ``MAX_IDS`` to keep the
test quick), a reply echoing the first 40 characters of the last message, and ``token_ids``.
A ``model`` named in ``CANNED`` gets that HTTP 200 body instead (HTML, a JSON list, broken JSON).
"""

from __future__ import annotations

import json

from aiohttp import web

from tests.helpers.fake_openai import FakeOpenAI

MAX_IDS = 100_000
CANNED = {
    "html": ("text/html", b"<html><body><h1>Welcome to nginx!</h1></body></html>"),
    "list": ("application/json", b'[{"id": "chatcmpl-1"}]'),
    "badjson": ("application/json", b'{"id": "chatcmpl-1", "choices": ['),
}


class CannedUpstream(FakeOpenAI):
    """``exchanges``: (request, response) in order, as FakeOpenAI's (the response None when canned)."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.content.read()  # the whole body, whatever its size (request.json() stops at 1 MiB)
        body = json.loads(raw)
        if body.get("model") in CANNED:
            with self._lock:
                self.exchanges.append((body, None))  # type: ignore[arg-type]
            content_type, answer = CANNED[body["model"]]
            return web.Response(body=answer, content_type=content_type)
        text = str(body["messages"][-1]["content"])
        with self._lock:
            n = len(self.exchanges) + 1
            prompt_ids = list(range(1000, 1000 + min(len(raw) // 4, MAX_IDS)))
            resp = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
                    "model": body.get("model", "policy"),
                    "choices": [{"index": 0, "finish_reason": "stop", "token_ids": [7, 8, 9],
                                 "message": {"role": "assistant", "content": f"Echo: {text[:40]}"}}],
                    "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": 3,
                              "total_tokens": len(prompt_ids) + 3}}
            if body.get("return_token_ids"):
                resp["prompt_token_ids"] = prompt_ids
            self.exchanges.append((body, resp))
        return web.json_response(resp)
