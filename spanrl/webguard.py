"""Who may talk to a spanrl HTTP service on this machine: the Host allow-list and the same-origin
rule that ``spanrl ui`` (ui/guard.py) and ``spanrl gateway`` (gateway/guard.py) share.

A service bound to 127.0.0.1 without a token is still reachable from any web page the operator
opens, two ways:

- **DNS rebinding**: a page on ``evil.example`` re-points its name at 127.0.0.1 and talks to the
  service as a same-origin page of its own. Its requests carry ``Host: evil.example``: only the
  names the service is known by are accepted (the loopback names, the address it binds, the names
  given with ``--allow-host``).
- **Cross-origin requests**: a form POST or a ``fetch`` to ``http://127.0.0.1:PORT/...``. A browser
  says where such a request comes from (``Origin``, else ``Sec-Fetch-Site``); a client that sends
  neither is not a browser (an SDK, curl) and is let through.

Each service words its own refusals (the ui answers text to a browser, the gateway an OpenAI-style
error to an agent); the decisions are made here once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from aiohttp import web

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def is_loopback(host: str) -> bool:
    """The bind address is reachable from this machine only (a warning is due without a token otherwise)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


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


def host_refused(request: web.Request, hosts: frozenset[str] | None) -> bool:
    """The request names a Host this server does not answer to (answer 421)."""
    return hosts is not None and host_name(request.headers.get("Host", "")) not in hosts


def same_origin(request: web.Request) -> bool:
    """The request comes from this server's own origin, or from no browser at all: its ``Origin``
    is this server's, else its ``Sec-Fetch-Site`` is same-origin / none (typed by the user), else it
    sent neither header (not a browser)."""
    origin = request.headers.get("Origin")
    if origin is not None:
        return origin_matches(origin, request.headers.get("Host", ""), request.scheme)
    return request.headers.get("Sec-Fetch-Site", "") in ("", "same-origin", "none")


def cross_site(request: web.Request) -> bool:
    """The browser says the request comes from another site (a link, a script, an image)."""
    return request.headers.get("Sec-Fetch-Site", "") in ("cross-site", "same-site")
