"""One chat-completions call to any OpenAI-compatible endpoint (httpx), with its token usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


@dataclass
class Answer:
    text: str | None
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None  # transport or HTTP failure (then text is None)


class JudgeClient:
    """``POST {url}/chat/completions``; the API key (from the environment) goes in the header."""

    def __init__(self, url: str, model: str, api_key: str | None, timeout_s: float, temperature: float) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)
        self.model, self.temperature = model, temperature

    async def chat(self, messages: list[dict[str, str]]) -> Answer:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        try:
            resp = await self._http.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            return Answer(None, 0, 0, f"{type(exc).__name__}: {exc}")
        if resp.status_code != 200:
            return Answer(None, 0, 0, f"HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            doc = resp.json()
            usage = doc.get("usage") or {}
            text = doc["choices"][0]["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return Answer(None, 0, 0, f"not a chat completion: {resp.text[:200]}")
        return Answer(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    async def close(self) -> None:
        await self._http.aclose()
