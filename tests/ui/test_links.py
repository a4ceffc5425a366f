"""Every link of every page resolves: a bounded breadth-first walk over same-origin hrefs from ``/`` on
the test lake, each page answering 200 and each ``#anchor`` existing on its target page; an unknown
route is the styled 404 with the navigation (issue 31)."""

from __future__ import annotations

import asyncio
import re
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urldefrag, urljoin, urlsplit

from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app

HREF = re.compile(r'href="([^"]*)"')
IDS = re.compile(r'\sid="([^"]*)"')
MAX_PAGES = 120  # bounded: the test lake's pages are far fewer; a runaway walk fails instead of looping
SKIP = ("/logout", "/static/", "/api/")


def _walk(data: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Pages fetched (path → ids on it) and every (page, href-path, anchor) link seen."""
    ids: dict[str, set[str]] = {}
    links: list[tuple[str, str, str]] = []

    async def main() -> None:
        async with TestClient(TestServer(make_app(data, None, Lake(data)))) as client:
            queue, seen = ["/"], {"/?"}
            while queue:
                path = queue.pop(0)
                resp = await client.get(path)
                assert resp.status == 200, (path, resp.status)
                html = await resp.text()
                page = str(resp.url.relative())
                ids[page] = set(IDS.findall(html))
                for href in HREF.findall(html):
                    url, anchor = urldefrag(urljoin(page, unescape(href)))
                    parts = urlsplit(url)
                    if parts.scheme not in ("", "http") or (parts.netloc and parts.netloc != resp.url.host + f":{resp.url.port}"):
                        continue
                    target = parts.path + (f"?{parts.query}" if parts.query else "")
                    if any(target.startswith(s) for s in SKIP):
                        continue
                    links.append((page, target, anchor))
                    # one page per (path, query keys): filter values multiply pages, not code paths
                    key = parts.path + "?" + ",".join(sorted(parse_qs(parts.query, keep_blank_values=True)))
                    if key not in seen:
                        seen.add(key)
                        queue.append(target)
                        assert len(seen) <= MAX_PAGES, f"more than {MAX_PAGES} distinct pages linked"

    asyncio.run(main())
    return ids, links


def test_every_link_and_anchor_resolves(ui_data: Path) -> None:
    ids, links = _walk(ui_data)
    assert any(p.startswith("/rollouts/") for p in ids), "the walk reached no rollout page"
    missing = [(page, target, anchor) for page, target, anchor in links
               if anchor and target in ids and anchor not in ids[target]]
    unchecked = [(page, target) for page, target, anchor in links if anchor and target not in ids]
    assert not unchecked, unchecked[:10]
    assert not missing, missing[:10]


def test_unknown_route_is_a_styled_404_with_navigation(ui_data: Path) -> None:
    async def main() -> None:
        async with TestClient(TestServer(make_app(ui_data, None, Lake(ui_data)))) as client:
            resp = await client.get("/no/such/page")
            assert resp.status == 404
            html = await resp.text()
            assert 'href="/rollouts"' in html and 'href="/sql"' in html and "/static/ui.css" in html
            assert "default-src 'self'" in resp.headers["Content-Security-Policy"]

    asyncio.run(main())
