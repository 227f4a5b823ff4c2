"""End to end in real headless Chromium, at 1400 and 800 px: the speech trial's "Synthetic against
natural noise" section compares a recorded trial's flips and shows the kappa matrix that
core.collect.flip_agreement computes for the same trial, with no button label cut off.

The trial (tests/trial_fixture.py) is four demo questions read by flite's slt voice and transcribed
by PocketSphinx, built in a temporary cache folder the app then serves.
"""
import os
import re

import pytest
from browser import CHROMIUM, launch_chromium, serve
from playwright.sync_api import expect
from trial_fixture import demo_trial

from core.collect import flip_agreement as agreement
from core.collect import trials

pytestmark = pytest.mark.e2e

CUT_LABELS = """() => [...document.querySelectorAll('button')].filter(b => b.offsetParent !== null)
  .filter(b => [...b.querySelectorAll('[data-testid="stMarkdownContainer"]')]
     .some(e => e.scrollWidth > e.clientWidth + 1)).map(b => b.innerText.trim())"""


def expected_labels(trial) -> set[str]:
    """The kappa labels the section must show: the same comparison computed here."""
    from core.qa.registry import load_engine

    examples, conditions, _ = agreement.trial_conditions(trial, ["pocketsphinx"], tts_engines=["pocketsphinx"])
    result = agreement.compare(examples, conditions, {"tiny-a": load_engine("tiny-a")})
    return {agreement.kappa_label(r, short=True) for r in result.kappas}


def grid_text(page, title: str) -> str:
    """The cells of the data grid under the Markdown line ``title`` (the grid draws on a canvas;
    its cells are in its accessible table)."""
    grid = page.get_by_text(title).locator("xpath=following::*[@data-testid='stDataFrame'][1]")
    grid.scroll_into_view_if_needed()
    cells = grid.locator('[role="gridcell"]')
    cells.first.wait_for(state="attached", timeout=60_000)
    return " | ".join(cells.all_inner_texts())


@pytest.fixture(scope="module")
def app(tiny_registry, tmp_path_factory):
    """One app server and one Chromium for the file: the tiny models, a cache folder of its own
    holding the recorded trial (the tests read the trial; the comparisons keep their results in
    their browser session only)."""
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    cache = tmp_path_factory.mktemp("agreement") / "cache"
    env = {"QAX_MODELS_TOML": str(tiny_registry), "QAX_CACHE_DIR": str(cache)}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        trial = demo_trial(trials.trials_root(), n=4)
        labels = expected_labels(trial)
    with serve("app.py", env) as server, launch_chromium() as browser:
        yield server, browser, labels


def test_browser_shows_the_kappa_table_of_a_recorded_trial(app, tmp_path):
    server, browser, labels = app
    url = server.url
    for width in (1400, 800):
        page = browser.new_page(viewport={"width": width, "height": 1200})
        page.goto(url + "/")
        page.get_by_role("link", name="Speech trial").click()
        page.get_by_role("heading", name="Speech trial").wait_for(timeout=180_000)
        page.get_by_text("Resume a trial").click()
        page.get_by_role("heading", name="Synthetic against natural noise").wait_for(timeout=60_000)
        run = page.get_by_role("button", name="Compare the flips")
        run.scroll_into_view_if_needed()
        if run.is_disabled():   # no model ticked by default: choose tiny-a
            page.get_by_role("combobox", name="Models").last.click()
            page.get_by_role("option").filter(has_text="tiny-a").first.click()
            page.keyboard.press("Escape")
        run.click()
        page.get_by_text("Cohen's kappa of the flips").wait_for(timeout=180_000)
        page.get_by_text(re.compile(r"^4 recorded questions")).wait_for(timeout=30_000)
        text = grid_text(page, "Cohen's kappa of the flips")
        for label in labels:
            assert label in text, (label, text)
        rates = grid_text(page, "Flips per condition")
        assert "natural:pocketsphinx" in rates and "tts:flite:kal16>pocketsphinx" in rates, rates
        page.screenshot(path=str(tmp_path / f"agreement_{width}.png"), full_page=True)
        for name in ("Kappa CSV", "Per-question CSV", "All (JSON)"):
            page.get_by_role("button", name=re.compile(re.escape(name))).wait_for(timeout=30_000)
        assert page.evaluate(CUT_LABELS) == [], width
        main = page.locator('[data-testid="stMain"]').bounding_box()
        for grid in page.locator('[data-testid="stDataFrame"]').all():
            box = grid.bounding_box()
            if box:
                assert box["x"] + box["width"] <= main["x"] + main["width"] + 1, (width, box, main)
        page.close()


@pytest.mark.needs_data("natural/heysquad/dev-common-original-1002.json")
def test_cancel_stops_a_comparison_on_a_natural_set_and_keeps_nothing(app):
    """HeySQuAD's 1,000 questions: the bar and Cancel show while the comparison runs; Cancel's click
    says so at once, no kappa table appears, and the server stops working within a chunk."""
    import time

    import psutil

    server, browser, _ = app
    page = browser.new_page(viewport={"width": 800, "height": 1400})
    page.goto(server.url + "/speech_trial")
    page.get_by_role("heading", name="Synthetic against natural noise").wait_for(timeout=180_000)
    page.get_by_text("HeySQuAD (real speech)").click()
    run = page.get_by_role("button", name="Compare the flips")
    run.wait_for(timeout=60_000)
    if run.is_disabled():
        page.get_by_role("combobox", name="Models").last.click()
        page.get_by_role("option").filter(has_text="tiny-a").first.click()
        page.keyboard.press("Escape")
    questions = page.get_by_role("spinbutton", name="Questions").last
    questions.fill("1000")
    questions.press("Enter")
    page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=60_000)
    run.click()
    cancel = page.get_by_role("button", name="Cancel")
    cancel.wait_for(timeout=60_000)
    expect(page.locator('[data-testid="stProgress"]')).to_have_count(1, timeout=30_000)
    cancel.click()
    page.get_by_text("Cancelled: the comparison stopped").wait_for(timeout=60_000)
    process = psutil.Process(server.pid)
    busy = None
    for _ in range(60):   # the interrupted run ends at its next chunk: the server falls idle
        used = sum(process.cpu_times()[:2])
        time.sleep(1)
        busy = sum(process.cpu_times()[:2]) - used
        if busy < 0.2:
            break
    assert busy is not None and busy < 0.2, f"the server still used {busy:.2f} CPU-s a second"
    assert page.get_by_text("Cohen's kappa of the flips").count() == 0
    assert page.locator('[data-testid="stProgress"]').count() == 0
