"""One fake OpenAI-compatible server for the optimize tests, playing two models:

- ``calc-*`` (the agent's policy): answers ``"A+B"`` with the sum only when the system prompt holds
  the magic phrase ``MAGIC``, else ``"I am not sure."`` (so the reward is a function of the prompt);
- ``optimizer``: a canned critique, then a canned rewrite (``rewrite``, settable), in that order of
  its requests; ``optimizer_requests`` keeps what it was shown.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from tests.helpers.fake_openai import FakeOpenAI

CRITIQUE = "1. The prompt never says how to answer: the agent hedges instead of giving the number."
MAGIC = "MAGIC"


class FakeModels(FakeOpenAI):
    def __init__(self) -> None:
        super().__init__()
        self.rewrite = f"You are a calculator. {MAGIC}: answer with the number only."
        self.optimizer_requests: list[dict[str, Any]] = []

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        messages = body.get("messages") or []
        if body.get("model") == "optimizer":
            with self._lock:
                self.optimizer_requests.append(body)
                text = CRITIQUE if "Do not rewrite" in messages[-1]["content"] else f"<prompt>{self.rewrite}</prompt>"
        else:
            system = next((m["content"] for m in messages if m.get("role") == "system"), "")
            question = messages[-1]["content"]
            match = re.search(r"(\d+)\s*\+\s*(\d+)", question)
            text = str(int(match[1]) + int(match[2])) if MAGIC in system and match else "I am not sure."
        with self._lock:
            n = len(self.exchanges) + 1
            resp = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
                    "model": body.get("model"), "choices": [{"index": 0, "finish_reason": "stop",
                                                             "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}
            self.exchanges.append((body, resp))
        return web.json_response(resp)
