"""The APIs ``spanrl serve`` answers besides chat completions, each a translation to and from the
chat pipeline (one engine, one template, one tool parser, one span per call): the Responses API
(serve/responses_api.py) and Anthropic Messages (serve/messages_api.py), streamed as their
server-sent events (the completion is finished first, as for a streamed chat completion).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from spanrl.serve import messages_api, responses_api


@dataclass(frozen=True)
class WireApi:
    route: str
    id_prefix: str  # the answer's id, and the span's gen_ai.response.id
    to_chat: Callable[[dict[str, Any]], dict[str, Any]]
    from_chat: Callable[[dict[str, Any], dict[str, Any], Callable[[list[int]], str]], dict[str, Any]]
    events: Callable[[dict[str, Any]], list[dict[str, Any]]]


RESPONSES = WireApi("/v1/responses", "resp_", responses_api.to_chat, responses_api.from_chat, responses_api.events)
MESSAGES = WireApi("/v1/messages", "msg_", messages_api.to_chat, messages_api.from_chat, messages_api.events)


async def stream_events(request: web.Request, events: list[dict[str, Any]], headers: dict[str, str]) -> web.StreamResponse:
    """``event: <type>`` / ``data: <json>`` pairs, as both APIs stream."""
    out = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await out.prepare(request)
    for event in events:
        await out.write(f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
    await out.write_eof()
    return out
