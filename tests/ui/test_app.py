"""The web app over a real lake, in-process (aiohttp's test client): pages, filters, auth, SQL guard,
search progress and cancel. Expected values come from the lake itself (``spanrl sql``'s connection
and the snapshot reader), not from the app."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pyarrow.compute as pc
import pytest
from aiohttp.test_utils import TestClient, TestServer

from spanrl.transitions import read_snapshot
from spanrl.ui import Lake, make_app
from spanrl.ui.auth import safe_next


@pytest.fixture(scope="module")
def lake(ui_data: Path) -> Lake:
    return Lake(ui_data)


def _with_client(lake: Lake, check: Callable[[TestClient], Awaitable[None]], token: str | None = None) -> None:
    async def main() -> None:
        async with TestClient(TestServer(make_app(lake.data, token, lake))) as client:
            await check(client)

    asyncio.run(main())


def _snapshot_rollouts(data: Path) -> dict[str, dict]:
    """Per rollout of the LATEST snapshot (written by the builder, not read through the app): task,
    final reward, calls with an AIR step reward. Every rollout of the test lake has a reward, so all
    are in it."""
    table, _ = read_snapshot(data)
    out: dict[str, dict] = {}
    for row in table.to_pylist():
        r = out.setdefault(row["rollout_id"], {"task": row["task_id"], "reward": row["final_reward"], "air": []})
        if row["step_reward"]:
            r["air"].append(row)
    return out


def test_every_page_renders_with_security_headers(lake: Lake) -> None:
    sid = lake.latest_snapshot_id()

    async def check(client: TestClient) -> None:
        for path in ("/rollouts", "/rollouts/ui-team", "/tasks", "/snapshots", f"/snapshots/{sid}", "/cycles", "/prompts",
                     "/sql"):
            resp = await client.get(path)
            assert resp.status == 200, (path, await resp.text())
            assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
            assert resp.headers["Server-Timing"].startswith("app;dur=")
            assert "http://" not in re.sub(r'href="http://[^"]*"', "", await resp.text()).replace("http://127", "")

    _with_client(lake, check)


def test_rollout_filters_match_the_lake(lake: Lake) -> None:
    truth = _snapshot_rollouts(lake.data)
    weather = {k for k, r in truth.items() if r["task"] == "weather"}
    air = {k for k, r in truth.items() if r["air"]}
    rewards = [r["reward"] for r in truth.values() if r["reward"] >= 0.5]
    high = (len(rewards), sum(rewards) / len(rewards))
    assert weather and air

    async def check(client: TestClient) -> None:
        body = await (await client.get("/api/rollouts?task=weather")).json()
        assert {r["rollout_id"] for r in body["rows"]} == weather
        body = await (await client.get("/api/rollouts?air=yes")).json()
        assert {r["rollout_id"] for r in body["rows"]} == air
        body = await (await client.get("/api/rollouts?reward_min=0.5&sort=reward&dir=asc")).json()
        assert body["total"] == high[0] and body["reward_mean"] == pytest.approx(high[1])
        assert [r["final_reward"] for r in body["rows"]] == sorted(r["final_reward"] for r in body["rows"])
        body = await (await client.get("/api/rollouts?cycle=2")).json()  # cycle 2 trained on LATEST
        assert body["total"] == len(truth)
        resp = await client.get("/rollouts?reward_min=lots")
        assert resp.status == 400 and "reward_min=&#39;lots&#39; is not a number" in await resp.text()
        assert (await client.get("/rollouts?since=2000-01-01T00:00&until=2000-01-02")).status == 200
        body = await (await client.get("/api/rollouts?until=2000-01-02")).json()
        assert body["total"] == 0
        body = await (await client.get("/api/rollouts?task=weather&page=99")).json()  # past the last page
        assert body["rows"] == [] and body["total"] == len(weather)

    _with_client(lake, check)


def test_snapshot_filter_follows_each_snapshot_when_bits_are_reused(ui_data: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot filter marks the snapshot's rollouts in a bit of the held summary; with one bit to
    share (MEMBER_SETS = 1), switching between two snapshots must re-mark, never mix them."""
    import shutil

    from spanrl.transitions.snapshot import write_snapshot
    from spanrl.ui import data as ui_data_module

    data = tmp_path / "data"
    shutil.copytree(ui_data, data)
    table, _ = read_snapshot(data)
    old = read_snapshot(data)[1]["snapshot_id"]
    weather = table.filter(pc.equal(table["task_id"], "weather"))
    new = write_snapshot(data, weather).name
    monkeypatch.setattr(ui_data_module, "MEMBER_SETS", 1)
    lake = Lake(data)
    every, some = set(table["rollout_id"].to_pylist()), set(weather["rollout_id"].to_pylist())
    assert some < every

    async def check(client: TestClient) -> None:
        for sid, expected in ((old, every), (new, some), (old, every), (new, some)):
            body = await (await client.get(f"/api/rollouts?snapshot={sid}")).json()
            assert {r["rollout_id"] for r in body["rows"]} == expected, sid

    _with_client(lake, check)


def test_rollout_page_shows_air_hit_and_advantages(lake: Lake) -> None:
    [step] = _snapshot_rollouts(lake.data)["ui-tool-error"]["air"]
    _, manifest = read_snapshot(lake.data)
    assert manifest["stats"]["air_hits_by_rule"] == {"tool_error": 1}

    async def check(client: TestClient) -> None:
        html = await (await client.get("/rollouts/ui-tool-error")).text()
        call = html.split(f'id="call-{step["span_id"]}"')[1].split("</li>")[0]
        assert "AIR tool_error" in call and "rule <strong>tool_error</strong>" in call
        assert f'advantage <span class="adv">{step["advantage"]:.3f}</span>' in call
        assert f"step reward {step['step_reward']:.3f}" in call
        assert 'class="badge err"' in html  # the failed tool span is marked in the timeline
        engine = await (await client.get("/rollouts/ui-engine")).text()
        assert "captured (3 prompt, 2 response)" in engine
        assert (await client.get("/rollouts/no-such-rollout")).status == 404

    _with_client(lake, check)


def test_sql_box_reads_and_refuses_writes(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        html = await (await client.get("/sql", params={"q": "select count(*) AS n from rollouts"})).text()
        assert 'id="sql-result"' in html
        for stmt in ("delete from spans", "attach '/tmp/x.db'", "copy spans to '/tmp/x.csv'",
                     "set enable_external_access = true"):
            resp = await client.get("/sql", params={"q": stmt})
            assert resp.status == 400 and "read-only" in await resp.text(), stmt
        resp = await client.get("/sql", params={"q": "select * from read_csv('/etc/passwd')"})
        assert resp.status == 400 and "read-only" in await resp.text()  # the connection opens no file
        html = await (await client.get("/sql")).text()
        assert "Tokens per model per day" in html  # the examples of docs/queries.md

    _with_client(lake, check)


def test_token_login_cookie_and_bearer(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        resp = await client.get("/rollouts?task=weather", allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"].startswith("/login?next=")
        assert (await client.get("/api/rollouts")).status == 401
        resp = await client.post("/login", data={"token": "wrong", "next": "/tasks"}, allow_redirects=False)
        assert resp.status == 401
        resp = await client.post("/login", data={"token": "s3cret", "next": "//evil.example/x"}, allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"] == "/"
        cookie = resp.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "s3cret" not in cookie
        assert (await client.get("/tasks")).status == 200  # the cookie jar holds the session now
        client.session.cookie_jar.clear()
        assert (await client.get("/api/rollouts", headers={"Authorization": "Bearer s3cret"})).status == 200
        assert (await client.get("/api/rollouts", headers={"Authorization": "Bearer nope"})).status == 401

    _with_client(lake, check, token="s3cret")
    assert safe_next("https://evil.example") == "/" and safe_next("/rollouts?task=a") == "/rollouts?task=a"


def test_text_search_finds_messages_and_reports_progress(lake: Lake) -> None:
    async def check(client: TestClient) -> None:
        await client.get("/rollouts", params={"q": "PENGUIN"})
        for _ in range(600):
            status = await (await client.get("/api/search", params={"q": "PENGUIN"})).json()
            if status["state"] != "running":
                break
            await asyncio.sleep(0.05)
        assert status["state"] == "done" and status["progress"] == 1.0
        body = await (await client.get("/api/rollouts", params={"q": "PENGUIN"})).json()
        assert [r["rollout_id"] for r in body["rows"]] == ["ui-single-0"]

    _with_client(lake, check)


def test_search_cancel_interrupts_a_running_search(tmp_path: Path) -> None:
    import sys
    import threading
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from ui_lake import write_lake

    from spanrl.ui.search import Searches

    write_lake(tmp_path, 20_000)
    searches = Searches(tmp_path, chunks=2000)  # many small slices: still running when cancelled
    job = searches.get("question 19999.3", ("v",))
    while job.done_chunks < 1 and job.state == "running":
        time.sleep(0.01)
    job.cancel()
    while job.state == "running":
        time.sleep(0.01)
    assert job.state == "cancelled" and 0 < job.progress < 1
    again = searches.get("question 19999.3", ("v",))  # asked again: a new job
    assert again is not job
    searches.cancel_all()  # what the server does on shutdown: cancel, then join every search thread
    assert again.state in ("cancelled", "done")
    assert not [th for th in threading.enumerate() if th.name.startswith("search ")]


def test_snapshot_page_rows_match_the_snapshot(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """The single-snapshot page (index-paged: digests for the page, rows for its rollouts only) shows
    every rollout once, across pages, with the counts the snapshot reader gives."""
    from spanrl.ui import pages

    sid = lake.latest_snapshot_id()
    table, _ = read_snapshot(lake.data, sid)
    truth: dict[str, dict] = {}
    for row in table.to_pylist():
        t = truth.setdefault(row["rollout_id"], {"task_id": row["task_id"], "final_reward": row["final_reward"],
                                                 "calls": 0, "air_steps": 0, "advs": [], "engine_calls": 0})
        t["calls"] += 1
        t["air_steps"] += bool(row["step_reward"])
        t["advs"].append(row["advantage"])
        t["engine_calls"] += row["token_source"] == "engine"
    assert len(truth) >= 3
    monkeypatch.setattr(pages, "PER_PAGE", 2)
    seen: list[str] = []
    first = pages.snapshot_view(lake, sid, 1)
    assert first["total"] == len(truth) and first["pages"] == -(-len(truth) // 2)
    for page in range(1, first["pages"] + 1):
        for r in pages.snapshot_view(lake, sid, page)["rows"]:
            t = truth[r["rollout_id"]]
            assert (r["task_id"], r["final_reward"], r["calls"], r["air_steps"], r["engine_calls"]) == (
                t["task_id"], t["final_reward"], t["calls"], t["air_steps"], t["engine_calls"])
            assert r["adv_min"] == pytest.approx(min(t["advs"])) and r["adv_max"] == pytest.approx(max(t["advs"]))
            seen.append(r["rollout_id"])
    assert seen == sorted(truth)


def test_a_lake_no_build_has_materialised_is_served_too(ui_data: Path, tmp_path: Path) -> None:
    """Only stage 1 ran (`spanrl ingest --no-transitions`): the connection computes the stage-2
    relations itself (temp tables shadowing the lake's call views) and the pages read them."""
    import shutil

    from tests.ui.conftest import PLAN

    data = tmp_path / "data"
    shutil.copytree(ui_data / "lake", data / "lake")
    fresh = Lake(data)

    async def check(client: TestClient) -> None:
        resp = await client.get("/rollouts")
        assert resp.status == 200, await resp.text()
        page = await resp.text()
        assert all(p["rollout_id"] in page for p in PLAN)
        resp = await client.get("/rollouts/ui-team")
        assert resp.status == 200 and "ui-team" in await resp.text()

    _with_client(fresh, check)
