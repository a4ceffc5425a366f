"""A local upstream that speaks every API the gateway records or passes on, for the gateway's tests:
FakeVLLM's chat completions (tests/helpers/fake_vllm.py) plus

- ``POST /v1/responses``: the OpenAI Responses API (tests/helpers/fake_responses.py), streamed as
  named server-sent events; it keeps each response's conversation for ``previous_response_id``;
- ``POST /v1/messages``: Anthropic's Messages API (tests/helpers/fake_messages.py), streamed too;
- ``POST /v1/completions``: a text completion (``"Echo: <prompt>"``), vLLM's ``prompt_token_ids`` /
  ``token_ids`` on the choice when asked;
- ``POST /v1/embeddings``: a deterministic vector per input;
- ``POST /v1/audio/speech``: a stream in two chunks, the second sent only once ``release`` is set
  (or ``TIMEOUT`` after 10 s): a test can tell a streamed pass-through from a buffered one.

``calls[api]`` holds (request, response) per API in order (``exchanges`` the chat ones, as before),
``headers[api]`` the request headers.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web

from tests.helpers import fake_messages, fake_responses
from tests.helpers.fake_vllm import FakeVLLM, word_ids


class FakeApis(FakeVLLM):
    """``strict=True`` plays a hosted API: a request naming vLLM's id fields gets HTTP 400 naming them."""

    def __init__(self, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self.calls: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
            "responses": [], "messages": [], "completions": [], "embeddings": [], "speech": []}
        self.headers: dict[str, list[dict[str, str]]] = {api: [] for api in self.calls}
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.release = threading.Event()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/audio/speech", self._speech)

    def _record(self, api: str, body: dict[str, Any], resp: dict[str, Any], request: web.Request) -> int:
        self.calls[api].append((body, resp))
        self.headers[api].append(dict(request.headers))
        return len(self.calls[api])

    async def _sse(self, request: web.Request, payloads: list[dict[str, Any]], named: bool) -> web.StreamResponse:
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        for payload in payloads:
            head = f"event: {payload['type']}\n" if named else ""
            await stream.write(f"{head}data: {json.dumps(payload)}\n\n".encode())
        await stream.write_eof()
        return stream

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.strict and "enable_response_messages" in body:
            self._record("responses", body, {}, request)
            return web.json_response({"error": {"message": "Unknown parameter: 'enable_response_messages'.",
                                                "type": "invalid_request_error", "param": "enable_response_messages",
                                                "code": "unknown_parameter"}}, status=400)
        with self._lock:
            previous = body.get("previous_response_id")
            if previous and previous not in self.conversations:
                error = {"error": {"message": f"Previous response with id '{previous}' not found.",
                                   "type": "invalid_request_error", "param": "previous_response_id", "code": None}}
                return web.json_response(error, status=400)
            n = len(self.calls["responses"]) + 1
            resp, conversation = fake_responses.reply(body, self.conversations.get(previous, []), n)
            self.conversations[resp["id"]] = conversation
            self._record("responses", body, resp, request)
        if body.get("stream"):
            return await self._sse(request, fake_responses.events(resp), named=True)
        return web.json_response(resp)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            resp = fake_messages.reply(body, len(self.calls["messages"]) + 1)
            self._record("messages", body, resp, request)
        if body.get("stream"):
            return await self._sse(request, fake_messages.events(resp), named=True)
        return web.json_response(resp)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = body["prompt"] if isinstance(body["prompt"], str) else " ".join(body["prompt"])
        text = f"Echo: {prompt}"
        with self._lock:
            n = len(self.calls["completions"]) + 1
            choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
            if body.get("return_token_ids"):
                choice.update(prompt_token_ids=word_ids(prompt), token_ids=word_ids(text))
            resp = {"id": f"cmpl-{n}", "object": "text_completion", "created": 1_700_000_000 + n,
                    "model": body.get("model", "fake-model"), "choices": [choice],
                    "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                              "total_tokens": len(prompt.split()) + len(text.split())}}
            self._record("completions", body, resp, request)
        if body.get("stream"):
            return await self._sse(request, [resp], named=False)
        return web.json_response(resp)

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        resp = {"object": "list", "model": body.get("model", "fake-embed"),
                "data": [{"object": "embedding", "index": i, "embedding": [len(t) / 10, len(t.split()) / 10, 0.5]}
                         for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": sum(len(t.split()) for t in inputs), "total_tokens": 0}}
        with self._lock:
            self._record("embeddings", body, resp, request)
        return web.json_response(resp)

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self._record("speech", body, {}, request)
        stream = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await stream.prepare(request)
        await stream.write(b"chunk-1;")
        released = await asyncio.to_thread(self.release.wait, 10)
        await stream.write(b"chunk-2" if released else b"TIMEOUT")
        await stream.write_eof()
        return stream
