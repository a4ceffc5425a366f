"""A scripted OpenAI-compatible judge for tests: each request takes the next mode from ``script``
(then ``default``): ``malformed`` answers prose, ``bad_ids`` scores a trajectory that does not
exist, ``ok`` scores every trajectory by its text (1.0 when it holds ``good_word``, else 0.2) and
``error`` answers HTTP 500. Requests (body and Authorization header) are kept in ``seen``."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from tests.helpers.fake_openai import FakeOpenAI

TRAJECTORY = re.compile(r'<trajectory id="(\d+)">\n(.*?)\n</trajectory>', re.DOTALL)


class FakeJudge(FakeOpenAI):
    def __init__(self, script: list[str] | None = None, default: str = "ok", good_word: str = "42") -> None:
        super().__init__()
        self.script, self.default, self.good_word = list(script or []), default, good_word
        self.seen: list[dict[str, Any]] = []

    def score(self, text: str) -> float:
        return 1.0 if self.good_word in text else 0.2

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append({"body": body, "auth": request.headers.get("Authorization")})
        mode = self.script.pop(0) if self.script else self.default
        if mode == "error":
            return web.json_response({"error": {"message": "overloaded"}}, status=500)
        user = body["messages"][-1]["content"]
        found = TRAJECTORY.findall(user)
        if mode == "malformed":
            text = "Trajectory 1 looks best to me."
        elif mode == "bad_ids":
            text = json.dumps({"scores": [{"trajectory_id": "99", "score": 0.5}]})
        else:
            scores = [{"trajectory_id": i, "explanation": "checked", "score": self.score(t)} for i, t in found]
            text = "```json\n" + json.dumps({"scores": scores}) + "\n```"
        return web.json_response({
            "id": f"judge-{len(self.seen)}", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split()),
                      "total_tokens": len(user.split()) + len(text.split())}})
