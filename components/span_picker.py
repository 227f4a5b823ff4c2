"""Mark an answer span in a passage: by selecting it with the mouse, by typing its text, by a word
range, or by character offsets, all giving the same thing, character offsets [start, end) into the
passage:

* **Select in the passage** (default): the passage is drawn by an inline Streamlit Components v2
  component (:data:`PASSAGE_SELECT`, no build step) that returns the offsets of the text selected
  with the mouse (or the keyboard); the chosen span stays highlighted. The passage goes in as
  data and is set as text (``textContent``), never as HTML.

* **Answer text** (default): type or paste the answer; its first occurrence in the passage is
  taken (case-sensitive if it occurs that way, else case-insensitive), and when it occurs more
  than once a select box picks the occurrence, each shown with its surroundings.
* **Word range**: a range slider over the passage's words and punctuation marks.
* **Character offsets**: two number inputs, for exact control.

The caller shows the chosen span highlighted before anything is submitted.
"""
from __future__ import annotations

import hashlib

import streamlit as st

from components import persist
from components.text import md_escape
from core.collect.beat import find_occurrences, span_tokens

MODES = ("Select in the passage", "Answer text", "Word range", "Character offsets")
SELECT = MODES[0]

# The passage as text nodes (the chosen span in a <mark>); a mouseup or keyup inside it with a
# selection sends the selection's UTF-16 offsets in the passage as the state value "span".
_JS = """
export default function(component) {
  const { data, parentElement, setStateValue } = component;
  let box = parentElement.querySelector('.qax-pick');
  if (!box) {
    box = document.createElement('div');
    box.className = 'qax-pick';
    box.tabIndex = 0;
    parentElement.appendChild(box);
  }
  const text = data.text || '';
  const span = data.span;
  const key = JSON.stringify([text, span]);
  if (box.dataset.shown !== key) {
    box.dataset.shown = key;
    box.replaceChildren();
    if (span && span[0] < span[1]) {
      const mark = document.createElement('mark');
      mark.textContent = text.slice(span[0], span[1]);
      box.append(document.createTextNode(text.slice(0, span[0])), mark,
                 document.createTextNode(text.slice(span[1])));
    } else {
      box.append(document.createTextNode(text));
    }
  }
  const offsetOf = (node, offset) => {
    const r = document.createRange();
    r.setStart(box, 0);
    r.setEnd(node, offset);
    return r.toString().length;
  };
  const send = () => {
    const root = parentElement.getRootNode();
    const sel = (root.getSelection ? root.getSelection() : null) || document.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const range = sel.getRangeAt(0);
    if (!box.contains(range.startContainer) || !box.contains(range.endContainer)) return;
    const a = offsetOf(range.startContainer, range.startOffset);
    const b = offsetOf(range.endContainer, range.endOffset);
    if (b > a) setStateValue('span', [a, b]);
  };
  box.onmouseup = send;
  box.onkeyup = send;
}
"""
_CSS = """
.qax-pick { font-size: 1.05rem; line-height: 1.9; white-space: pre-wrap; cursor: text;
            border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem; padding: 0.75rem 1rem;
            user-select: text; }
.qax-pick mark { background: #0072B2; color: white; border-radius: 3px; padding: 0 2px; }
"""
PASSAGE_SELECT = st.components.v2.component("qax_passage_select", js=_JS, css=_CSS)


def from_utf16(text: str, offset: int) -> int:
    """A browser's string offset (UTF-16 code units) as a Python index (code points) into ``text``.

    >>> from_utf16("a😀b", 3), from_utf16("中文", 1), from_utf16("abc", 9)
    (2, 1, 3)
    """
    units = 0
    for i, ch in enumerate(text):
        if units >= offset:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def selected_span(text: str, raw) -> tuple[int, int] | None:
    """The component's state value (UTF-16 [start, end]) as a span of ``text`` without the
    whitespace at its ends; None when it is not a span of some text.

    >>> selected_span("Paris is big.", [0, 6]), selected_span("Paris", [2, 2]), selected_span("a", None)
    ((0, 5), None, None)
    """
    if not isinstance(raw, (list, tuple)) or len(raw) != 2 or not all(isinstance(v, int) for v in raw):
        return None
    a, b = from_utf16(text, max(0, raw[0])), from_utf16(text, max(0, raw[1]))
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if b > a else None


def passage_select(key: str, context: str, shown: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """The passage, selectable with the mouse; returns the selected span (None before any)."""
    s = st.session_state
    raw = (s.get(f"{key}_mouse") or {}).get("span") if hasattr(s.get(f"{key}_mouse"), "get") else None
    span = selected_span(context, raw)
    shown = span or shown
    # the state's offsets are the browser's (UTF-16): the highlight is drawn with those units too
    as_utf16 = None
    if shown:
        as_utf16 = [len(context[:shown[0]].encode("utf-16-le")) // 2, len(context[:shown[1]].encode("utf-16-le")) // 2]
    result = PASSAGE_SELECT(data={"text": context, "span": as_utf16}, key=f"{key}_mouse",
                            on_span_change=lambda: None)
    span = selected_span(context, getattr(result, "span", None)) or span
    return span



def _snippet(context: str, start: int, end: int, width: int = 30) -> str:
    left = context[max(0, start - width):start].replace("\n", " ")
    right = context[end:end + width].replace("\n", " ")
    return f"…{left}[{context[start:end]}]{right}…"


def reset_span(key: str) -> None:
    """A clean answer form for a new passage; call before :func:`span_picker` draws. The mode and
    the answer text are set rather than dropped: a dropped value is the default on the server
    while the browser keeps drawing the old one ("Answer text" shown checked over the mouse
    selection's form, a click on it doing nothing). The offsets and the selection, which depend on
    the passage, are dropped."""
    s = st.session_state
    s[f"{key}_span_mode"] = SELECT
    persist.forget(f"{key}_answer_text")   # its kept copy too: the old passage's answer must not come back
    s[f"{key}_answer_text"] = ""
    for k in (f"{key}_words", f"{key}_start", f"{key}_end", f"{key}_mouse"):
        s.pop(k, None)


def span_picker(key: str, context: str) -> tuple[int, int] | None:
    """Widgets to mark an answer in ``context``; returns (start, end) or None (shown why)."""
    persist.keep(f"{key}_span_mode")   # kept across a visit to another page (components/persist.py)
    mode = st.radio("Mark the answer by", MODES, horizontal=True, key=f"{key}_span_mode")
    if mode == SELECT:
        span = passage_select(key, context)
        if span is None:
            st.caption("Select the answer in the passage with the mouse.")
        return span
    if mode == "Answer text":
        persist.keep(f"{key}_answer_text")
        text = st.text_input("Answer text (copy it from the passage)", key=f"{key}_answer_text")
        if not text.strip():
            st.info("Type the answer exactly as it appears in the passage.")
            return None
        found = find_occurrences(context, text)
        if not found:
            st.error(f"“{md_escape(text.strip())}” does not occur in the passage. The answer must be a "
                     "span of the passage text.")
            return None
        if len(found) == 1:
            return found[0]
        # A key per (text, count): a new text starts again at its first occurrence.
        digest = hashlib.sha1(f"{text}|{len(found)}".encode()).hexdigest()[:10]
        i = st.selectbox(f"It occurs {len(found)} times: which one?", range(len(found)),
                         format_func=lambda k: f"{k + 1}: {_snippet(context, *found[k])}",
                         key=f"{key}_occurrence_{digest}")
        return found[i]
    tokens = span_tokens(context)
    if not tokens:
        st.error("The passage has no words to select.")
        return None
    if mode == "Word range":
        a, b = st.select_slider(
            "Answer words (drag both ends)", options=list(range(len(tokens))),
            value=(0, min(1, len(tokens) - 1)),
            format_func=lambda k: f"{k + 1}: {context[tokens[k][0]:tokens[k][1]]}",
            key=f"{key}_words")
        return tokens[a][0], tokens[b][1]
    c1, c2 = st.columns(2)
    n = len(context)
    start = int(c1.number_input("Start character", 0, n - 1, tokens[0][0], key=f"{key}_start"))
    end = int(c2.number_input("End character (exclusive)", 1, n, tokens[0][1], key=f"{key}_end"))
    if end <= start:
        st.error(f"The end ({end}) must come after the start ({start}).")
        return None
    return start, end
