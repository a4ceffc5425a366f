"""Token access for ``spanrl ui --token``: a login page once, then an HttpOnly SameSite=Strict cookie.

API calls may send ``Authorization: Bearer <token>`` instead. The cookie holds an HMAC of the token
(not the token), so a leaked cookie does not reveal what to type into other spanrl services. Every
comparison is constant-time. Without a token there is no login: the server then binds only where
it is told (127.0.0.1 by default).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from aiohttp import web

COOKIE = "spanrl_ui"
OPEN_PATHS = ("/login", "/static/")  # reachable without the token (the login page and its CSS)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"spanrl-ui-session-v1", hashlib.sha256).hexdigest()


def is_authorised(request: web.Request, token: str) -> bool:
    """Bearer header or session cookie, compared in constant time."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer ") and _equal(header[7:].strip(), token):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return bool(cookie) and _equal(cookie, session_value(token))


def _equal(given: str, expected: str) -> bool:
    """Constant-time comparison of text a client sent: any bytes (aiohttp hands undecodable header
    bytes over as surrogates, which ``.encode()`` refuses) are compared, never raised on."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def safe_next(target: str | None) -> str:
    """Only a path on this server may follow a login: it starts with one '/', and holds no
    backslash, whitespace or control character (browsers drop TAB/CR/LF from URLs, so ``/\t/evil``
    would become ``//evil``, another host; a CR/LF would split the Location header)."""
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in target)):
        return "/"
    return target


def auth_middleware(token: str | None) -> Callable:
    """Pages redirect to /login, API calls get 401, when a token is set and not presented."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token is None or request.path.startswith(OPEN_PATHS) or is_authorised(request, token):
            return await handler(request)
        if request.path.startswith("/api/"):
            return web.json_response({"error": "send Authorization: Bearer <token> (spanrl ui --token)"}, status=401)
        raise web.HTTPSeeOther("/login?next=" + quote(request.path_qs, safe=""))

    return middleware


async def login_check(request: web.Request, token: str) -> web.StreamResponse | None:
    """POST /login: the cookie and a redirect when the token matches, else None (show the form again)."""
    form = await request.post()
    given = str(form.get("token", ""))
    if not _equal(given, token):
        return None
    response = web.Response(status=303, headers={"Location": safe_next(str(form.get("next", "/")))})
    response.set_cookie(COOKIE, session_value(token), httponly=True, samesite="Strict", path="/")
    return response
