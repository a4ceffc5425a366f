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

Scripted mode (only when the last user text holds the marker ``fake-script:``, so every other test
sees the rules above unchanged): the JSON list after the marker says what to answer at each step,
step k being the k-th request after that user message (k = assistant messages since it). A step is
- a list of tool calls ``[{"name": "add", "arguments": {"a": 1}}, ...]`` (several = parallel calls;
  ``arguments`` a string is sent verbatim, e.g. not JSON), ids ``call_<n>_<i>``;
- a string: that text;
- ``{"fail_first": 500, "then": <step>}``: HTTP 500 the first time this exact message list is seen,
  ``then`` when it is sent again (an agent's retry of an identical request).
Past the script's end the default rules apply. Agents pass the marker through the user text, so the
recorded spans show which script each run followed.
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


SCRIPT_MARKER = "fake-script:"


def script_step(messages: list[dict[str, Any]]) -> Any:
    """The scripted step for this request, or None (no script in the last user text, or past its end)."""
    idx = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if idx is None or SCRIPT_MARKER not in (text := _content_text(messages[idx].get("content"))):
        return None
    steps = json.loads(text.split(SCRIPT_MARKER, 1)[1])
    k = sum(1 for m in messages[idx + 1:] if m.get("role") == "assistant")
    return steps[k] if k < len(steps) else None


def _scripted(step: Any, n: int) -> tuple[dict[str, Any], str, int]:
    """The message, finish reason and completion tokens of one scripted step."""
    if isinstance(step, str):
        return {"role": "assistant", "content": step}, "stop", _words(step)
    calls = [{"id": f"call_{n}_{i}", "type": "function",
              "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                           else json.dumps(c["arguments"])}} for i, c in enumerate(step)]
    return {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls", len(calls)


def make_response(request: dict[str, Any], n: int, step: Any = None) -> dict[str, Any]:
    """The deterministic reply to one chat-completions request (the n-th the server saw); ``step``
    is the scripted step to answer instead of the default rules (see the module docstring)."""
    messages = request.get("messages", [])
    last = messages[-1] if messages else {}
    last_user = next((_content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    message: dict[str, Any] = {"role": "assistant"}
    if step is not None:
        message, finish, completion = _scripted(step, n)
    elif request.get("tools") and last.get("role") == "user":
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
            step = script_step(body.get("messages", []))
            if isinstance(step, dict):  # fail_first: an error unless this exact prompt was seen before
                seen = any(req.get("messages") == body.get("messages") for req, _ in self.exchanges)
                if not seen:
                    error = {"error": {"message": "scripted failure", "type": "server_error", "code": None}}
                    self.exchanges.append((body, error))
                    return web.json_response(error, status=int(step["fail_first"]))
                step = step["then"]
            resp = make_response(body, len(self.exchanges) + 1, step)
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

    def _routes(self, app: web.Application) -> None:
        """The routes served; subclasses add theirs."""
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)

    async def _start(self) -> None:
        app = web.Application()
        self._routes(app)
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
