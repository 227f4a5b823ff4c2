"""End to end in real headless Chromium: Ask's attribution button colours every token per model."""
import os

import pytest
from browser import CHROMIUM, FIRST_ANSWER_MS, click_settled, launch_chromium, serve_app

pytestmark = pytest.mark.e2e


def test_browser_toggle_colours_question_and_context_tokens(tiny_registry):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    with serve_app({"QAX_MODELS_TOML": str(tiny_registry)}) as url, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url + "/")
        question = page.locator('textarea[aria-label="Question"]')
        question.wait_for(timeout=90_000)
        question.fill("When was Carrow Point Lighthouse <b>first</b> lit?")
        click_settled(page.get_by_role("button", name="Answer", exact=True))
        page.locator("div.qax-context mark.qax-span").first.wait_for(timeout=FIRST_ANSWER_MS)
        assert page.locator("div.qax-attr").count() == 0
        click_settled(page.get_by_role("button", name="Colour tokens by attribution (why this span?)"))
        coloured = page.locator("div.qax-attr")
        coloured.nth(1).wait_for(timeout=120_000)
        assert coloured.count() == 2                       # question and context of tiny-a, picked by default
        first = coloured.nth(0)
        assert first.inner_text() == "When was Carrow Point Lighthouse <b>first</b> lit?"   # shown as text
        assert first.locator("b").count() == 0
        tokens = first.locator("span[title]")
        assert tokens.count() >= 8
        assert "start" in tokens.first.get_attribute("title") and "end" in tokens.first.get_attribute("title")
