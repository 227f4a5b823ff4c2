"""Mark an answer span in a passage: by typing its text, by a word range, or by character offsets.

Streamlit has no widget for selecting text inside rendered HTML, so three robust ways are
offered, all giving the same thing, character offsets [start, end) into the passage:

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

from components.text import md_escape
from core.collect.beat import find_occurrences, span_tokens

MODES = ("Answer text", "Word range", "Character offsets")


def _snippet(context: str, start: int, end: int, width: int = 30) -> str:
    left = context[max(0, start - width):start].replace("\n", " ")
    right = context[end:end + width].replace("\n", " ")
    return f"…{left}[{context[start:end]}]{right}…"


def span_keys(key: str) -> list[str]:
    """Session-state keys of the widgets below (a caller clears them for a new passage)."""
    return [f"{key}_span_mode", f"{key}_answer_text", f"{key}_words", f"{key}_start",
            f"{key}_end"]


def span_picker(key: str, context: str) -> tuple[int, int] | None:
    """Widgets to mark an answer in ``context``; returns (start, end) or None (shown why)."""
    mode = st.radio("Mark the answer by", MODES, horizontal=True, key=f"{key}_span_mode")
    if mode == "Answer text":
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
