"""The box a visitor pastes a context into (Ask, Variants), refused at input past the engine's limit.

The browser drops a paste longer than the text area's ``max_chars`` (it is never sent), and
Streamlit cuts a longer value that arrives anyway to ``max_chars``. The box takes one character
more than :data:`core.qa.engine.MAX_CONTEXT_CHARS`, so such a value is refused here, with the limit
in the message, before the language guess or a model runs on it, instead of being cut silently.
"""
from __future__ import annotations

import streamlit as st

from core.qa.engine import MAX_CONTEXT_CHARS


def context_box(key: str, height: int) -> str:
    """The pasted context (empty when refused); the limit is said under the box."""
    context = st.text_area("Context", height=height, key=key, max_chars=MAX_CONTEXT_CHARS + 1,
                           placeholder="Paste a paragraph the answer should come from.")
    st.caption(f"At most {MAX_CONTEXT_CHARS:,} characters: the box does not take a longer paste.")
    if len(context) > MAX_CONTEXT_CHARS:
        st.error(f"The context is longer than {MAX_CONTEXT_CHARS:,} characters, the limit: paste a shorter one.")
        return ""
    return context
