"""The Rollouts list (issue 31): first user message and final answer columns, the "has errors"
filter, the empty-lake state and a page past the end. Expected values come from the lake's own
tables (``Lake.connection``), not from the page code."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app

ROW = re.compile(r'<tr>\s*<td><a href="/rollouts/([^"]+)">')


def _get(data: Path, check: Callable[[TestClient], Awaitable[None]]) -> None:
    async def main() -> None:
        async with TestClient(TestServer(make_app(data, None, Lake(data)))) as client:
            await check(client)

    asyncio.run(main())


def test_first_user_message_and_final_answer_columns(ui_data: Path) -> None:
    with Lake(ui_data).connection() as con:
        calls = con.execute(
            "SELECT CAST(c.input_messages AS VARCHAR), CAST(c.output_message AS VARCHAR) FROM llm_calls c "
            "JOIN (SELECT unnest(trace_ids) AS trace_id FROM rollouts WHERE rollout_id = 'ui-team') USING (trace_id) "
            "ORDER BY c.start_ns, c.span_id").fetchall()
    # the request: the first call's last user message (worked examples an agent keeps come before it)
    first_user = [m["content"] for m in json.loads(calls[0][0]) if m["role"] == "user"][-1]
    final = json.loads(calls[-1][1])["content"]

    async def check(client: TestClient) -> None:
        html = await (await client.get("/rollouts?sort=task&dir=asc")).text()
        row = html.split('href="/rollouts/ui-team"')[1].split("</tr>")[0]
        cells = re.findall(r'<td class="preview">([^<]*)</td>', row)
        assert cells == [first_user, final]

    _get(ui_data, check)


def test_has_errors_filter_and_paging_past_the_end(ui_data: Path) -> None:
    with Lake(ui_data).connection() as con:
        with_errors = {r[0] for r in con.execute("SELECT rollout_id FROM rollouts WHERE n_errors > 0").fetchall()}
        everyone = {r[0] for r in con.execute("SELECT rollout_id FROM rollouts").fetchall()}
    assert with_errors and everyone - with_errors  # the lake has both kinds, so the filter can be wrong

    async def check(client: TestClient) -> None:
        yes = set(ROW.findall(await (await client.get("/rollouts?errors=yes")).text()))
        no = set(ROW.findall(await (await client.get("/rollouts?errors=no")).text()))
        assert yes == with_errors and no == everyone - with_errors
        assert (await client.get("/rollouts?errors=maybe")).status == 400
        past = await client.get("/rollouts?page=7")
        html = await past.text()
        assert past.status == 200 and "page 7 of" not in html and "There is no page 7" in html
        assert set(ROW.findall(html)) == everyone  # the last (only) page is shown instead

    _get(ui_data, check)


def test_empty_lake_says_so_instead_of_no_match(tmp_path: Path) -> None:
    async def check(client: TestClient) -> None:
        html = await (await client.get("/rollouts")).text()
        assert "The lake has no rollouts yet" in html and "No rollout matches" not in html
        assert "page 1 of 1" in html

    _get(tmp_path, check)
