"""`make screenshots` (ui/screenshots.py): three PNGs of a real data root, taken with the system Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.test_browser import CHROMIUM, sync_playwright


@pytest.mark.skipif(CHROMIUM is None or sync_playwright is None, reason="needs Chromium and playwright (see test_browser.py)")
def test_screenshots_of_a_data_root(ui_data: Path, tmp_path: Path) -> None:
    from spanrl.ui.screenshots import take

    written = take(ui_data, tmp_path / "docs", width=900, height=600)
    assert [p.name for p in written] == ["ui-rollouts.png", "ui-rollout.png", "ui-cycles.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000, path
