"""Small text helpers for the pages, and the escaping of untrusted text (:mod:`core.render.text`,
re-exported: the rule it follows is documented there, docs/SECURITY.md). Counts in words are
:func:`core.render.words.count`.
"""
from __future__ import annotations

from core.render.text import WORD_JOINER, html_text, md_escape, no_autolink

__all__ = ["md_escape", "html_text", "no_autolink", "WORD_JOINER", "choose_hint", "sentence"]


def choose_hint(missing: dict[str, bool], action: str) -> str | None:
    """What a disabled button waits for, or None when nothing is missing.

    >>> choose_hint({"at least one perturbation": True, "at least one model": False}, "to start a sweep")
    'Choose at least one perturbation to start a sweep.'
    >>> choose_hint({"a data set": True, "a model": True}, "first")
    'Choose a data set and a model first.'
    >>> choose_hint({"a model": False}, "first") is None
    True
    """
    wanted = [what for what, is_missing in missing.items() if is_missing]
    return f"Choose {' and '.join(wanted)} {action}." if wanted else None


def sentence(text: object) -> str:
    """``text`` ending with one stop: a full stop is added unless it already ends with one (a message
    that ends with its own period, libsndfile's "Format not recognised.", read "recognised.. Please").

    >>> sentence("Format not recognised."), sentence("no words"), sentence("is the microphone on?")
    ('Format not recognised.', 'no words.', 'is the microphone on?')
    """
    text = str(text).rstrip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."
