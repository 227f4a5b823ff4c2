"""Keep a choice widget's remembered value valid when its options change.

A select box remembers its value by the option's *label*; when the labels change (another sweep,
another cell, another data set) Streamlit hands back the stale label string instead of an option.
Calling :func:`keep_valid` before drawing the widget replaces such a value with the first option
and filters a multiselect's values down to the current options. The value is *set*, not deleted:
with a key, the browser keeps showing its old label when the server merely forgets the value.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def keep_valid(key: str, options: Sequence) -> None:
    if key not in st.session_state:
        return
    value = st.session_state[key]
    if isinstance(value, list):
        kept = [v for v in value if v in options]
        if kept != value:
            st.session_state[key] = kept
    elif value not in options:
        if options:
            st.session_state[key] = options[0]
        else:
            del st.session_state[key]
