"""End to end in real headless Chromium: clicking a heatmap cell lists that cell's examples.

AppTest cannot click a Plotly point, and a go.Heatmap click reports nothing in Streamlit, which
is why the page draws square scatter markers; this test checks the click really arrives. The page
file is served on its own (``streamlit run pages/heatmaps.py``), so it does not depend on app.py's
navigation.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from browser import CHROMIUM, launch_chromium, serve
from test_app_heatmaps import build_sweep

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


def test_click_on_a_cell_shows_its_examples(tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    with serve("pages/heatmaps.py", {"QAX_SWEEP_DB": str(db)}) as server:
        with launch_chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(server.url + "/")
            cells = page.locator(".js-plotly-plot g.trace.scatter").first.locator("path.point")
            cells.first.wait_for(timeout=60_000)
            assert cells.count() == 10
            page.get_by_text("fake-a under drop_qmark_Q").wait_for(timeout=30_000)   # the first cell

            cells.nth(7).click(force=True)            # fake-b x RUQ
            page.get_by_text("fake-b under RUQ").wait_for(timeout=30_000)
            cells = page.locator(".js-plotly-plot g.trace.scatter").first.locator("path.point")
            cells.nth(1).click(force=True)            # fake-a x TUQ: largest loss q4, "Berlin" vs "three million"
            page.get_by_text("fake-a under TUQ").wait_for(timeout=30_000)
            # the data grid also holds the text in a hidden accessibility cell: wait for a visible one
            page.get_by_text("HOW MANY PEOPLE LIVE IN BERLIN?").filter(visible=True).first.wait_for(timeout=60_000)
            marks = page.locator("div.qax-context mark.qax-span")
            # the previous cell's example can still be on screen while the rerun draws this one
            deadline, want = time.monotonic() + 60, ["Berlin", "three million"]
            while sorted(m.inner_text() for m in marks.all()) != want and time.monotonic() < deadline:
                time.sleep(0.5)
            assert sorted(m.inner_text() for m in marks.all()) == want
            page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_heatmaps.png"))
