"""The SQL page under load (issue 25): a huge result does not take the server's memory, and a long
query does not hold up the other pages."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app

ROOT = Path(__file__).resolve().parents[2]
HUGE = "select range, range::varchar || repeat('x', 100) AS v from range(200000000)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peak_rss_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", text)[1]) / 1024


def test_a_huge_result_streams_under_the_memory_limit(ui_data: Path) -> None:
    """200 M rows of ~110 B (22 GB as a table): the page shows the first rows, says the count stopped,
    and the server's peak RSS stays under DuckDB's 512 MB limit + 256 MB."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spanrl", "ui", "--data", str(ui_data), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "spanrl ui: http://...": it listens
        assert f":{port}/" in line, line
        url = f"http://127.0.0.1:{port}/sql?" + urllib.parse.urlencode({"q": HUGE})
        with urllib.request.urlopen(url, timeout=300) as resp:
            page = resp.read().decode()
        assert "more than 1,000,000 rows (counting stopped there), first 500 shown" in page
        assert page.count("<tr") >= 500
        peak = _peak_rss_mb(proc.pid)
        print(f"spanrl ui peak RSS after the 200M-row query: {peak:.0f} MB")
        assert peak < 512 + 256
        now = int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{proc.pid}/status").read_text())[1]) / 1024
        assert now < 512, f"{now:.0f} MB still held after the query"  # the result is not kept
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_small_result_is_counted_whole(ui_data: Path) -> None:
    lake = Lake(ui_data)
    columns, rows, count, whole = lake.user_query("select 1 AS a union all select 2 order by a", 500)
    assert (columns, rows, count, whole) == (["a"], [(1,), (2,)], 2, True)
    columns, rows, count, whole = lake.user_query("select * from range(5000)", 10, count_cap=1000)
    assert len(rows) == 10 and whole is False and count == 1000


def test_a_long_sql_query_does_not_hold_up_other_pages(ui_data: Path) -> None:
    """While a query runs on the SQL page, /tasks and the rollouts API answer; the query is then
    stopped (interrupted as its timeout would) and says so."""
    lake = Lake(ui_data)

    async def main() -> None:
        async with TestClient(TestServer(make_app(lake.data, lake=lake))) as client:
            slow = asyncio.ensure_future(client.get(
                "/sql", params={"q": "select sum(hash(a.range * b.range)) from range(100000000) a, range(100000) b"}))
            while lake._sql is None or not lake._sql_lock.locked():  # the query holds its connection
                await asyncio.sleep(0.05)
            for path in ("/tasks", "/api/rollouts", "/rollouts"):
                resp = await client.get(path)
                assert resp.status == 200, path
                assert not slow.done(), f"{path} waited for the SQL page's query"
            t0 = time.monotonic()
            while not slow.done():
                lake._sql[0].interrupt()
                await asyncio.sleep(0.1)
                assert time.monotonic() - t0 < 60
            resp = await slow
            assert resp.status == 400 and "was stopped" in await resp.text()

    asyncio.run(main())
