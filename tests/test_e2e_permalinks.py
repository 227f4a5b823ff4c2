"""End to end in real headless Chromium: a view's copy-link address, opened in a fresh browser
context (no cookies, no session), shows the same view.

Ask: an XQuAD-en item answered by two shipped models; the fresh context sees the same item,
question, models and the same answer spans. Heatmaps: a cell of a small sweep (the hand-computed
toy sweep of tests/test_app_heatmaps.py, in a temporary database named by QAX_SWEEP_DB) and its
drill-down. Gallery: a flip, opened on its tab. The link box's button label is checked whole at
800 px.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from browser import CHROMIUM, click_settled, launch_chromium, serve_app
from playwright.sync_api import expect
from test_app_heatmaps import build_sweep

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.e2e, pytest.mark.needs_data("xquad/xquad.en.json")]


def _spans(page) -> list[tuple[str, str]]:
    """Every marked span in the context: (its text, the models it belongs to)."""
    marks = page.locator("div.qax-context mark.qax-span")
    marks.first.wait_for(timeout=180_000)
    return sorted((m.inner_text(), m.get_attribute("title") or "") for m in marks.all())


def _link(page) -> str:
    box = page.locator(".qax-link input")
    box.first.wait_for(timeout=60_000)
    return box.first.input_value()


def _label_whole(page) -> None:
    """The link button's label is not cut: the button is as wide as its text and on screen."""
    button = page.locator(".qax-link button").first
    button.wait_for(timeout=60_000)
    fits = button.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && b.getBoundingClientRect().right "
                           "<= window.innerWidth")
    assert fits, button.evaluate("b => [b.scrollWidth, b.clientWidth, b.getBoundingClientRect().right]")


def test_permalinks_reopen_ask_and_a_heatmap_cell_in_a_fresh_browser(tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    with serve_app({"QAX_SWEEP_DB": str(db)}) as url, launch_chromium() as browser:
        # ---- Ask: XQuAD-en item 5, two models, answered
        first = browser.new_context(viewport={"width": 1400, "height": 1400})
        first.grant_permissions(["clipboard-read", "clipboard-write"])
        page = first.new_page()
        page.goto(url + "/")
        page.locator('textarea[aria-label="Question"]').wait_for(timeout=90_000)
        box = page.get_by_role("combobox", name="Dataset").first
        box.click()
        box.press_sequentially("xquad/xquad.en")
        page.get_by_role("option", name="xquad/xquad.en", exact=True).click()
        page.get_by_text("xquad.en · id").first.wait_for(timeout=90_000)
        item = page.get_by_role("spinbutton", name="Item")
        item.fill("5")
        item.press("Enter")
        page.get_by_role("button", name="Remove mpnet-squad-v2", exact=True).click()
        page.get_by_role("button", name="Remove mpnet-squad-v2", exact=True).wait_for(state="detached")
        click_settled(page.get_by_role("button", name="Answer", exact=True))
        spans = _spans(page)
        caption = page.get_by_text("xquad.en · id").first.inner_text()
        question = page.locator('textarea[aria-label="Question"]').input_value()
        tags = page.locator('[data-testid="stMultiSelect"]').first.locator("span[data-tag] > span")
        models = tags.all_inner_texts()
        assert models == ["e5-qa-multi", "minilm-squad-v2"]
        assert all(any(m in title for _, title in spans) for m in models)   # both models' spans are marked
        expect(page.locator(".qax-link input").first).to_have_value(re.compile("go=1"), timeout=60_000)
        link = _link(page)
        assert link.startswith(url + "/?v=1&") and "ds=xquad%2Fxquad.en" in link
        page.locator(".qax-link button").first.click()
        page.get_by_text("Copied").wait_for(timeout=10_000)
        assert page.evaluate("navigator.clipboard.readText()") == link
        first.close()

        fresh = browser.new_context(viewport={"width": 800, "height": 1400})
        again = fresh.new_page()
        again.goto(link)
        assert _spans(again) == spans
        assert again.get_by_text("Page not found").count() == 0
        assert again.get_by_text("xquad.en · id").first.inner_text() == caption
        expect(again.locator('textarea[aria-label="Question"]')).to_have_value(question, timeout=60_000)
        tags = again.locator('[data-testid="stMultiSelect"]').first.locator("span[data-tag] > span")
        assert tags.all_inner_texts() == models
        _label_whole(again)
        again.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_permalink_ask_800.png"), full_page=True)
        fresh.close()

        # ---- Heatmaps: the fake-a x TUQ cell, its largest loss (q4: "Berlin" against "three million")
        first = browser.new_context(viewport={"width": 1400, "height": 2400})
        page = first.new_page()
        page.goto(url + "/heatmaps")
        cells = page.locator(".js-plotly-plot g.trace.scatter").first.locator("path.point")
        cells.first.wait_for(timeout=90_000)
        page.get_by_text("fake-a under drop_qmark_Q").wait_for(timeout=30_000)
        cells.nth(1).click(force=True)
        page.get_by_text("fake-a under TUQ").wait_for(timeout=30_000)
        page.get_by_text("HOW MANY PEOPLE LIVE IN BERLIN?").filter(visible=True).first.wait_for(timeout=60_000)
        expect(page.locator(".qax-link input").first).to_have_value(re.compile("cell=TUQ"), timeout=60_000)
        link = _link(page)
        assert link.startswith(url + "/heatmaps?v=1&db=sweeps.sqlite&sweep=toy-sweep")
        assert str(tmp_path) not in link   # a store name, never the server's path
        first.close()

        fresh = browser.new_context(viewport={"width": 800, "height": 2400})
        again = fresh.new_page()
        again.goto(link)
        again.get_by_text("fake-a under TUQ").wait_for(timeout=90_000)
        again.get_by_text("HOW MANY PEOPLE LIVE IN BERLIN?").filter(visible=True).first.wait_for(timeout=60_000)
        marks = again.locator("div.qax-context mark.qax-span")
        marks.first.wait_for(timeout=60_000)
        assert sorted(m.inner_text() for m in marks.all()) == ["Berlin", "three million"]
        _label_whole(again)
        again.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_permalink_heatmap_800.png"), full_page=True)

        # ---- Gallery: a flip's link opens its tab with that example first
        again.goto(url + "/gallery")
        flips = again.get_by_role("tab", name=re.compile("One keystroke flips the answer"))
        flips.wait_for(timeout=90_000)
        flips.click()
        box = again.locator(".qax-link input").nth(0)
        expect(box).to_have_value(re.compile("kind=flip"), timeout=60_000)
        link = box.input_value()
        assert link.startswith(url + "/gallery?v=1&db=sweeps.sqlite&sweep=toy-sweep&kind=flip&id=")
        other = browser.new_context(viewport={"width": 800, "height": 1400})
        gallery = other.new_page()
        gallery.goto(link)
        gallery.get_by_text("The example this link names").wait_for(timeout=90_000)
        expect(gallery.get_by_role("tab", name=re.compile("One keystroke flips the answer"))).to_have_attribute(
            "aria-selected", "true")
        _label_whole(gallery)
        other.close()

        # ---- a hostile link: one clear line, no traceback, the page still works
        again.goto(url + "/heatmaps?v=1&db=..%2F..%2Fetc%2Fpasswd&sweep=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        again.get_by_text("This link cannot be opened").wait_for(timeout=60_000)
        assert again.locator("text=Traceback").count() == 0
        again.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        fresh.close()
