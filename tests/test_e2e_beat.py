"""End to end in real headless Chromium: Beat the AI - write a question, mark a span, submit,
see the verdict, and find the attempt in the store and in the export."""
import os
import re
from pathlib import Path

import browser as browser_helpers
import pytest
from browser import CHROMIUM, launch_chromium, serve_app

from core.collect import beat_store

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e

QUESTION = "which word did the tester pick ?"


def test_browser_plays_beat_the_ai(tiny_registry, tmp_path):
    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    assert "pages/beat_the_ai.py" in (browser_helpers.ROOT / "app.py").read_text(), \
        "app.py must register pages/beat_the_ai.py in its st.navigation list"
    db = tmp_path / "beat.sqlite"
    env = {"QAX_MODELS_TOML": str(tiny_registry), "QAX_BEAT_DB": str(db)}
    with serve_app(env) as url, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url + "/")  # open / first: app.py builds navigation and state
        page.get_by_role("link", name="Beat the AI").click()
        page.get_by_role("heading", name="Beat the AI").wait_for(timeout=180_000)

        context = page.locator("div.qax-context").first
        context.wait_for(timeout=60_000)
        answer = re.search(r"[A-Za-z]{5,}", context.inner_text()).group(0)

        name = page.get_by_role("textbox", name="Your name")
        name.fill("Tess")
        name.press("Enter")
        question = page.get_by_role("textbox", name="Your question")
        question.fill(QUESTION)
        question.press("Control+Enter")
        box = page.get_by_role("textbox", name="Answer text (copy it from the passage)")
        box.fill(answer)
        box.press("Enter")
        # The marked answer is highlighted in the passage before submitting.
        preview = page.locator('div.qax-context mark[title="your answer"]').first
        preview.wait_for(timeout=60_000)
        assert preview.inner_text() == answer

        page.get_by_role("button", name="Submit to the AI").click()
        verdict = page.get_by_text(re.compile(r"You beat the AI|The AI wins")).first
        verdict.wait_for(timeout=90_000)
        text = verdict.inner_text()
        page.get_by_text(re.compile(r"^Attempt #1$")).wait_for(timeout=30_000)
        page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_beat.png"), full_page=True)

    with beat_store.BeatStore(db) as store:
        [a] = store.attempts()
        export = store.export_squad(validated_only=False, human_won_only=False)
    assert (a.user, a.question, a.answer_text) == ("Tess", QUESTION, answer)
    assert a.context[a.answer_start:a.answer_end] == answer
    assert [m.model for m in a.models] == ["tiny-a", "tiny-b"]
    assert ("You beat the AI" in text) == a.human_won
    [qa] = [qa for art in export["data"] for par in art["paragraphs"] for qa in par["qas"]]
    assert (qa["id"], qa["question"], qa["answers"]) == (
        "beat-1", QUESTION, [{"text": answer, "answer_start": a.answer_start}])
