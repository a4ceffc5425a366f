"""The README's screenshots, taken from a real data root (the demo's) by `make screenshots`.

    python -m spanrl.ui.screenshots --data DATA --out docs

Starts ``spanrl ui`` on a free loopback port over DATA, drives the system Chromium with Playwright
(``pip install -e '.[dev]'``; Playwright's own browser download is never used) and writes
``ui-rollouts.png`` (the rollouts list), ``ui-rollout.png`` (the rollout with the most LLM calls,
as a conversation) and ``ui-cycles.png`` (the training cycles). Re-run it whenever the UI changes.
Nothing is faked: every picture is whatever DATA holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path


def chromium() -> str:
    """The system Chromium ($SPANRL_CHROMIUM, else chromium / chromium-browser on PATH)."""
    for path in (os.environ.get("SPANRL_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                 "/usr/bin/chromium"):
        if path and Path(path).is_file():
            return path
    raise SystemExit("screenshots: no Chromium found; apt-get install -y chromium (or set SPANRL_CHROMIUM)")


def busiest_rollout(base: str, page) -> str | None:  # noqa: ANN001 - a Playwright Page
    """The rollout id with the most LLM calls on the first page sorted by calls (the richest thread)."""
    page.goto(f"{base}/rollouts?sort=calls&dir=desc")
    link = page.locator("#rollouts tbody tr a").first
    return link.inner_text() if link.count() else None


def take(data: Path, out: Path, width: int = 1360, height: int = 900) -> list[Path]:
    """Start the UI over ``data``, write the three PNGs under ``out``; the paths written."""
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "spanrl", "ui", "--data", str(data), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    written: list[Path] = []
    try:
        line = proc.stdout.readline() if proc.stdout else ""  # printed once the socket listens
        if "http://" not in line:
            raise SystemExit(f"screenshots: spanrl ui did not start: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
        base = f"http://127.0.0.1:{port}"
        out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_context(viewport={"width": width, "height": height}).new_page()
            page.set_default_timeout(60_000)

            def shot(name: str) -> None:
                path = out / name
                page.screenshot(path=str(path), full_page=False)
                written.append(path)

            page.goto(f"{base}/rollouts")
            shot("ui-rollouts.png")
            rollout = busiest_rollout(base, page)
            if rollout:
                page.goto(f"{base}/rollouts/{rollout}")
                thread = page.locator("ol.thread")  # the conversation's first steps at the top of the picture
                if thread.count():
                    thread.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 60)")
                shot("ui-rollout.png")
            page.goto(f"{base}/cycles")
            shot("ui-cycles.png")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="data root to show (e.g. the quick demo's)")
    parser.add_argument("--out", type=Path, default=Path("docs"), help="folder for the PNGs [docs]")
    args = parser.parse_args()
    for path in take(args.data, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
