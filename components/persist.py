"""Per-page widget state that survives leaving the page and coming back.

Streamlit forgets a keyed widget's value at the end of any run that does not draw it: going to
another page, or hiding the widget on the same page (Ask's "Paste a context" hides the dataset
and item pickers), resets it to its default. :func:`keep` is called just before a widget is
drawn: it copies the widget's current value to a shadow key that Streamlit never removes (it
belongs to no widget), or, when Streamlit has dropped the widget's value, puts the shadow's
value back first. Each page keeps its own keys (``ask_models``, ``var_models``, ...), so one
page's choice never leaks into another's.

:func:`hand_over` sets another page's widgets before switching to it ("Perturb this question"
on Ask opens Variants on the same item and question).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

__all__ = ["SHADOW", "keep", "keep_all", "hand_over", "forget"]

SHADOW = "_kept:"
DEFAULT = "_default:"   # the default a follow_default widget was last given


def keep(key: str, options: Sequence | None = None, default: Any = None, *, follow_default: bool = False) -> None:
    """Call right before drawing the widget ``key``, and only in a run that draws it: a value put
    back in a run that hides the widget (Ask's context under "Dataset item") is lost when Streamlit
    draws the widget again, which then starts empty.

    ``options``: for a choice widget, the options it will offer; a kept value that is no longer
    among them is dropped (a list value is filtered), so a stale choice never reaches Streamlit.
    ``default``: the value the widget starts with when nothing is kept (pass it here, not to
    the widget, so the widget never gets both a default and a session value).
    ``follow_default``: while the widget still holds the default it was given (the user has not
    chosen), a new default replaces it (the Gallery's "newest sweeps" take in a sweep stored since).
    """
    s = st.session_state
    shadow = SHADOW + key
    if follow_default:
        given = s.get(DEFAULT + key)
        current = s[key] if key in s else s.get(shadow)
        if given is not None and current == given and default != given:
            forget(key)
        s[DEFAULT + key] = default
    if key not in s and shadow in s:
        s[key] = s[shadow]
    elif key not in s and default is not None:
        s[key] = default
    if key in s and options is not None:
        value = s[key]
        if isinstance(value, list):
            kept = [v for v in value if v in options]
            if kept != value:
                s[key] = kept
        elif value not in options:
            del s[key]
            s.pop(shadow, None)
            if default is not None and default in options:
                s[key] = default
            return
    if key in s:
        s[shadow] = s[key]


def keep_all(keys: Sequence[str]) -> None:
    """:func:`keep` for free-form widgets (text, numbers, radios with fixed options)."""
    for key in keys:
        keep(key)


def hand_over(values: Mapping[str, Any]) -> None:
    """Set widgets of a page that is not drawn in this run (and their shadows), so that page
    opens with these values."""
    for key, value in values.items():
        st.session_state[key] = value
        st.session_state[SHADOW + key] = value


def forget(key: str) -> None:
    """Drop a widget's value and its shadow (the widget starts from its default next time)."""
    st.session_state.pop(key, None)
    st.session_state.pop(SHADOW + key, None)
