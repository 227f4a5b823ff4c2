"""No visitor-chosen links (issue 46, finding 4): every untrusted string reaches the screen through
``md_escape`` or ``html_text``, and neither leaves a pattern GFM turns into a link, whatever
Markdown surrounds it. remark-gfm finds literal autolinks in the *decoded* text of a paragraph
(after backslash escapes and character references are read), so the checks below decode first,
then look for links with GFM's own rules (mdast-util-gfm-autolink-literal's expressions).
The browser walk is tests/test_e2e_no_visitor_links.py."""
from __future__ import annotations

import html
import re

import pytest
from streamlit.testing.v1 import AppTest

from components.text import WORD_JOINER, html_text, md_escape

# mdast-util-gfm-autolink-literal: a URL (http(s):// or www.) and an e-mail (mailto:/xmpp: too)
GFM_URL = re.compile(r"(?i)(https?://|www(?=\.))([-.\w]+)")
GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)")
PORT = 8699
HOSTILE = [
    f"http://127.0.0.1:{PORT}/x", f"HTTPS://127.0.0.1:{PORT}/y", "www.evil.example", "_www.evil.example",
    "(www.evil.example)", "*www.evil.example*", "~www.evil.example", "WWW.evil.example",
    f"<a href='http://127.0.0.1:{PORT}/a'>a</a>", f"[a](http://127.0.0.1:{PORT}/md)",
    f"<http://127.0.0.1:{PORT}/auto>", "mallory@evil.example", "mailto:mallory@evil.example",
    "xmpp:mallory@evil.example", f"![px](http://127.0.0.1:{PORT}/img.png)",
]


def gfm_links(decoded: str) -> list[str]:
    """What remark-gfm would link in this decoded paragraph text."""
    return [m.group(0) for m in GFM_URL.finditer(decoded)] + [m.group(0) for m in GFM_EMAIL.finditer(decoded)]


def decode_markdown(text: str) -> str:
    """The text a Markdown paragraph holds once read: backslash escapes and references decoded."""
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text.replace("<br>", "\n")))


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("render", [md_escape, html_text], ids=["md_escape", "html_text"])
def test_no_renderer_leaves_a_linkable_pattern(render, text):
    shown = decode_markdown(render(f"said {text} then"))
    assert gfm_links(shown) == [], (text, shown)
    assert shown.replace(WORD_JOINER, "") == f"said {text} then"   # still shown, literally


def test_gallery_shows_a_url_answer_as_text_not_a_link(tmp_path, monkeypatch, tiny_registry):
    """The issue's case: a context holding a URL, marked as the Beat-the-AI answer that beat the
    models, was a live link in every visitor's Gallery (html_text inside a paragraph)."""
    from core.collect import beat, beat_store
    from core.datasets import Dataset
    from core.types import Answer, QAExample

    url = f"http://127.0.0.1:{PORT}/x"
    context = f"The keeper wrote {url} and _www.evil.example on the wall; mail mallory@evil.example."
    ds = Dataset("evil", "en", [QAExample("q1", "What did the keeper write?", context,
                                    [Answer(url, context.index(url))], title="_www.evil.example")])
    [passage] = beat.passages(ds)
    beat_db = tmp_path / "beat.sqlite"
    with beat_store.BeatStore(beat_db) as store:
        start = context.index(url)
        store.record_attempt(passage, "Where is www.evil.example or _www.evil.example?", (start, start + len(url)),
                             {"tiny-a": None}, user="_www.evil.example", session="s1", browser="b1")
    for k, v in {"QAX_BEAT_DB": beat_db, "QAX_MODELS_TOML": tiny_registry, "HF_HUB_OFFLINE": "1",
                 "QAX_SWEEP_DB": tmp_path / "sweeps.sqlite"}.items():
        monkeypatch.setenv(k, str(v))
    at = AppTest.from_file("../pages/gallery.py", default_timeout=120).run()
    assert not at.exception, at.exception
    shown = [decode_markdown(m.value) for m in [*at.markdown, *at.caption]]
    assert any(url in s.replace(WORD_JOINER, "") for s in shown)   # the answer is shown...
    assert [link for s in shown for link in gfm_links(s)] == []     # ...and nothing in any element links
