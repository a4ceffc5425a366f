"""``spanrl ui`` in a real browser: Playwright for Python driving the system Chromium.

The server runs as the real command (``spanrl ui --data ... --port ...``) over the lake of
``conftest.py``. Every request the page makes is routed through a check that fails the test on any
host other than this server. Skipped, with the reason, when no Chromium is installed (``.ci/run``
installs it: ``apt-get install -y chromium``; Playwright's own browser download is never used).

Screenshots go to a temp folder; ``SPANRL_UI_SCREENSHOTS=1`` writes them to docs/ (the README's).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = next((p for p in (os.environ.get("SPANRL_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), "/usr/bin/chromium") if p and Path(p).is_file()), None)
# the advantage shown is a signed decimal (its value is checked against the snapshot in test_app.py)
ADVANTAGE = re.compile(r"^-?\d+\.\d{3}$")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

try:
    from playwright.sync_api import Page, Route, expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="browser tests need Chromium (apt-get install -y chromium; .ci/run installs it) and the playwright "
           "package (pip install -e '.[dev]')",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(ui_data: Path) -> Iterator[str]:
    """``spanrl ui`` as a process; yields its base URL."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spanrl", "ui", "--data", str(ui_data), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()  # printed once the socket listens
    assert "http://127.0.0.1:" in line, proc.stderr.read()[-3000:] if proc.poll() is not None else line
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server: str) -> Iterator[Page]:
    """A fresh page whose every request must go to the server; anything else aborts and fails the test."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    outside: list[str] = []
    here = urlparse(server).netloc

    def guard(route: Route) -> None:
        url = route.request.url
        if urlparse(url).netloc == here or url.startswith(("data:", "about:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", guard)
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    yield pg
    context.close()
    assert not outside, f"pages requested other hosts: {outside}"


def _shot(page: Page, name: str, tmp_path: Path) -> None:
    folder = ROOT / "docs" if os.environ.get("SPANRL_UI_SCREENSHOTS") else tmp_path
    page.screenshot(path=str(folder / name), full_page=False)


def test_click_through(page: Page, server: str, tmp_path: Path) -> None:
    page.goto(f"{server}/rollouts")
    page.select_option("#f-task", "weather")
    page.click("#f-apply")
    expect(page).to_have_url(f"{server}/rollouts?task=weather")
    expect(page.locator("#summary")).to_contain_text("2 rollout(s) match")
    page.select_option("#f-air", "yes")
    page.click("#f-apply")
    expect(page.locator("#rollouts tbody tr")).to_have_count(1)
    _shot(page, "ui-rollouts.png", tmp_path)
    page.click("text=ui-tool-error")
    expect(page.locator("h1")).to_contain_text("ui-tool-error")
    call = page.locator("li.step", has_text="AIR tool_error")
    expect(call).to_have_count(1)
    expect(call.locator(".air-hit")).to_be_visible()  # inline in the thread, no click needed
    expect(call.locator(".air-hit")).to_contain_text("rule tool_error")
    expect(call.locator(".step-head .adv")).to_have_text(ADVANTAGE)
    expect(call).to_contain_text("tool run")
    prompt = call.locator("details.call")
    expect(prompt.locator(".facts")).not_to_be_visible()
    prompt.locator("summary").click()
    expect(prompt.locator(".facts")).to_be_visible()
    expect(page.locator("#timeline .badge.err")).to_have_count(1)
    call.scroll_into_view_if_needed()
    _shot(page, "ui-rollout.png", tmp_path)
    # deep links open their target (ui.js): an in-page click and a fresh load of a #span-… URL
    raw = call.locator(".toolrun a").first
    span_id = raw.get_attribute("href").removeprefix("#")
    raw.click()
    expect(page.locator(f"details#{span_id}")).to_have_attribute("open", "")
    page.goto(f"{page.url.split('#')[0]}#{span_id}")
    page.reload()
    expect(page.locator(f"details#{span_id}")).to_have_attribute("open", "")
    expect(page.locator(f"details#{span_id} pre").first).to_be_in_viewport()

    page.click("nav >> text=Training cycles")
    chart = page.locator("#charts svg.chart").first
    expect(chart).to_be_visible()
    expect(chart.locator("circle")).to_have_count(6)  # 3 policies x (training, held-out)
    _shot(page, "ui-cycles.png", tmp_path)

    page.click("nav >> text=SQL")
    page.fill("#sql-box", "select task_id, count(*) as n from rollouts group by 1 order by 1")
    page.click("#sql-run")
    expect(page.locator("#sql-result")).to_contain_text("weather")
    page.fill("#sql-box", "drop view rollouts")
    page.click("#sql-run")
    expect(page.locator("#sql-error")).to_contain_text("read-only")


def test_keyboard_only_path(page: Page, server: str) -> None:
    page.goto(f"{server}/rollouts")

    def tab_to(predicate: str, limit: int = 80) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate(f"(() => {{ const e = document.activeElement; return !!e && ({predicate}); }})()"):
                return
        raise AssertionError(f"Tab never reached an element where {predicate}")

    tab_to("e.classList.contains('skip')")
    page.keyboard.press("Enter")
    tab_to("e.id === 'f-task'")
    page.keyboard.press("End")  # the last task in the list, chosen without a mouse
    chosen = page.eval_on_selector("#f-task", "e => e.value")
    assert chosen
    tab_to("e.id === 'f-apply'")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/rollouts?task={chosen}")
    tab_to("e.closest('#rollouts tbody') && e.getAttribute('href').startsWith('/rollouts/')")
    page.keyboard.press("Enter")
    page.wait_for_url("**/rollouts/*")
    tab_to("e.tagName === 'SUMMARY' && e.parentElement.classList.contains('call')")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.parentElement.open")
    for label, url in (("Tasks", "/tasks"), ("Snapshots", "/snapshots"), ("Training cycles", "/cycles"), ("SQL", "/sql")):
        tab_to(f"e.closest('nav') && e.textContent.trim() === {label!r}", limit=400)
        page.keyboard.press("Enter")
        page.wait_for_url(f"**{url}")
    tab_to("e.id === 'sql-box'")
    page.keyboard.type("select count(*) as n from spans")
    page.keyboard.press("Control+Enter")  # ui.js submits the box; without it the key only adds a line
    page.wait_for_url("**/sql?q=*")
    expect(page.locator("#sql-result")).to_be_visible()


def test_search_progress_and_every_page_stays_local(page: Page, server: str) -> None:
    page.goto(f"{server}/rollouts?q=penguin")
    expect(page.locator("#rollouts tbody tr")).to_have_count(1, timeout=60_000)  # polled, then reloaded
    expect(page.locator("#rollouts")).to_contain_text("ui-single-0")
    for path in ("/tasks", "/snapshots", "/cycles", "/sql", "/rollouts/ui-team"):
        page.goto(f"{server}{path}")
        expect(page.locator("main h1")).to_be_visible()
    page.click("nav >> text=Snapshots")
    page.locator("#snapshots a").first.click()
    expect(page.locator("#air-rules")).to_contain_text("tool_error")


def test_cycles_gate_snapshot_facts_and_a_420px_screen(page: Page, server: str) -> None:
    """Issue 31: the validation reward and the gate's decisions on the cycles page, a reward axis
    within 0..1, a cycle's link to its rollouts; a snapshot's facts in words with the raw manifest
    one click away; at 420 px no page scrolls sideways (the navigation wraps)."""
    page.goto(f"{server}/cycles")
    gate = page.locator("#charts svg[aria-label='validation reward and the promotion gate']")
    expect(gate.locator("circle.s0")).to_have_count(2)  # the policy's validation reward, cycles 0 and 1
    expect(gate.locator("circle.s1")).to_have_count(1)  # promoted (cycle 0)
    expect(gate.locator("circle.s2")).to_have_count(1)  # kept (cycle 1)
    expect(page.locator("#cycle-1 td.gate")).to_have_text("kept (no difference)")
    expect(page.locator("#cycle-0 td.gate")).to_have_text("promoted")
    ticks = page.locator("#charts svg.chart").first.locator("text.tick").all_text_contents()
    values = [float(t) for t in ticks[: len(ticks) - 3]]  # y ticks; the last three are the cycle numbers
    assert values and 0.0 <= min(values) and max(values) <= 1.0, values
    page.locator("#cycle-0 td a").first.click()
    expect(page).to_have_url(f"{server}/rollouts?cycle=1")
    expect(page.locator("#rollouts tbody tr").first).to_be_visible()

    page.goto(f"{server}/snapshots")
    page.locator("#snapshots a").first.click()
    facts = page.locator("#facts")
    expect(facts).to_contain_text("transitions")
    expect(facts).to_contain_text(re.compile(r"spans from\s*\d{4}-\d\d-\d\d .* UTC"))
    raw = page.locator("#raw-manifest pre")
    expect(raw).not_to_be_visible()
    page.locator("#raw-manifest summary").click()
    expect(raw).to_contain_text('"snapshot_id"')
    assert "_ns" not in page.locator("#diff").inner_text()  # times are facts, not counts

    page.set_viewport_size({"width": 420, "height": 800})
    for path in ("/rollouts", "/rollouts/ui-team", "/tasks", "/snapshots", "/cycles", "/sql", "/no-such-page"):
        page.goto(f"{server}{path}")
        expect(page.locator("nav[aria-label='main'] >> text=SQL")).to_be_in_viewport()
        wide = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert wide[0] <= wide[1], f"{path} scrolls sideways at 420 px: {wide}"
