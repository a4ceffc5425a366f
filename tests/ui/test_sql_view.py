"""The SQL page's reading aids (issue 31): long (JSON) cells folded behind <details>, errors in a
<pre> that keeps DuckDB's LINE/caret lines, and a side list of every table with its columns."""

from __future__ import annotations

import asyncio
import re
from html import unescape
from pathlib import Path
from urllib.parse import quote

from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app


def test_sql_page_folds_long_cells_keeps_error_lines_and_lists_the_schema(ui_data: Path) -> None:
    lake = Lake(ui_data)
    with lake.connection() as con:
        prompt = con.execute("SELECT CAST(input_messages AS VARCHAR) FROM llm_calls "
                             "ORDER BY length(CAST(input_messages AS VARCHAR)) DESC LIMIT 1").fetchone()[0]
    assert len(prompt) > 80

    async def main() -> None:
        async with TestClient(TestServer(make_app(ui_data, None, lake))) as client:
            q = "select input_messages from llm_calls order by length(input_messages::varchar) desc limit 1"
            html = await (await client.get(f"/sql?q={quote(q)}")).text()
            cell = re.search(r'<details class="cell"><summary>(.*?)</summary><pre>(.*?)</pre>', html, re.S)
            assert cell and unescape(cell[2]) == prompt and len(unescape(cell[1])) == 81  # 80 chars + "…"
            assert 'id="schema"' in html and "<code>llm_calls</code>" in html and "<code>input_messages</code>" in html
            html = await (await client.get(f"/sql?q={quote('select 1 +')}")).text()
            error = re.search(r'<pre class="error" role="alert" id="sql-error">(.*?)</pre>', html, re.S)
            assert error and "\n" in error[1] and "LINE 1" in error[1] and "^" in error[1]

    asyncio.run(main())
