"""End to end in real headless Chromium: open the app, ask a question, see a highlighted span."""
import os
from pathlib import Path

import pytest

from browser import CHROMIUM, launch_chromium, serve_app

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


def test_browser_asks_and_sees_highlighted_span(tiny_registry):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    with serve_app({"QAX_MODELS_TOML": str(tiny_registry)}) as url, launch_chromium() as browser:
        page = browser.new_page()
        page.goto(url + "/")  # open / first: app.py builds navigation and state
        page.get_by_text("Ask", exact=True).first.wait_for(timeout=60_000)
        question = page.locator('textarea[aria-label="Question"]')
        question.wait_for(timeout=60_000)
        question.fill("what is the capital of france ?")
        page.get_by_role("button", name="Answer").click()
        mark = page.locator("div.qax-context mark.qax-span").first
        mark.wait_for(timeout=90_000)
        assert mark.inner_text().strip()
        assert "tiny-a" in (mark.get_attribute("title") or "")
        page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_ask.png"), full_page=True)
