"""End to end in real headless Chromium: speak a question into the Ask page through Chromium's fake
microphone (a TTS WAV of a known question), see the transcript become the question, and an answer.

Chromium plays ``--use-file-for-fake-audio-capture`` once (``%noloop``) when the recorder opens the
microphone; the WAV is flite kal16 saying "what is the capital of france", resampled to 48 kHz,
with 0.8 s of silence before and after.
"""
import os
import time
from pathlib import Path

import numpy as np
import pytest
from browser import CHROMIUM, FIRST_ANSWER_MS, launch_chromium, serve_app
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from core.speech import tts
from core.speech.audio import resample, to_wav_bytes

ROOT = Path(__file__).resolve().parents[1]
SPOKEN = "what is the capital of france"

pytestmark = pytest.mark.e2e


@pytest.fixture
def question_wav(tmp_path) -> Path:
    samples, rate = tts.synthesize(SPOKEN, "flite:kal16")
    pad = np.zeros(int(0.8 * 48_000), dtype=np.float32)
    path = tmp_path / "question.wav"
    path.write_bytes(to_wav_bytes(np.concatenate([pad, resample(samples, rate, 48_000), pad]), 48_000))
    return path


def test_browser_speaks_a_question_and_sees_transcript_and_answer(tiny_registry, question_wav, tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    env = {"QAX_MODELS_TOML": str(tiny_registry), "QAX_CACHE_DIR": str(tmp_path / "cache")}
    fake_mic = [f"--use-file-for-fake-audio-capture={question_wav}%noloop"]
    with serve_app(env) as url, launch_chromium(fake_mic) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url + "/")
        page.get_by_text("Paste a context").click()
        context = page.get_by_role("textbox", name="Context")
        context.wait_for(timeout=60_000)
        context.fill("paris is the capital of france . berlin is the capital of germany .")
        context.press("Control+Enter")
        # The context's rerun can briefly show the old expander beside the new one: wait until
        # the rerun has replaced it (a lasting duplicate would fail here, as it should).
        speak = page.get_by_text("Speak the question")
        expect(speak).to_have_count(1, timeout=60_000)
        speak.click()
        record = page.get_by_role("button", name="Record")
        stop = page.get_by_role("button", name="Stop recording")
        record.click()
        try:
            stop.wait_for(timeout=10_000)
        except PlaywrightTimeout:
            # A click that lands while a rerun replaces the recorder is lost (seen once in a clean
            # clone on a loaded CPU): the microphone never opened, so the clip is still unplayed.
            record.click()
            stop.wait_for(timeout=30_000)
        time.sleep(3.5)                       # the clip lasts 3.4 s
        stop.click()

        question = page.get_by_label("Question", exact=True)
        deadline = time.time() + 120          # upload + two recognisers on a busy CPU
        while question.input_value() != SPOKEN and time.time() < deadline:
            time.sleep(0.5)
        assert question.input_value() == SPOKEN
        page.get_by_text("Recording from the browser; transcripts side by side").wait_for(timeout=10_000)

        # "Answer as soon as it is transcribed" is on by default: the models answer without a click
        # (the first answer loads them cold, so the shared first-answer limit)
        mark = page.locator("div.qax-context mark.qax-span").first
        mark.wait_for(timeout=FIRST_ANSWER_MS)
        assert mark.inner_text().strip()
        assert page.get_by_text("Answer: ", exact=False).first.is_visible()
        page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_mic.png"), full_page=True)
