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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CROSS_SITE: web.RequestKey[bool] = web.RequestKey("cross_site", bool)


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The host names (no port) a request may name: None means any (a wildcard bind, where the
    operator reaches the server by names this process cannot know; ``--allow-host`` narrows it)."""
    extra = [h.strip().lower().strip("[]") for h in extra if h.strip()]
    if bind.strip("[]") in WILDCARDS and not extra:
        return None
    names = {*LOOPBACK_NAMES, *extra}
    if bind.strip("[]") not in WILDCARDS:
        names.add(bind.lower().strip("[]"))
    return frozenset(names)


def host_name(host_header: str) -> str:
    """``Host`` without its port, lower case, IPv6 brackets removed (``[::1]:8765`` -> ``::1``)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host.rstrip(".")


def origin_matches(origin: str, host_header: str, scheme: str) -> bool:
    return origin.strip().lower() == f"{scheme}://{host_header.strip().lower()}"


def origin_guard(hosts: frozenset[str] | None) -> Callable:
    """The middleware: 421 for a Host this server does not answer to, 403 for a cross-origin request
    that is not a plain navigation."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if hosts is not None and host_name(host) not in hosts:
            return web.Response(status=421, text=(
                f"spanrl ui does not answer to Host {host!r} (a DNS-rebinding guard); open it as "
                f"http://127.0.0.1:PORT/ or start it with --allow-host NAME\n"))
        site = request.headers.get("Sec-Fetch-Site", "")
        origin = request.headers.get("Origin")
        if request.method not in SAFE_METHODS:
            same = (origin_matches(origin, host, request.scheme) if origin is not None
                    else site in ("", "same-origin", "none"))
            if not same:
                return web.Response(status=403, text="cross-origin request refused: spanrl ui changes state only "
                                                     "for its own pages\n")
        elif site in ("cross-site", "same-site"):
            navigation = (request.headers.get("Sec-Fetch-Mode") == "navigate"
                          and request.headers.get("Sec-Fetch-Dest", "document") == "document")
            if not navigation or request.path.startswith("/api/"):
                return web.Response(status=403, text="cross-origin read refused: open spanrl ui's pages directly\n")
        request[CROSS_SITE] = site in ("cross-site", "same-site")
        return await handler(request)

    return middleware


def is_cross_site(request: web.Request) -> bool:
    """A navigation from another site (a clicked link): pages render, but start no work."""
    return request.get(CROSS_SITE, False)

