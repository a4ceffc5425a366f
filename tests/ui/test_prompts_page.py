"""The Prompts page over a store written with the prompt store's own API (as `spanrl prompts optimize`
writes it): every version, LATEST marked, the recorded evidence, the text escaped, and a link that
lists the rollouts a version ran."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from aiohttp.test_utils import TestClient, TestServer

from spanrl.prompts.store import add_version, record_evidence
from spanrl.ui import make_app


def _page(data: Path, path: str = "/prompts") -> tuple[int, str]:
    async def main() -> tuple[int, str]:
        async with TestClient(TestServer(make_app(data))) as client:
            resp = await client.get(path)
            return resp.status, await resp.text()

    return asyncio.run(main())


def test_an_empty_store_says_how_to_make_one(tmp_path: Path) -> None:
    status, body = _page(tmp_path)
    assert status == 200 and "No prompt version yet" in body and "spanrl prompts optimize" in body


def test_versions_show_their_evidence_and_latest(tmp_path: Path) -> None:
    original = add_version(tmp_path, "calc", "You are a math assistant.", {"method": "original", "parent": None},
                           promote=True)
    cand = add_version(tmp_path, "calc", "You are a math assistant.\n<b>Example</b>: 2+2 -> 4",
                       {"method": "demonstrations", "parent": original.version})
    record_evidence(tmp_path, "calc", cand.version, {
        "verdict": "better", "baseline": original.version,
        "train": {"current": {"mean": 0.25}, "candidate": {"mean": 0.5}},
        "validation": {"comparison": {"diff": 0.1875, "ci": [0.0625, 0.3125], "tasks": 8, "verdict": "better"}},
        "rollout_ids": ["r1", "r2", "r3"], "baseline_rollout_ids": ["r4"]})
    status, body = _page(tmp_path)
    assert status == 200
    rows = {v: body.split(f'id="calc-{v}"')[1].split("</tr>")[0] for v in (original.version, cand.version)}
    assert "LATEST" in rows[original.version] and "LATEST" not in rows[cand.version]
    assert "demonstrations" in rows[cand.version] and "better" in rows[cand.version]
    assert "+0.188 [+0.062, +0.312]" in rows[cand.version] and "0.250 → 0.500" in rows[cand.version]
    assert ">3<" in rows[cand.version]  # scored rollouts
    assert "&lt;b&gt;Example&lt;/b&gt;" in body and "<b>Example</b>" not in body  # the text is escaped
    link = html.unescape(rows[cand.version].split('href="')[1].split('"')[0])
    query = parse_qs(urlparse(link).query)["q"][0]
    assert urlparse(link).path == "/sql" and f"prompt_version = 'calc@{cand.version}'" in query
    assert body.index('id="calc-0002"') < body.index('id="calc-0001"')  # newest first


def test_a_version_with_turns_shows_them_escaped(tmp_path: Path) -> None:
    add_version(tmp_path, "calc", "You are a math assistant.", {"method": "original"}, promote=True)
    add_version(tmp_path, "calc", "You are a math assistant.", {"method": "demonstration turns", "parent": "0001"},
                turns=[{"role": "user", "content": "<i>What is 2+3?</i>"}, {"role": "assistant", "content": "5"}])
    status, body = _page(tmp_path)
    assert status == 200 and "conversation turns (2 messages" in body
    assert "&lt;i&gt;What is 2+3?&lt;/i&gt;" in body and "<i>What" not in body
