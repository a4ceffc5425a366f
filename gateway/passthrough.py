"""Every route the gateway does not record goes to the upstream unchanged: embeddings, models, files,
batches, a stored response's retrieval, anything an SDK adds later. The answer streams back as it
comes (status, headers, body chunk by chunk), so an upstream's server-sent events stay a stream and
an upstream's 404 stays the upstream's. The gateway only counts the call (``passed_through``, and
per route in ``passed_through_routes``): it writes no span, there is nothing to train on.
"""

from __future__ import annotations

import contextlib
import re

import aiohttp
from aiohttp import web

from spanrl.gateway.headers import answer_headers, passed_headers

ID_SEGMENT = re.compile(r"^[^/]*[0-9][^/]*$")  # a path segment holding a digit (an object id) is not a route name


def route_name(method: str, tail: str) -> str:
    """``METHOD /v1/<route>`` with object ids replaced by ``{id}``: a bounded set of counter names."""
    parts = [("{id}" if ID_SEGMENT.match(p) else p) for p in tail.split("/")[:4] if p]
    return f"{method} /v1/{'/'.join(parts)}"


async def pass_through(session: aiohttp.ClientSession, request: web.Request, url: str, token: str | None,
                       upstream_key: str | None) -> web.StreamResponse:
    """Forward ``request`` to ``url`` (its query string kept) and stream the answer back."""
    if request.query_string:
        url += "?" + request.query_string
    body = await request.read()
    async with session.request(request.method, url, data=body if body else None, allow_redirects=False,
                               headers=passed_headers(request.headers, token, upstream_key)) as resp:
        out = web.StreamResponse(status=resp.status, reason=resp.reason, headers=answer_headers(resp.headers))
        await out.prepare(request)
        async for chunk in resp.content.iter_any():
            try:
                await out.write(chunk)
            except ConnectionResetError:  # the agent left: stop reading for it
                return out
        with contextlib.suppress(ConnectionResetError):
            await out.write_eof()
        return out
