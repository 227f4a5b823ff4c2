"""End to end in real headless Chromium: text a hostile visitor controls never makes a browser
fetch a URL or shows a link.

A local HTTP server on 127.0.0.1 counts every request it gets. A dataset (uploaded through the
page), a stored Beat-the-AI attempt and a stored sweep all carry Markdown images, links, raw HTML
and bare URLs pointing at it, in a question, a question id (with a backtick), a title, a context
and an answer. One browser session walks every page that shows them: Ask (caption, answers,
highlighted passage, gold), Variants, Beat the AI (play, validation view, disagreements list),
and the Heatmaps drill-down. The counting server must see zero requests, and no page may hold an
``<a>`` or ``<img>`` pointing at it; the hostile text must still be shown, literally.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import threading
from pathlib import Path

import pytest
from browser import CHROMIUM, FIRST_ANSWER_MS, click_settled, launch_chromium, open_tab, serve_app

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / ".pytest_cache"

pytestmark = pytest.mark.e2e


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def counting_server():
    _Counter.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], _Counter.hits
    finally:
        server.shutdown()
        server.server_close()


def _payload(port: int, tag: str) -> str:
    host = f"127.0.0.1:{port}"
    return (f"![px](http://{host}/{tag}-image.png) [click me](http://{host}/{tag}-link) "
            f"<img src='http://{host}/{tag}-raw.png'> http://{host}/{tag}-bare www.example.com `tick")


def _evil_dataset(port: int) -> dict:
    context = ("The lighthouse at Carrow Point was first lit in 1871 by Margaret Ellison. "
               + _payload(port, "context"))
    return {"version": "1.1", "data": [{
        "title": "Title " + _payload(port, "title"),
        "paragraphs": [{"context": context, "qas": [{
            "id": "id`" + _payload(port, "id"),
            "question": "Who first lit the lighthouse? " + _payload(port, "question"),
            "answers": [{"text": "Margaret Ellison", "answer_start": context.index("Margaret Ellison")}],
        }]}],
    }]}


def _no_fetchable_elements(page, port: int) -> None:
    found = page.evaluate(
        "port => [...document.querySelectorAll('a[href], img[src], [src]')]"
        ".map(e => e.getAttribute('href') || e.getAttribute('src'))"
        ".filter(u => u && (u.includes(':' + port) || u.includes('example.com')))", port)
    where = [] if not found else page.evaluate(
        "port => [...document.querySelectorAll('a[href], img[src]')]"
        ".filter(e => (e.getAttribute('href') || e.getAttribute('src') || '').includes(':' + port))"
        ".map(e => e.parentElement.outerHTML.slice(0, 300))", port)
    assert found == [], (found, where)


def _wait_visible(page, text: str, timeout: int) -> None:
    """Wait until ``text`` is on screen (a hidden tab holds copies of some lines)."""
    page.get_by_text(text, exact=False).filter(visible=True).first.wait_for(timeout=timeout)


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in a Streamlit selectbox: type to filter (long lists are virtualised)."""
    box = page.get_by_role("combobox", name=label).first
    box.click()
    box.press_sequentially(option)
    page.get_by_role("option", name=option).first.click()
    # The list must be closed again: once, under CI's load, it stayed open after the choice (the
    # upload's rerun redrew the box with its new option while it was open), and an open list hides
    # the rest of the page from the accessibility tree, so Ask's Answer button was never found.
    listbox = page.get_by_role("listbox")
    try:
        listbox.first.wait_for(state="hidden", timeout=10_000)
    except Exception:
        page.keyboard.press("Escape")
        listbox.first.wait_for(state="hidden", timeout=10_000)


def test_hostile_text_causes_no_request_on_any_page(counting_server, tiny_registry, tmp_path):
    from core.collect import beat, beat_store
    from core.datasets import load_squad
    from core.perturb.spec import parse_specs
    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep

    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    port, hits = counting_server
    upload = tmp_path / "evil.json"
    upload.write_text(json.dumps(_evil_dataset(port)), encoding="utf-8")
    ds = load_squad(upload, name="evil")

    # A stored Beat-the-AI attempt by another visitor (the models gave no answer: the human won),
    # and a second one that a validator disagreed with (the disagreements list).
    beat_db = tmp_path / "beat.sqlite"
    [passage] = beat.passages(ds)
    start = passage.context.index("Margaret")
    with beat_store.BeatStore(beat_db) as store:
        store.record_attempt(passage, "Stored " + _payload(port, "attempt"), (start, start + 16),
                             {"tiny-a": None}, user="mallory " + _payload(port, "user"), session="s1",
                             browser="browser-of-mallory")
        flagged = store.record_attempt(passage, "Flagged " + _payload(port, "flagged"), (start, start + 8),
                                       {"tiny-a": None}, user="mallory", session="s1",
                                       browser="browser-of-mallory")
        store.record_validation(flagged.id, "victor", None, session="s2", browser="browser-of-victor")

    # A stored sweep over the hostile dataset (the Heatmaps drill-down shows its questions).
    sweep_db = tmp_path / "sweeps.sqlite"
    registry_path = str(tiny_registry)
    os.environ["QAX_MODELS_TOML"] = registry_path
    try:
        engine = registry.load_engine("tiny-a", EngineSettings())
    finally:
        os.environ.pop("QAX_MODELS_TOML", None)
    run = run_sweep(SweepConfig("evil", parse_specs("TUQ"), ["tiny-a"], name="evil-sweep"), {"tiny-a": engine},
                    sweep_db, dataset=ds)
    assert run.status == "done"

    env = {"QAX_MODELS_TOML": registry_path, "QAX_BEAT_DB": str(beat_db), "QAX_SWEEP_DB": str(sweep_db)}
    with serve_app(env) as url, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        # Each step waits on a Streamlit rerun; under the full suite's load one can take longer
        # than Playwright's 30 s default (a click on Answer once did), so every action gets 90 s.
        page.set_default_timeout(90_000)
        page.goto(url + "/")
        page.locator('textarea[aria-label="Question"]').wait_for(timeout=120_000)

        # Ask: upload the file through the page, choose it, read the caption and the passage, answer.
        page.get_by_text("Upload a SQuAD-format JSON file").first.click()
        page.locator('input[type="file"]').first.set_input_files(str(upload))
        page.get_by_text("Loaded 1 question from evil.json.").first.wait_for(timeout=60_000)
        _choose(page, "Dataset", "upload:evil.json")
        _wait_visible(page, "[click me](http://127.0.0.1", 60_000)
        click_settled(page.get_by_role("button", name="Answer", exact=True))
        page.locator("div.qax-context mark.qax-span").first.wait_for(timeout=FIRST_ANSWER_MS)
        page.wait_for_timeout(2_000)
        _no_fetchable_elements(page, port)
        assert "id`![px](" in page.inner_text("body")  # the id is shown, backtick and all
        page.screenshot(path=str(SHOTS / "e2e_untrusted_ask.png"), full_page=True)

        # Variants: the same upload, chosen on this page.
        page.get_by_role("link", name="Variants").click()
        page.get_by_role("heading", name="Variants").wait_for(timeout=60_000)
        _choose(page, "Dataset", "upload:evil.json")
        _wait_visible(page, "Title ![px](", 60_000)
        page.wait_for_timeout(2_000)
        _no_fetchable_elements(page, port)

        # Beat the AI: the upload's title on Play, the stored attempts on Validate and in the
        # disagreements list (tabs are all in the page; an <img> in a hidden tab still loads).
        page.get_by_role("link", name="Beat the AI").click()
        page.get_by_role("heading", name="Beat the AI").wait_for(timeout=60_000)
        page.get_by_role("tab", name="Setup: name, data set, models").click()   # data set and name
        _choose(page, "Dataset", "upload:evil.json")
        name = page.get_by_role("textbox", name="Your name")
        name.fill("walter")
        name.press("Enter")
        open_tab(page, "Validate")
        _wait_visible(page, "Stored ![px](", 60_000)
        page.get_by_role("tab", name="Collected set & export").click()
        page.get_by_text("Disagreements", exact=False).filter(visible=True).first.click()
        _wait_visible(page, "Flagged ![px](", 60_000)
        page.wait_for_timeout(2_000)
        _no_fetchable_elements(page, port)
        page.screenshot(path=str(SHOTS / "e2e_untrusted_beat.png"), full_page=True)

        # Heatmaps: the drill-down of the stored sweep shows the hostile question and passage.
        page.get_by_role("link", name="Heatmaps").click()
        page.get_by_role("heading", name="Heatmaps").wait_for(timeout=60_000)
        _wait_visible(page, "Original question:", 120_000)
        _wait_visible(page, "Who first lit the lighthouse? ![px](", 60_000)
        page.wait_for_timeout(2_000)
        _no_fetchable_elements(page, port)
        page.screenshot(path=str(SHOTS / "e2e_untrusted_heatmaps.png"), full_page=True)

        # Gallery: the stored attempt (the AI beaten) shows its hostile question and the player's name.
        page.get_by_role("link", name="Gallery").click()
        page.get_by_role("heading", name="Gallery").wait_for(timeout=60_000)
        page.get_by_role("tab", name=re.compile(r"^The AI was beaten \(")).click()
        _wait_visible(page, "Stored ![px](", 120_000)
        page.wait_for_timeout(2_000)
        _no_fetchable_elements(page, port)

    assert hits == [], f"the browser fetched {hits}"
