"""A live demo, walked end to end in one Debian Chromium session (issue #26), with the real models.

Ask: pick XQuAD-en item 6, read its passage, answer with the default models; speak the
question through Chromium's fake microphone (a flite TTS WAV) and see it answered at once;
"Perturb this question" opens Variants on the same item and question; keyboard noise x 3.
Sweeps: a small sweep (10 questions, keyboard_Q x 3 + TUQ, the default models). Heatmaps in a window
800 px wide: the heatmap, then a cell's example with every model side by side. Gallery: one
example opened on Ask. Then the addresses /ask and /no-such-page.

Screenshots and timings.json (seconds per step, the machine's load average) go to
artifacts/demo_walk/ (git-ignored). Needs the shipped models (assets/models), the data directory
(xquad/xquad.en.json) and chromium.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from browser import CHROMIUM, FIRST_ANSWER_MS, click_settled, launch_chromium, serve_app, wait_idle
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from core.qa import registry
from core.speech import tts
from core.speech.audio import resample, to_wav_bytes

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "artifacts" / "demo_walk"
ITEM, QUESTION = 6, "Who led the Panthers in sacks?"
# the models Ask ticks for an English item (core.qa.registry.models_for_language: the cards' rule)
MODELS = registry.models_for_language("en", registry.installed_models())

pytestmark = [pytest.mark.e2e, pytest.mark.needs_data("xquad/xquad.en.json")]


@pytest.fixture
def question_wav(tmp_path) -> Path:
    samples, rate = tts.synthesize(QUESTION.rstrip("?").lower(), "flite:kal16")
    pad = np.zeros(int(0.8 * 48_000), dtype=np.float32)
    path = tmp_path / "question.wav"
    path.write_bytes(to_wav_bytes(np.concatenate([pad, resample(samples, rate, 48_000), pad]), 48_000))
    return path


class Walk:
    def __init__(self, page):
        self.page, self.timings, self.n = page, {}, 0
        shutil.rmtree(OUT, ignore_errors=True)   # this walk's screenshots only
        OUT.mkdir(parents=True)

    def step(self, name: str, seconds: float) -> None:
        self.timings[name] = round(seconds, 1)

    def shot(self, name: str, full_page: bool = False, at=None) -> None:
        """A screenshot, with ``at`` (a locator) scrolled into view first (Streamlit's page
        scrolls inside its own container, which a full-page shot does not unroll)."""
        if at is not None:
            for attempt in range(3):   # a rerun that redraws the element detaches the one found:
                try:                    # the locator finds the new one on the next try
                    at.scroll_into_view_if_needed(timeout=30_000)
                    break
                except PlaywrightError:
                    if attempt == 2:
                        raise
                    time.sleep(1)
            time.sleep(0.3)
        self.n += 1
        self.page.screenshot(path=str(OUT / f"{self.n:02d}_{name}.png"), full_page=full_page)

    def visible(self, text: str | re.Pattern, timeout: float = 60_000):
        loc = self.page.get_by_text(text).filter(visible=True).first
        loc.wait_for(timeout=timeout)
        return loc

    def choose(self, label: str, option: str) -> None:
        box = self.page.get_by_role("combobox", name=label).first
        box.click()
        box.press_sequentially(option)
        self.page.get_by_role("option").filter(has_text=option).first.click()

    def number(self, label: str, value: int) -> None:
        box = self.page.get_by_role("spinbutton", name=label).first
        box.fill(str(value))
        box.press("Enter")

    def nav(self, title: str) -> None:
        self.page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()

    def idle(self, timeout: float = 120_000) -> None:
        wait_idle(self.page, timeout)


def test_demo_walk_in_one_browser_session(tmp_path, question_wav):
    assert os.path.exists(CHROMIUM), "Debian chromium is required"
    load = {"start": os.getloadavg()}
    env = {"QAX_SWEEP_DB": str(tmp_path / "sweeps.sqlite"), "QAX_BEAT_DB": str(tmp_path / "beat.sqlite")}
    fake_mic = [f"--use-file-for-fake-audio-capture={question_wav}%noloop"]
    with serve_app(env) as url, launch_chromium(fake_mic) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        w = Walk(page)

        # -------------------------------------------------------------------------------- Ask
        t = time.perf_counter()
        page.goto(url + "/")
        w.visible("Type a question about a context")
        page.get_by_role("combobox", name="Dataset").first.wait_for()
        w.idle()
        w.step("open Ask", time.perf_counter() - t)
        models = page.locator('[data-testid="stMultiSelect"]').first
        for m in MODELS:
            expect(models).to_contain_text(m)

        t = time.perf_counter()
        w.choose("Dataset", "xquad/xquad.en")
        w.idle()
        w.number(re.compile(r"^Item \(0–"), ITEM)
        w.idle()
        # Items 5 and 6 share a passage, so the passage alone does not prove the rerun is done: on a
        # loaded machine the item box can be typed into while the data set's rerun redraws it.
        item_box = page.get_by_role("spinbutton", name=re.compile(r"^Item \(0–")).first
        for _ in range(3):
            try:
                expect(page.get_by_label("Question", exact=True)).to_have_value(QUESTION, timeout=30_000)
                break
            except AssertionError:
                w.number(re.compile(r"^Item \(0–"), ITEM)
                w.idle()
        expect(item_box).to_have_value(str(ITEM))
        passage = page.locator("div.qax-context").filter(has_text="Kawann Short").first
        passage.wait_for(timeout=60_000)
        w.step("pick xquad.en item 6: passage shown", time.perf_counter() - t)
        assert page.get_by_label("Question", exact=True).input_value() == QUESTION
        assert passage.locator("mark").count() == 0          # before Answer: the plain passage
        w.shot("ask_passage")

        t = time.perf_counter()
        click_settled(page.get_by_role("button", name="Answer", exact=True))
        page.locator("div.qax-context mark.qax-span").first.wait_for(timeout=FIRST_ANSWER_MS)
        w.idle(FIRST_ANSWER_MS)
        w.step(f"answer with {len(MODELS)} models (first load included)", time.perf_counter() - t)
        w.visible("EM/F1 against the item's gold answers")
        for m in MODELS:
            w.visible(m)
        w.shot("ask_answers", at=page.get_by_text(re.compile(r"^Answer: ")).first)

        # ---------------------------------------------------------------------------- speak
        t = time.perf_counter()
        page.get_by_text("Speak the question").first.click()
        record = page.get_by_role("button", name="Record")
        stop = page.get_by_role("button", name="Stop recording")
        record.click()
        try:
            stop.wait_for(timeout=10_000)
        except PlaywrightTimeout:   # a click that landed while a rerun replaced the recorder
            record.click()
            stop.wait_for(timeout=30_000)
        time.sleep(4.5)                                     # 0.8 s + the question + 0.8 s
        stop.click()
        question = page.get_by_label("Question", exact=True)
        deadline = time.time() + 240
        while question.input_value() == QUESTION and time.time() < deadline:
            time.sleep(0.5)
        spoken = question.input_value()
        assert spoken != QUESTION and "panthers" in spoken.lower(), spoken
        # answered at once (the toggle is on): the answers are for the spoken question
        w.idle(240_000)
        w.visible("Recording from the browser; transcripts side by side")
        expect(page.get_by_text("changed since these answers were made")).to_have_count(0)
        w.step("speak the question: transcribed and answered at once", time.perf_counter() - t)
        w.shot("ask_spoken", at=page.get_by_text(re.compile(r"^Answer: ")).first)

        # ------------------------------------------------------------------------- Variants
        t = time.perf_counter()
        page.get_by_role("button", name="Perturb this question").click()
        w.visible("Perturb one question many ways")
        w.idle()
        var_question = page.get_by_label("Question", exact=True)
        expect(var_question).to_have_value(spoken, timeout=30_000)
        w.step("Perturb this question -> Variants", time.perf_counter() - t)

        t = time.perf_counter()
        family = page.get_by_role("combobox", name="keyboard").first
        family.click()
        family.press_sequentially("keyboard_Q")
        page.get_by_role("option").filter(has_text="keyboard_Q").first.click()
        page.keyboard.press("Escape")
        w.idle()
        page.get_by_role("button", name="Generate & answer").click()
        page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=240_000)
        w.idle(240_000)
        w.step(f"keyboard_Q x 3 repeats answered by {len(MODELS)} models", time.perf_counter() - t)
        w.shot("variants", at=page.locator('[data-testid="stDataFrame"]').first)

        # --------------------------------------------------------------------------- Sweeps
        t = time.perf_counter()
        w.nav("Sweeps")
        w.visible("Evaluate every selected model")
        w.idle()
        w.choose("Dataset", "xquad/xquad.en")
        w.idle()
        w.number("Sample size (0 = all)", 10)
        w.idle()
        for fam, pid in (("keyboard", "keyboard_Q"), ("case", "TUQ")):
            box = page.get_by_role("combobox", name=fam).first
            box.click()
            box.press_sequentially(pid)
            page.get_by_role("option").filter(has_text=pid).first.click()
            page.keyboard.press("Escape")
            w.idle()
        rows = 10 * 5 * len(MODELS)   # clean, keyboard_Q x 3 and TUQ for each question and model
        w.visible(f"{rows} result rows")
        page.get_by_role("button", name="Start sweep").click()
        try:   # the running sweep's bar: its name, rows done and time left (it may finish first)
            bar = rf"Sweep 'xquad/xquad\.en · [^']+ · {len(MODELS)} models · 10 ex · \w+': \d+/{rows} .* left"
            w.visible(re.compile(bar), timeout=60_000)
            w.shot("sweep_running", at=page.locator('[data-testid="stProgress"]').first)
        except PlaywrightTimeout:
            w.shot("sweep_no_progress_seen")
        w.visible(re.compile(rf"finished: {rows}/{rows} result rows"), timeout=600_000)
        w.step(f"a {rows}-row sweep ({len(MODELS)} models)", time.perf_counter() - t)
        w.shot("sweep_done", at=page.get_by_text(re.compile(rf"finished: {rows}/{rows}")).first)

        # ------------------------------------------------------------------ Heatmaps, 800 px
        page.set_viewport_size({"width": 800, "height": 1000})
        t = time.perf_counter()
        w.nav("Heatmaps")
        cells = page.locator(".js-plotly-plot g.trace.scatter").first.locator("path.point")
        cells.first.wait_for(timeout=120_000)
        w.idle()
        w.step("Heatmaps at 800 px: first open", time.perf_counter() - t)
        assert cells.count() == len(MODELS) * 2
        plot = page.locator(".js-plotly-plot").first.bounding_box()
        main = page.locator('[data-testid="stMain"]').first.bounding_box()
        assert plot["x"] + plot["width"] <= main["x"] + main["width"], (plot, main)   # no overflow
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        w.shot("heatmap_800")

        t = time.perf_counter()
        cells.nth(1).click(force=True)          # the first model under the second column
        w.visible("(this cell)", timeout=60_000)
        w.idle()
        w.step("drill-down to an example: every model side by side", time.perf_counter() - t)
        for m in MODELS:
            assert page.get_by_text(m, exact=True).filter(visible=True).count() >= 1, m
        assert page.get_by_text(re.compile(r"^clean: ")).filter(visible=True).count() == len(MODELS)
        page.get_by_text("(this cell)").first.scroll_into_view_if_needed()
        w.shot("drilldown_800")

        # --------------------------------------------------------------------------- Gallery
        page.set_viewport_size({"width": 1280, "height": 900})
        t = time.perf_counter()
        w.nav("Gallery")
        w.visible("Striking examples")
        # the default models disagree on some of the sweep's clean questions (2 of these 10)
        w.visible(re.compile(r"^Models disagree \([1-9]\d*\)$"), timeout=120_000)
        opens = page.get_by_role("button", name="Open on Ask")
        opens.first.wait_for(timeout=60_000)
        w.idle()
        w.step("open Gallery", time.perf_counter() - t)
        w.shot("gallery")
        t = time.perf_counter()
        opens.first.click()
        w.visible("Type a question about a context")
        page.locator("div.qax-context").first.wait_for(timeout=60_000)
        w.idle()
        w.step("a Gallery example opened on Ask", time.perf_counter() - t)
        w.visible(re.compile(r"^xquad\.en · id 5"))   # opened as the XQuAD item, not as pasted text
        w.shot("gallery_to_ask")

        # ---------------------------------------------------------------------- addresses
        page.goto(url + "/ask")
        w.visible("Type a question about a context")
        page.goto(url + "/no-such-page")
        w.visible("This app has no page at the address /no-such-page")
        w.shot("no_such_page")
        expect(page.get_by_text("Deploy", exact=True)).to_have_count(0)

        load["end"] = os.getloadavg()
        (OUT / "timings.json").write_text(json.dumps(
            {"seconds": w.timings, "load_average_1_5_15": load, "cpus": os.cpu_count(),
             "spoken_transcript": spoken}, indent=1))
