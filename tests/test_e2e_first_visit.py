"""A fresh server's first visitor opens a page by its address, in real headless Chromium.

Streamlit starts in its old ``pages/`` directory mode and stays there until app.py's
``st.navigation`` has run once: a first visit straight to ``/models`` used to run
``pages/models.py`` on its own, under a sidebar of file names ("app", "ask", "beat the ai", ...).
"""
from __future__ import annotations

import os

import pytest
from browser import CHROMIUM, launch_chromium, serve_app

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("path, title", [("models", "Models"), ("heatmaps", "Heatmaps")])
def test_a_first_visit_to_a_page_address_gets_the_app_navigation(path, title):
    assert os.path.exists(CHROMIUM), "Debian chromium is required"
    with serve_app() as url, launch_chromium() as browser:   # a new server: no script has run
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/{path}")
        page.locator("h1").filter(has_text=title).first.wait_for(timeout=90_000)
        nav = page.locator('[data-testid="stSidebarNav"]')
        nav.get_by_text("Behaviour tests").wait_for(timeout=30_000)
        text = nav.inner_text()
        assert "Speech trial" in text and "Beat the AI" in text
        assert "beat the ai" not in text and "speech trial" not in text   # no file-name entries
