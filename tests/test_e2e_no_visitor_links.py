"""No visitor links, in real headless Chromium (issue 46, finding 4): the probe's hostile strings
(URLs to a counting server on 127.0.0.1, ``www.`` and ``_www.`` hosts, raw ``<a href>``, Markdown
links, ``<http://…>`` autolinks, e-mails) stored as a Beat-the-AI answer, question and player
name, a sweep name, and a data set's title, question and context. One browser session walks
Gallery (the URL answer that beat the AI), Beat the AI (a player's name, the collected set),
Heatmaps and Sweeps (the sweep name) and Variants (the uploaded set). No page may hold an
``<a href>`` pointing at a hostile host, and the counting server must see zero requests."""
from __future__ import annotations

import json
import os
import re

import pytest
from browser import CHROMIUM, launch_chromium, open_tab, serve_app
from test_e2e_untrusted_text import _choose, _wait_visible, counting_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e


def hostile(port: int, tag: str) -> str:
    host = f"127.0.0.1:{port}"
    return (f"http://{host}/{tag}-bare www.evil.example _www.evil.example (www.evil.example) "
            f"<a href='http://{host}/{tag}-a'>a</a> [md](http://{host}/{tag}-md) <http://{host}/{tag}-auto> "
            f"mallory@evil.example mailto:m@evil.example ![px](http://{host}/{tag}-img.png)")


def _no_hostile_links(page, port: int) -> None:
    found = page.evaluate(
        "port => [...document.querySelectorAll('a[href], img[src], [src]')]"
        ".map(e => e.getAttribute('href') || e.getAttribute('src'))"
        ".filter(u => u && (u.includes(':' + port) || u.includes('evil')))", port)
    assert found == [], found


def test_hostile_strings_are_never_links(counting_server, tiny_registry, tmp_path):  # noqa: F811
    from core.collect import beat, beat_store
    from core.datasets import load_squad
    from core.perturb.spec import parse_specs
    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep

    assert os.path.exists(CHROMIUM), "Debian chromium is required (the test command installs it)"
    port, hits = counting_server
    url = f"http://127.0.0.1:{port}/answer"
    context = f"The keeper painted {url} on the wall in 1871. " + hostile(port, "context")
    upload = tmp_path / "evil.json"
    upload.write_text(json.dumps({"version": "1.1", "data": [{"title": "T " + hostile(port, "title"), "paragraphs": [
        {"context": context, "qas": [{"id": "q1", "question": "What did the keeper paint? " + hostile(port, "q"),
                                      "answers": [{"text": url, "answer_start": context.index(url)}]}]}]}]}))
    ds = load_squad(upload, name="evil")
    beat_db = tmp_path / "beat.sqlite"
    [passage] = beat.passages(ds)
    start = context.index(url)
    with beat_store.BeatStore(beat_db) as store:   # the AI gave no answer: the URL answer beat it
        store.record_attempt(passage, "Stored " + hostile(port, "attempt"), (start, start + len(url)),
                             {"tiny-a": None}, user="_www.evil.example", session="s1", browser="b-mallory")
    sweep_db = tmp_path / "sweeps.sqlite"
    os.environ["QAX_MODELS_TOML"] = str(tiny_registry)
    try:
        engine = registry.load_engine("tiny-a", EngineSettings())
    finally:
        os.environ.pop("QAX_MODELS_TOML", None)
    sweep_name = "_www.evil.example mallory@evil.example"
    assert run_sweep(SweepConfig("evil", parse_specs("TUQ"), ["tiny-a"], name=sweep_name), {"tiny-a": engine},
                     sweep_db, dataset=ds).status == "done"

    env = {"QAX_MODELS_TOML": str(tiny_registry), "QAX_BEAT_DB": str(beat_db), "QAX_SWEEP_DB": str(sweep_db)}
    with serve_app(env) as app, launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(90_000)
        page.goto(app + "/")
        page.locator('textarea[aria-label="Question"]').wait_for(timeout=120_000)

        page.get_by_role("link", name="Gallery").click()
        page.get_by_role("heading", name="Gallery").wait_for(timeout=60_000)
        page.get_by_role("tab", name=re.compile(r"^The AI was beaten \(")).click()
        _wait_visible(page, f"127.0.0.1:{port}/answer", 120_000)
        page.wait_for_timeout(2_000)
        _no_hostile_links(page, port)

        page.get_by_role("link", name="Beat the AI").click()
        page.get_by_role("heading", name="Beat the AI").wait_for(timeout=60_000)
        page.get_by_role("tab", name="Setup: name, data set, models").click()
        name = page.get_by_role("textbox", name="Your name")   # a player's own name, echoed on the page
        name.fill("_www.evil.example")
        name.press("Enter")
        page.wait_for_timeout(3_000)
        _no_hostile_links(page, port)
        open_tab(page, "Collected set & export")
        page.wait_for_timeout(2_000)
        _no_hostile_links(page, port)

        page.get_by_role("link", name="Heatmaps").click()
        page.get_by_role("heading", name="Heatmaps").wait_for(timeout=60_000)
        _wait_visible(page, "_www", 120_000)
        page.wait_for_timeout(2_000)
        _no_hostile_links(page, port)

        page.get_by_role("link", name="Sweeps").click()
        page.get_by_role("heading", name="Sweeps", exact=True).wait_for(timeout=60_000)
        page.wait_for_timeout(3_000)
        _no_hostile_links(page, port)

        page.get_by_role("link", name="Variants").click()
        page.get_by_role("heading", name="Variants").wait_for(timeout=60_000)
        page.get_by_text("Upload a SQuAD-format JSON file").first.click()
        page.locator('input[type="file"]').first.set_input_files(str(upload))
        page.wait_for_timeout(3_000)
        _choose(page, "Dataset", "upload:evil.json")
        _wait_visible(page, "T http", 60_000)
        page.wait_for_timeout(3_000)
        _no_hostile_links(page, port)
        body = page.inner_text("body").replace("\u2060", "")
        for shown in (f"T http://127.0.0.1:{port}/title-bare www.evil.example", "mallory@evil.example",
                      f"[md](http://127.0.0.1:{port}/title-md) <http://127.0.0.1:{port}/title-auto>"):
            assert shown in body, shown   # the hostile title is shown, literally (a title's "_" shows as a space)

    assert hits == [], f"the browser fetched {hits}"
