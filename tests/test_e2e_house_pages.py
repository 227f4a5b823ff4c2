"""Issue 42 in real headless Chromium at 800 px: Heatmaps, whose sections now read one StoredSweep
handle each from components/heatmaps/, draws every tab of the toy sweep without an error or a cut
label; Models lists the declared metrics with their citations."""
from __future__ import annotations

import os

import pytest
from browser import CHROMIUM, launch_chromium, serve_app
from test_app_heatmaps import build_sweep
from test_e2e_first_minutes import CUT_LABELS

pytestmark = pytest.mark.e2e

ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'


def test_heatmaps_tabs_and_models_metrics_at_800_px(tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required"
    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    with serve_app({"QAX_SWEEP_DB": str(db)}) as url, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 800, "height": 1000})
        page.goto(url + "/")
        page.locator('textarea[aria-label="Question"]').wait_for(timeout=90_000)
        page.goto(f"{url}/heatmaps")
        page.locator(".js-plotly-plot g.trace.scatter path.point").first.wait_for(timeout=90_000)
        page.get_by_text("fake-a under drop_qmark_Q").wait_for(timeout=60_000)   # the drill-down's first cell
        seen = {}
        for tab, ready in [("Model vs model", "Model vs model: which differences are real?"),
                           ("Penalty by n", "Penalty by number of perturbed"),
                           ("DuReader-robust", "DuReader-robust: over-sensitivity"),
                           ("Slices & calibration", "Slices: where do the models lose?"),
                           ("Noise curves", "F1 against measured noise")]:
            page.get_by_role("tab", name=tab, exact=True).click()
            page.get_by_text(ready).first.wait_for(timeout=90_000)
            page.wait_for_timeout(1500)
            seen[tab] = (page.locator(ERRORS).count(), page.evaluate(CUT_LABELS))
        page.screenshot(path=str(tmp_path / "heatmaps_800.png"), full_page=True)
        assert seen == {tab: (0, []) for tab in seen}, seen

        page.goto(f"{url}/models")
        page.get_by_text("Which model for a language?").first.wait_for(timeout=90_000)
        page.get_by_text("Metrics: what each measures, and its sources").click()
        section = page.locator('[data-testid="stExpander"]').filter(has_text="Metrics: what each measures")
        section.get_by_role("button", name="CSV (metrics and sources)").wait_for(timeout=60_000)
        grid = section.locator('[data-testid="stDataFrame"]')
        grid.wait_for(timeout=30_000)   # the table is drawn on a canvas: its size, not its text, is checked
        box = grid.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 800 and box["height"] > 8 * 30, box
        assert page.locator(ERRORS).count() == 0 and page.evaluate(CUT_LABELS) == []
        section.screenshot(path=str(tmp_path / "models_metrics_800.png"))
