"""End to end in real headless Chromium: Beat the AI's per-browser identity (issue 23, item 4).

A first visit stores a random token in the ``qax_browser`` cookie; a reload sends it back and the
server uses it (no cookie-writing snippet is rendered again). A question written in one browser
is not offered for validation in that browser under another name, and is offered in another
browser.
"""
import os
import re
import time

import pytest
from browser import CHROMIUM, launch_chromium, note_page, open_tab, serve_app

from core.collect import beat, beat_store, identity
from core.datasets import demo_dataset

pytestmark = pytest.mark.e2e

NOTE = "Names are not authentication"


def _open_beat(page, url):
    page.goto(url + "/beat_the_ai")
    page.get_by_role("tab", name="Setup: name, data set, models").click(timeout=180_000)   # the name is set up there
    page.get_by_text(NOTE).wait_for(timeout=180_000)


def _snippets(page) -> int:
    """Frames that hold the cookie-writing script."""
    n = 0
    for frame in page.frames[1:]:
        try:
            n += identity.TOKEN_COOKIE in frame.content()
        except Exception:  # a frame navigating away while read
            pass
    return n


def _validate_as(page, name: str) -> None:
    open_tab(page, "Setup: name, data set, models")
    box = page.get_by_role("textbox", name="Your name")
    box.fill(name)
    box.press("Enter")
    open_tab(page, "Validate")


def test_browser_token_persists_and_guards_self_validation(tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    db = tmp_path / "beat.sqlite"
    env = {"QAX_BEAT_DB": str(db), "QAX_CACHE_DIR": str(tmp_path / "cache")}
    with serve_app(env) as url, launch_chromium() as browser:
        mine = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = mine.new_page()
        _open_beat(page, url)
        deadline = time.time() + 30
        while not [c for c in mine.cookies() if c["name"] == identity.TOKEN_COOKIE]:
            assert time.time() < deadline, "the token cookie was never set"
            time.sleep(0.5)
        [cookie] = [c for c in mine.cookies() if c["name"] == identity.TOKEN_COOKIE]
        token = cookie["value"]
        assert identity.valid_token(token) and cookie["sameSite"] == "Strict"
        assert _snippets(page) == 1

        # A question written in this browser (as the store sees it: the cookie's token).
        with beat_store.BeatStore(db) as store:
            store.record_attempt(beat.passages(demo_dataset("en"))[0], "When was it lit?",
                                 (112, 127), {"m": None}, user="Alice", session="s",
                                 browser=token)

        page.reload()
        page.get_by_role("tab", name="Setup: name, data set, models").click(timeout=180_000)
        page.get_by_text(NOTE).wait_for(timeout=180_000)
        time.sleep(2)
        assert [c["value"] for c in mine.cookies() if c["name"] == identity.TOKEN_COOKIE] == [token]
        assert _snippets(page) == 0  # the server read the cookie: nothing to write
        _validate_as(page, "Mallory")  # another name, same browser
        page.get_by_text("Nothing to validate").wait_for(timeout=60_000)

        other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        _open_beat(other, url)
        _validate_as(other, "Mallory")
        try:
            other.get_by_text(re.compile(r"Question to validate \(1 waiting\)")).wait_for(timeout=60_000)
        except Exception as failed:
            note_page(failed, other)
            raise
