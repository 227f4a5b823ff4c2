"""End to end in real headless Chromium, at 1400 and 800 px: Heatmaps' Rows tab on the toy sweep of
test_sweep_rows.py. Filter the table, select a row in the grid, pin two rows (side by side at 1400
px, one under the other at 800 px), then open a row on Ask and see its question and passage there.
"""
from __future__ import annotations

import os

import pytest
from browser import CHROMIUM, ROOT, click_settled, launch_chromium, serve_app
from test_sweep_rows import build_rows_sweep

pytestmark = pytest.mark.e2e

# labels of widgets and buttons wider than their box (Streamlit cuts them with an ellipsis)
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"], '
  + '[data-testid="stMain"] button, [data-testid="stMain"] [data-baseweb="select"] div[value]')]
  .filter(e => e.offsetParent !== null)
  .filter(e => [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1))
  .map(e => e.innerText.trim())"""
ROW_PX = 35   # glide-data-grid's row height in st.dataframe (the header is as tall)


def _click_grid_row(page, i: int) -> None:
    """Tick row ``i``'s selection box at the grid's left edge (the grid is a canvas)."""
    grid = page.locator('[data-testid="stDataFrame"]').filter(visible=True).first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + ROW_PX * (i + 1) + ROW_PX / 2)


@pytest.mark.parametrize("width", [1400, 800])
def test_filter_select_pin_two_and_open_on_ask(tmp_path, width):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    db = tmp_path / "sweeps.sqlite"
    build_rows_sweep(db)
    with serve_app({"QAX_SWEEP_DB": str(db)}) as url, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 1400})
        page.goto(f"{url}/heatmaps")
        page.get_by_role("tab", name="Rows", exact=True).click(timeout=120_000)
        page.get_by_text("32 scored answers in the sweep").first.wait_for(timeout=60_000)

        # filter: the questions about Berlin whose answer changed (fake-a under TUQ and DCRQ x 2,
        # fake-b under DCRQ x 2; fake-b's TUQ answer stayed "three million")
        search = page.locator('input[aria-label="Search the rows"]')
        search.fill("berlin")
        search.press("Enter")
        page.get_by_text("of 6 rows that pass the filters").first.wait_for(timeout=60_000)
        # (click_settled: while the rerun redraws, the old radio can stay beside the new one)
        click_settled(page.get_by_role("radiogroup", name="Answer").get_by_text("changed", exact=True))
        page.get_by_text("of 5 rows that pass the filters").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)

        # select the first row in the grid: its drill-down, both models' answers marked in the passage
        _click_grid_row(page, 0)
        page.get_by_text("Row: q4 · fake-a · TUQ · r0").wait_for(timeout=60_000)
        marks = page.locator("div.qax-context mark.qax-span").filter(visible=True)
        marks.first.wait_for(timeout=30_000)
        assert sorted(m.inner_text() for m in marks.all()) == ["Berlin", "three million"]
        click_settled(page.get_by_role("button", name="Pin", exact=True))
        page.get_by_text("Pin one more row").wait_for(timeout=60_000)

        # a second row (fake-a under DCRQ n_chars=1), pinned: both cards, their answers marked
        page.wait_for_timeout(1000)
        _click_grid_row(page, 1)
        page.get_by_text("Row: q4 · fake-a · DCRQ(n_chars=1, n_words=1) · r0").wait_for(timeout=60_000)
        click_settled(page.get_by_role("button", name="Pin", exact=True))
        page.get_by_role("button", name="Unpin 2").wait_for(timeout=60_000)
        cards = page.locator("div.qax-pinned-card")
        assert cards.count() == 2
        assert "Answer: Berlin" in cards.nth(0).inner_text() and "Answer: ∅" in cards.nth(1).inner_text()
        one, two = cards.nth(0).bounding_box(), cards.nth(1).bounding_box()
        if width == 1400:   # side by side
            assert abs(one["y"] - two["y"]) < 2 and two["x"] >= one["x"] + one["width"]
        else:               # one under the other, each the column's width
            assert two["y"] >= one["y"] + one["height"] and abs(one["x"] - two["x"]) < 2
        for card in (one, two):
            assert card["x"] >= 0 and card["x"] + card["width"] <= width   # nothing cut at the edge
        page.screenshot(path=str(ROOT / ".pytest_cache" / f"e2e_rows_{width}.png"), full_page=True)
        assert page.evaluate(CUT_LABELS) == []

        # back to the first row, open it on Ask: its perturbed question with the passage pasted
        page.wait_for_timeout(1000)
        _click_grid_row(page, 0)
        page.get_by_text("Row: q4 · fake-a · TUQ · r0").wait_for(timeout=60_000)
        click_settled(page.get_by_role("button", name="Open in Ask", exact=True))
        question = page.locator('textarea[aria-label="Question"]')
        question.wait_for(timeout=90_000)
        assert question.input_value() == "HOW MANY PEOPLE LIVE IN BERLIN?"
        context = page.locator('textarea[aria-label="Context"]')
        assert context.input_value() == "Berlin has a population of three million people."
