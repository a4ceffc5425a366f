"""Who may talk to ``spanrl ui``: the Host allow-list and the same-origin rules, one middleware.

Without ``--token`` the app is open to whoever reaches its port, so two browser attacks matter even
on 127.0.0.1:

- **DNS rebinding**: a page on ``evil.example`` re-points its name at 127.0.0.1 and reads the lake
  as a same-origin page of its own. Its requests carry ``Host: evil.example``: only the names this
  server is known by are accepted (the loopback names, the ``--host`` it binds, ``--allow-host``).
- **Cross-origin requests** from a page the operator visits: a form POST, a ``fetch`` or an
  ``<img>`` to ``http://127.0.0.1:8765/...``. A state-changing request (anything but GET/HEAD) must
  come from this origin (``Origin``, else ``Sec-Fetch-Site``; a client that sends neither is not a
  browser and is let through). A GET from another site is answered only as a top-level navigation
  (a link someone clicked), never to a script or an image, and it starts no work on its own
  (``cross_site_navigation`` tells the handlers, which then do not start a search).

The same checks apply with ``--token`` (the cookie is SameSite=Strict, the checks cost nothing).
The Host and origin decisions are spanrl/webguard.py's, shared with ``spanrl gateway``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from spanrl.webguard import SAFE_METHODS, allowed_hosts, cross_site, host_name, host_refused, same_origin

__all__ = ["allowed_hosts", "host_name", "is_cross_site", "origin_guard"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CROSS_SITE: web.RequestKey[bool] = web.RequestKey("cross_site", bool)


def origin_guard(hosts: frozenset[str] | None) -> Callable:
    """The middleware: 421 for a Host this server does not answer to, 403 for a cross-origin request
    that is not a plain navigation."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if host_refused(request, hosts):
            return web.Response(status=421, text=(
                f"spanrl ui does not answer to Host {request.headers.get('Host', '')!r} (a DNS-rebinding guard); "
                f"open it as http://127.0.0.1:PORT/ or start it with --allow-host NAME\n"))
        if request.method not in SAFE_METHODS:
            if not same_origin(request):
                return web.Response(status=403, text="cross-origin request refused: spanrl ui changes state only "
                                                     "for its own pages\n")
        elif cross_site(request):
            navigation = (request.headers.get("Sec-Fetch-Mode") == "navigate"
                          and request.headers.get("Sec-Fetch-Dest", "document") == "document")
            if not navigation or request.path.startswith("/api/"):
                return web.Response(status=403, text="cross-origin read refused: open spanrl ui's pages directly\n")
        request[CROSS_SITE] = cross_site(request)
        return await handler(request)

    return middleware


def is_cross_site(request: web.Request) -> bool:
    """A navigation from another site (a clicked link): pages render, but start no work."""
    return request.get(CROSS_SITE, False)

