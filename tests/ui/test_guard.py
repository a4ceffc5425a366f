"""``spanrl ui`` against browser attacks (issue 25): DNS rebinding (foreign Host), cross-origin reads
and state changes from a page the operator visits, login redirect tricks, undecodable tokens. Each
case is a request a browser really sends (its Host / Origin / Sec-Fetch-* headers), against the app
over the real test lake; the same requests from the app's own pages still work."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app
from spanrl.ui.auth import safe_next
from spanrl.ui.guard import allowed_hosts, host_name

CROSS_FETCH = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
CROSS_NAV = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


@pytest.fixture(scope="module")
def lake(ui_data) -> Lake:
    return Lake(ui_data)


def _with_client(lake: Lake, check: Callable[[TestClient], Awaitable[None]], **kwargs) -> None:
    async def main() -> None:
        async with TestClient(TestServer(make_app(lake.data, lake=lake, **kwargs))) as client:
            await check(client)

    asyncio.run(main())


def test_a_foreign_host_is_refused_everywhere(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        port = client.server.port
        for path in ("/api/rollouts", "/sql?q=select+1", "/rollouts", "/static/ui.css"):
            resp = await client.get(path, headers={"Host": f"evil.example:{port}"})
            assert resp.status == 421, path
            assert "DNS-rebinding" in await resp.text()
        resp = await client.post("/api/search/cancel?q=x", headers={"Host": "evil.example"})
        assert resp.status == 421
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST.:{port}"):
            assert (await client.get("/api/rollouts", headers={"Host": host})).status == 200, host

    _with_client(lake, check)


def test_allow_host_and_a_named_bind_address_extend_the_list(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        assert (await client.get("/api/rollouts", headers={"Host": "ui.internal:80"})).status == 200
        assert (await client.get("/api/rollouts", headers={"Host": "other.internal"})).status == 421

    _with_client(lake, check, allow_hosts=("ui.internal",))
    assert "10.1.2.3" in allowed_hosts("10.1.2.3") and "evil.example" not in allowed_hosts("10.1.2.3")
    assert allowed_hosts("0.0.0.0") is None  # a wildcard bind: the names it is reached by are unknown
    assert host_name("[::1]:8765") == "::1" and host_name("Example.COM.:80") == "example.com"


def test_cross_origin_state_changes_are_refused_same_origin_ones_work(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        origin = f"http://127.0.0.1:{client.server.port}"
        resp = await client.post("/api/search/cancel?q=x", headers={"Origin": "http://evil.example"})
        assert resp.status == 403
        resp = await client.post("/api/search/cancel?q=x", headers={"Sec-Fetch-Site": "cross-site"})
        assert resp.status == 403  # no Origin, but the browser says where it came from
        resp = await client.post("/login", data={"token": "x"}, headers={"Origin": "null"})
        assert resp.status == 403  # a sandboxed or file:// page
        assert (await client.post("/api/search/cancel?q=x", headers={"Origin": origin})).status == 200
        assert (await client.post("/api/search/cancel?q=x")).status == 200  # curl: not a browser

    _with_client(lake, check)


def test_cross_origin_reads_are_refused_but_a_clicked_link_opens_the_page(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        for path in ("/api/rollouts", "/sql?q=select+1", "/rollouts"):
            assert (await client.get(path, headers=CROSS_FETCH)).status == 403, path
        assert (await client.get("/api/rollouts", headers=CROSS_NAV)).status == 403
        resp = await client.get("/tasks", headers=CROSS_NAV)
        assert resp.status == 200
        # a link from elsewhere may not start a search (work on the operator's machine) ...
        resp = await client.get("/rollouts", params={"q": "NEVER-SEARCHED-TEXT"}, headers=CROSS_NAV)
        assert resp.status == 200 and 'id="search-not-started"' in await resp.text()
        status = await client.get("/api/search", params={"q": "NEVER-SEARCHED-TEXT"})
        assert status.status == 404
        # ... the same URL from the app's own page does
        resp = await client.get("/rollouts", params={"q": "NEVER-SEARCHED-TEXT"},
                                headers={"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"})
        assert resp.status == 200 and 'id="search-not-started"' not in await resp.text()
        assert (await client.get("/api/search", params={"q": "NEVER-SEARCHED-TEXT"})).status == 200

    _with_client(lake, check)


@pytest.mark.parametrize("target", ["/\t/evil.example", "/\n/evil.example", "/\r\nSet-Cookie: x=1", "//evil.example",
                                    "/\\evil.example", "https://evil.example", "/ok\x7f", " /rollouts"])
def test_login_next_accepts_only_plain_paths(target: str) -> None:
    assert safe_next(target) == "/"


def test_login_next_keeps_a_real_path() -> None:
    assert safe_next("/rollouts?task=a&q=x%20y") == "/rollouts?task=a&q=x%20y"


def test_login_redirect_with_crlf_is_answered_not_dropped(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        resp = await client.post("/login", data={"token": "s3cret", "next": "/x\r\nSet-Cookie: evil=1"},
                                 allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"] == "/"
        resp = await client.get("/login", params={"next": "/\t/evil.example"}, allow_redirects=False)
        assert resp.status == 200 and 'value="/"' in await resp.text()

    _with_client(lake, check, token="s3cret")


def test_a_non_ascii_token_is_401_not_500(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        for raw in ("Bearer s3crét".encode(), b"Bearer \xff\xfe"):
            resp = await client.get("/api/rollouts", headers={"Authorization": raw.decode("latin-1")})
            assert resp.status == 401, raw
        resp = await client.get("/api/rollouts", headers={"Cookie": "spanrl_ui=\u00e9t\u00e9"})
        assert resp.status == 401
        resp = await client.post("/login", data={"token": "s3crét"}, allow_redirects=False)
        assert resp.status == 401

    _with_client(lake, check, token="s3cret")
