"""End to end in real headless Chromium with the shipped model: open the app, ask a question,
see the model's real answer highlighted in the context."""
import os
from pathlib import Path

import pytest
from browser import CHROMIUM, launch_chromium, serve_app

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


def test_browser_asks_and_sees_highlighted_span():
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    with serve_app() as url, launch_chromium() as browser:  # the default registry: shipped models
        page = browser.new_page()
        page.goto(url + "/")  # open / first: app.py builds navigation and state
        question = page.locator('textarea[aria-label="Question"]')
        question.wait_for(timeout=90_000)
        # demo.en item 0 (written for this project): "When was Carrow Point Lighthouse first lit?"
        question.fill("When was Carrow Point Lighthouse first lit?")
        page.get_by_role("button", name="Answer", exact=True).click()
        marks = page.locator("div.qax-context mark.qax-span")
        marks.first.wait_for(timeout=120_000)
        highlighted = "".join(marks.all_inner_texts())
        assert highlighted == "14 October 1871"
        assert "minilm-squad" in (marks.first.get_attribute("title") or "")
        page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_ask.png"), full_page=True)
