"""Who may call ``spanrl gateway``: the Host allow-list and the cross-origin refusal of
``spanrl ui`` (spanrl/webguard.py), answered as OpenAI-style errors an agent's SDK can show.

The gateway spends the upstream (on ``--upstream-key`` when set) and writes training data, so a web
page the operator opens must not reach it, even on 127.0.0.1: a page that re-points its own name
at 127.0.0.1 (DNS rebinding) names a foreign Host (421), and a page's ``text/plain`` POST, which
needs no CORS preflight, carries its Origin (403). Agents (the openai SDK, httpx, curl) send no
Origin and name the address they were given: they pass.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aiohttp import web

from spanrl.serve.api import ApiError, error_response
from spanrl.webguard import cross_site, host_refused, same_origin


def gateway_guard(hosts: frozenset[str] | None, bind: str, counts: Counter) -> Any:
    """The middleware: 421 for a Host outside ``hosts`` (None: any), 403 for a request a browser
    sent from another site; each refusal counted in ``counts['refused']``, nothing forwarded."""

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if host_refused(request, hosts):
            counts["refused"] += 1
            return error_response(ApiError(
                f"spanrl gateway does not answer to Host {request.headers.get('Host', '')!r} (a DNS-rebinding "
                f"guard): call it as http://{bind}:PORT/v1, or start it with --allow-host NAME", 421))
        if not same_origin(request) or cross_site(request):
            counts["refused"] += 1
            return error_response(ApiError(
                f"cross-origin request refused (Origin {request.headers.get('Origin')!r}, Sec-Fetch-Site "
                f"{request.headers.get('Sec-Fetch-Site')!r}): spanrl gateway answers agents, not web pages", 403))
        return await handler(request)

    return guard

