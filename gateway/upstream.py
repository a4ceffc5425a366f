"""What an upstream answered, read for the agent and the span: a chat completion, an error passed
through as it came, or a 502 naming what came instead.

A 200 that is not a completion (an HTML page from a proxy in front of the model server, a JSON list,
broken JSON) used to end in a 500 with a traceback, the call not counted as failed and its span a
success; now it is an ApiError the gateway counts and marks on the span like any upstream failure.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from spanrl.serve.api import ApiError


def completion(raw: bytes, content_type: str, upstream: str) -> dict[str, Any]:
    """An upstream's 200 body as a chat completion (a JSON object); a 502 ApiError naming what came
    instead and what to check, never a traceback."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        what = f"a body that is not JSON ({exc})"
    else:
        if isinstance(data, dict):
            return data
        what = f"JSON {type(data).__name__}, not an object"
    snippet = raw[:200].decode(errors="replace")
    raise ApiError(f"upstream {upstream} answered HTTP 200 with {what} ({content_type}, {len(raw)} bytes: "
                   f"{snippet!r}), not a chat completion; check that --upstream is the server's OpenAI base URL "
                   "(e.g. http://HOST:8000/v1)", 502)


class Replay:
    """An upstream error response whose body was already read (so it can be passed through)."""

    def __init__(self, resp: aiohttp.ClientResponse, body: bytes) -> None:
        self.status, self.headers, self.content_type, self._body = resp.status, resp.headers, resp.content_type, body
        resp.release()

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None


def fail(span: Any, message: str) -> None:
    """Mark the call's span (None: no span was started) failed: an upstream's fault when the message
    says ``upstream``, else the request's."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, message))
    span.set_attribute("error.type", "upstream_error" if message.startswith("upstream") else "invalid_request")
