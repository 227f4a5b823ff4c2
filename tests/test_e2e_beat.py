"""End to end in real headless Chromium: Beat the AI - write a question, mark a span, submit,
see the verdict, and find the attempt in the store and in the export."""
import os
import re
from pathlib import Path

import browser as browser_helpers
import pytest
from browser import CHROMIUM, launch_chromium, open_tab, serve_app, wait_idle

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

        # The passage comes first: the answer is selected in it with the mouse (issue 43)
        passage = page.locator(".qax-pick").first
        passage.wait_for(timeout=60_000)
        text = passage.inner_text()
        found = re.search(r"[A-Za-z]{5,}", text)
        answer, start = found.group(0), found.start()
        # the word's place on screen, then a real drag across it
        box = passage.evaluate("""(el, [a, b]) => {
            const r = document.createRange(); const node = el.firstChild;
            r.setStart(node, a); r.setEnd(node, b);
            const q = r.getBoundingClientRect(); return {x: q.x, y: q.y, w: q.width, h: q.height};
        }""", [start, start + len(answer)])
        page.mouse.move(box["x"] + 1, box["y"] + box["h"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2, steps=5)
        page.mouse.move(box["x"] + box["w"] - 1, box["y"] + box["h"] / 2, steps=5)
        page.mouse.up()
        # the selected span comes back as character offsets, and stays marked in the passage
        page.get_by_text(f"characters {start}–{start + len(answer)}").wait_for(timeout=60_000)
        assert passage.locator("mark").inner_text() == answer

        page.get_by_role("tab", name="Setup: name, data set, models").click()   # name, models, rules
        name = page.get_by_role("textbox", name="Your name")
        name.fill("Tess")
        name.press("Enter")
        open_tab(page, "Play")
        question = page.get_by_role("textbox", name="Your question")
        question.fill(QUESTION)
        question.press("Control+Enter")
        page.get_by_text("playing against tiny-a, tiny-b").first.wait_for(timeout=60_000)

        page.get_by_role("button", name="Submit to the AI").click()
        verdict = page.get_by_text(re.compile(r"You beat the AI|The AI wins")).first
        verdict.wait_for(timeout=90_000)
        text = verdict.inner_text()
        page.get_by_text(re.compile(r"^Attempt #1$")).wait_for(timeout=30_000)
        page.screenshot(path=str(ROOT / ".pytest_cache" / "e2e_beat.png"), full_page=True)

        # New passage: a clean form in the browser too (the audit of 2026-11-29 saw "Answer text"
        # still checked over the mouse form, the old question in its box and Submit disabled)
        page.get_by_text("Answer text", exact=True).click()
        page.get_by_role("textbox", name="Answer text (copy it from the passage)").wait_for(timeout=60_000)
        wait_idle(page)
        page.get_by_role("button", name="New passage").click()
        page.get_by_text("Select the answer in the passage with the mouse.").wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_role("radio", name="Select in the passage").is_checked()
        assert not page.get_by_role("radio", name="Answer text").is_checked()
        assert page.get_by_role("textbox", name="Your question").input_value() == ""
        # the name and a draft question outlive a visit to another page
        draft = page.get_by_role("textbox", name="Your question")
        draft.fill("which draft survives ?")
        draft.press("Control+Enter")
        wait_idle(page)
        page.get_by_role("link", name="Gallery").click()
        page.get_by_role("heading", name="Gallery").first.wait_for(timeout=60_000)
        page.get_by_role("link", name="Beat the AI").click()
        page.get_by_role("heading", name="Beat the AI").wait_for(timeout=60_000)
        open_tab(page, "Setup: name, data set, models")
        assert page.get_by_role("textbox", name="Your name").input_value() == "Tess"
        open_tab(page, "Play")
        assert page.get_by_role("textbox", name="Your question").input_value() == "which draft survives ?"

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


def test_browser_shows_the_rounds_leaderboard(tiny_registry, tmp_path):
    """Issue 43: the leaderboard in Chromium, per round, from stored attempts and validations: Bob
    fooled tiny-a and tiny-b once in round 2, his two validators disagree; Alice fooled tiny-a in
    round 1 and both her validators agree."""
    from core.collect import beat
    from core.datasets import demo_dataset

    db = tmp_path / "beat.sqlite"
    p = beat.passages(demo_dataset("en"))[0]
    gold = (112, 127)   # "14 October 1871"
    with beat_store.BeatStore(db) as store:
        a1 = store.record_attempt(p, "On which date was the lamp first lit?", gold, {"tiny-a": None},
                                  user="Alice", session="s1", now="2026-11-20T10:00:00")
        for who in ("Bob", "Cy"):
            store.record_validation(a1.id, who, gold, session=who)
        b1 = store.record_attempt(p, "When did the keeper start?", gold, {"tiny-a": None, "tiny-b": None},
                                  user="Bob", session="s2", now="2026-11-22T09:00:00")
        store.record_validation(b1.id, "Alice", None, session="a")
        store.record_validation(b1.id, "Cy", gold, session="c")
    env = {"QAX_MODELS_TOML": str(tiny_registry), "QAX_BEAT_DB": str(db)}
    with serve_app(env) as url, launch_chromium() as browser:
        for width in (1400, 800):
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.goto(url + "/")
            page.get_by_role("link", name="Beat the AI").click()
            page.get_by_role("heading", name="Beat the AI").wait_for(timeout=180_000)
            page.get_by_role("tab", name="Leaderboard").click()
            # the newest round is chosen: its line under the table names its models
            page.get_by_text("1 attempt in this round; models in play: tiny-a, tiny-b.").filter(
                visible=True).first.wait_for(timeout=60_000)
            # the data grid draws on a canvas; its cells are in the grid's accessible table
            cells = page.locator('[data-testid="stDataFrame"] [role="gridcell"]')
            cells.first.wait_for(state="attached", timeout=60_000)
            text = " | ".join(cells.all_inner_texts())
            assert "Bob" in text and "Alice" not in text, text   # round 2 alone
            assert "0 %" in text, text                            # its validators disagree
            page.screenshot(path=str(tmp_path / f"leaderboard_{width}.png"))
