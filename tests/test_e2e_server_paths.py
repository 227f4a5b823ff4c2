"""No server path reaches a visitor (issue 57, item 3), in real headless Chromium at 1400 and 800 px:
every page of the app, as text and as HTML, and every download it offers cheaply (the Heatmaps
report as HTML and Markdown, the CSV and JSON exports) is searched for the server's folders: the
repository, the data directory, the cache, the runs folder and the folder of models.toml. The
server runs with QAX_SHOW_PATHS unset, as a shared demo does."""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from browser import CHROMIUM, ROOT, click_settled, launch_chromium, serve_app, wait_idle
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_app_heatmaps import build_sweep

pytestmark = pytest.mark.e2e

PAGES = ["home", "variants", "gallery", "sweeps", "heatmaps", "models", "behaviour", "beat_the_ai", "speech_trial"]
# a download is cheap when its bytes are ready on the page (not a PNG through kaleido, not a zip of recordings)
CHEAP = re.compile(r"CSV|JSON|Markdown|HTML|SQuAD", re.IGNORECASE)


def _leaks(text: str, secrets: dict[str, str]) -> list[str]:
    text = text.replace("\\", "").replace("&#47;", "/").replace("\u2060", "")
    return [f"{what}: …{text[max(0, i - 60):i + len(path) + 20]!r}"
            for what, path in secrets.items() for i in [text.find(path)] if i >= 0]


@pytest.fixture
def server_env(tmp_path, tiny_registry, tiny_qa_dir):
    data, cache, runs = tmp_path / "srv-data", tmp_path / "srv-cache", tmp_path / "srv-runs"
    for d in (data / "xquad", cache, runs):
        d.mkdir(parents=True)
    shutil.copy(ROOT / "assets" / "demo" / "demo.json", data / "xquad" / "xquad.en.json")
    build_sweep(runs / "large.sqlite")
    env = {"QAX_DATA_DIR": str(data), "QAX_CACHE_DIR": str(cache), "QAX_SWEEP_DB": str(runs / "large.sqlite"),
           "QAX_BEAT_DB": str(cache / "beat.sqlite"), "QAX_MODELS_TOML": str(tiny_registry)}
    secrets = {"repository": str(ROOT), "data directory": str(data), "cache": str(cache), "runs": str(runs),
               "models.toml's folder": str(tiny_registry.parent), "a model's folder": str(tiny_qa_dir),
               "pytest's folder": str(tmp_path)}
    return env, secrets


def _downloads(page, secrets: dict[str, str], seen: dict[str, list[str]], where: str) -> None:
    """Click every cheap download button on the page and search what it hands over."""
    buttons = page.locator('[data-testid="stDownloadButton"] button')
    labels = [buttons.nth(i).text_content().strip() for i in range(buttons.count())]
    for i, label in enumerate(labels):
        button = buttons.nth(i)
        if not CHEAP.search(label) or button.text_content().strip() != label:   # a rerun moved the buttons
            continue
        try:   # a button in a closed expander is in the page but hidden: clicked as a script would click it
            with page.expect_download(timeout=60_000) as download:
                button.evaluate("b => b.click()")
            body = open(download.value.path(), encoding="utf-8", errors="replace").read()
        except PlaywrightTimeout:   # none came (a rerun redrew the button): the counts below say how many did
            continue
        seen[f"{where} ⬇ {i} {label}"] = _leaks(body, secrets)
        wait_idle(page)


def test_no_page_and_no_download_shows_a_server_path(server_env, monkeypatch):
    assert os.path.exists(CHROMIUM), "Debian chromium is required"
    env, secrets = server_env
    monkeypatch.delenv("QAX_SHOW_PATHS", raising=False)
    seen: dict[str, list[str]] = {}
    with serve_app(env) as url, launch_chromium() as browser:
        for width in (1400, 800):
            page = browser.new_page(viewport={"width": width, "height": 1000}, accept_downloads=True)
            for name in PAGES:
                page.goto(f"{url}/{name}")
                page.locator("h1").first.wait_for(timeout=180_000)
                wait_idle(page)
                if name == "heatmaps":   # the report from "Build report" is a download too
                    click_settled(page.get_by_role("button", name="Build report (HTML and Markdown)"), 180_000)
                    page.get_by_role("button", name="Report (HTML)").wait_for(timeout=300_000)
                    wait_idle(page)
                where = f"{name} at {width} px"
                seen[where] = _leaks(page.inner_text("body") + page.content(), secrets)
                _downloads(page, secrets, seen, where)
            page.close()
    leaks = {where: found for where, found in seen.items() if found}
    assert not leaks, json.dumps(leaks, ensure_ascii=False, indent=1)
    shown = [w for w in seen if "⬇" in w]
    assert any("Report (HTML)" in w for w in shown) and any("Report (Markdown)" in w for w in shown), shown
    for width in (1400, 800):   # every page at both widths, and downloads at both (a page may offer more later)
        assert all(f"{name} at {width} px" in seen for name in PAGES), sorted(seen)
        assert sum(f"at {width} px ⬇" in w for w in seen) >= 4, sorted(seen)
