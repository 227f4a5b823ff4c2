"""How untrusted text reaches the screen: Markdown and HTML escaping without Streamlit.

Here, not in components/, because the pages and the sweep reports (core/reports/) both
use it; components/text.py re-exports it for the pages.

One rule (docs/SECURITY.md): text that came from a visitor, a dataset file, a store, a model or
``models.toml`` (questions, answers, titles, ids, names, sweep names, transcripts, error
messages that quote them) never reaches Streamlit's Markdown as it is. ``html.escape`` alone is
not enough: Markdown still turns ``![x](http://host/p.png)`` into an image the browser fetches
(a tracking pixel) and ``[t](http://...)`` into a link. So:

- :func:`md_escape` for text inside Markdown (``st.markdown``, ``st.caption``, ``st.info``,
  widget labels, expander titles): every ASCII punctuation character is backslash-escaped,
  which CommonMark defines as "this character, literally", so no image, link, emphasis, code,
  heading, list, table, LaTeX or Streamlit directive can start. Escapes do not stop GFM's
  literal autolinks (``http://h``, ``www.h``, ``a@h.org``): remark-gfm finds them in the text
  after parsing, so an invisible WORD JOINER (U+2060) is put inside each such pattern
  (``http:⁠//``, ``www⁠.``, ``a@⁠h``); it is shown as nothing and breaks no line.
- :func:`html_text` for text inside HTML that is rendered with ``unsafe_allow_html``: HTML-escaped,
  every ASCII punctuation character written as a numeric character reference (CommonMark never
  reads a reference as Markdown syntax) and line breaks as ``<br>``, so a blank line cannot end
  the surrounding HTML block and put the rest back into Markdown. The same word joiners go in
  too (:func:`no_autolink`): HTML that does not *start* a block (``Alice: <i>…</i>``) is inline
  HTML inside a Markdown paragraph, whose character references are decoded before remark-gfm
  looks for links, so without them ``http&#58;&#47;&#47;h`` became a live link (issue 46).

Both go through :func:`no_autolink`, so either is safe whatever Markdown surrounds it, and through
:func:`core.config.hide_server_paths`: an error message that quotes a server path (a database, a
data file, models.toml) shows the file's name only unless the server sets QAX_SHOW_PATHS=1.

Where neither fits, render plain text (``st.text``, ``st.code``, ``st.dataframe``).
"""
from __future__ import annotations

import re

from core.config import hide_server_paths

__all__ = ["md_escape", "html_text", "no_autolink", "WORD_JOINER"]

# Every ASCII punctuation character: all of them may be backslash-escaped in CommonMark.
_ASCII_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
# Where GFM starts a literal autolink (remark-gfm: a scheme's "://", "www.", an e-mail's "@"),
# case-insensitive as GFM is. "www." is broken wherever it stands: remark-gfm links it after any
# punctuation ("_www.x.com", "(www.x.com"), not only at a word boundary.
_AUTOLINK_START = re.compile(r"(?i)(?<=[a-z]:)(?=//)|(?<=www)(?=\.)|(?<=@)(?=[-\w])")
WORD_JOINER = "\u2060"


def no_autolink(text: str) -> str:
    """``text`` with an invisible word joiner inside every pattern GFM would turn into a link
    (``http:⁠//``, ``www⁠.``, ``a@⁠h``). The one place both renderers below break links: remark-gfm
    finds literal autolinks in the *decoded* text of a paragraph (after escapes and character
    references are read), so escaping alone never stops them; the joiner is part of that text.

    >>> no_autolink("_www.x.com http://h a@b.org").replace(WORD_JOINER, "|")
    '_www|.x.com http:|//h a@|b.org'
    """
    return _AUTOLINK_START.sub(WORD_JOINER, text)


def md_escape(text: object) -> str:
    r"""Text shown through Markdown literally (no Markdown, no HTML, no links, no images).

    >>> md_escape("Fresno,_California <b>")
    'Fresno\\,\\_California \\<b\\>'
    >>> md_escape("![x](p.png) [t](h) `id` $x$ :red[a] **b**")
    '\\!\\[x\\]\\(p\\.png\\) \\[t\\]\\(h\\) \\`id\\` \\$x\\$ \\:red\\[a\\] \\*\\*b\\*\\*'
    >>> md_escape(None), md_escape(3.5)
    ('None', '3\\.5')

    Literal autolinks are broken by an invisible word joiner:

    >>> md_escape("see HTTP://h.org, www.h.org or a@h.org").replace(WORD_JOINER, "|")
    'see HTTP\\:|\\/\\/h\\.org\\, www|\\.h\\.org or a\\@|h\\.org'
    """
    return _ASCII_PUNCT.sub(r"\\\1", no_autolink(hide_server_paths(str(text))))


def html_text(text: object) -> str:
    """Text placed inside HTML that Streamlit renders with ``unsafe_allow_html``: neither HTML
    nor Markdown, a line break stays a line break.

    >>> html_text('a <b> & "c"')
    'a &#60;b&#62; &#38; &#34;c&#34;'
    >>> html_text("![x](http://h/p.png)").replace(WORD_JOINER, "|")
    '&#33;&#91;x&#93;&#40;http&#58;|&#47;&#47;h&#47;p&#46;png&#41;'
    >>> html_text("one\\n\\n# two")
    'one<br><br>&#35; two'
    >>> html_text("Zürich 北京")
    'Zürich 北京'
    """
    s = no_autolink(hide_server_paths(str(text)).replace("\r\n", "\n").replace("\r", "\n"))
    return _ASCII_PUNCT.sub(lambda m: f"&#{ord(m.group(1))};", s).replace("\n", "<br>")
