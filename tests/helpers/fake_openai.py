"""A local, deterministic OpenAI-compatible chat-completions server for tests (no real LLM).

    with FakeOpenAI() as fake:                    # aiohttp on 127.0.0.1:<free port>, own thread
        client = openai.OpenAI(base_url=fake.url, api_key="x")
        ...
        fake.exchanges                            # [(request JSON, response JSON), ...] in order

Responses are a pure function of the request, so a test can assert that the trace lake holds
exactly what the server saw:
- tools offered and the last message is from the user -> one tool call to the first tool,
  ``arguments = {"query": <last user text>}``, ``id = call_<n>``, finish_reason ``tool_calls``;
- the last message is a tool result -> ``"Tool said: <result>"``;
- otherwise -> ``"Echo: <last user text>"``.
``usage``: prompt tokens = words in all messages, completion tokens = words in the reply (+1 per
tool call). ``stream=True`` is answered as server-sent events with a final usage chunk.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web


def _words(text: str | None) -> int:
    return len((text or "").split())


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def make_response(request: dict[str, Any], n: int) -> dict[str, Any]:
    """The deterministic reply to one chat-completions request (the n-th the server saw)."""
    messages = request.get("messages", [])
    last = messages[-1] if messages else {}
    last_user = next((_content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    message: dict[str, Any] = {"role": "assistant"}
    if request.get("tools") and last.get("role") == "user":
        tool = request["tools"][0]["function"]["name"]
        message["content"] = None
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": tool, "arguments": json.dumps({"query": last_user})}}]
        finish, completion = "tool_calls", 1 + _words(last_user)
    else:
        text = f"Tool said: {_content_text(last.get('content'))}" if last.get("role") == "tool" else f"Echo: {last_user}"
        message["content"] = text
        finish, completion = "stop", _words(text)
    prompt = sum(_words(_content_text(m.get("content"))) for m in messages) or 1
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
        "model": request.get("model", "fake-model"), "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _sse_chunks(resp: dict[str, Any]) -> list[dict[str, Any]]:
    choice = resp["choices"][0]
    base = {k: resp[k] for k in ("id", "created", "model", "system_fingerprint")} | {"object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant", "content": choice["message"].get("content")}
    if choice["message"].get("tool_calls"):
        delta["tool_calls"] = [dict(tc, index=i) for i, tc in enumerate(choice["message"]["tool_calls"])]
    return [base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            base | {"choices": [], "usage": resp["usage"]}]


class FakeOpenAI:
    """The server; use as a context manager. ``url`` ends in ``/v1`` (an OpenAI ``base_url``)."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [req for req, _ in self.exchanges]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            resp = make_response(body, len(self.exchanges) + 1)
            self.exchanges.append((body, resp))
        if not body.get("stream"):
            return web.json_response(resp)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        for chunk in _sse_chunks(resp):
            await stream.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await stream.write(b"data: [DONE]\n\n")
        return stream

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> FakeOpenAI:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
