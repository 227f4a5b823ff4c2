"""Shared app state and the sidebar settings every page shows.

A first visit straight to a page URL skips app.py, so every page calls ``init_state()`` itself;
it only fills keys that are missing, so calling it on every rerun is harmless (idempotent).
"""
from __future__ import annotations

import os

import streamlit as st

from core import config

DEFAULTS = {
    "data_dir": None,  # filled from QAX_DATA_DIR / ../shared/data on first run
    "selected_models": None,  # None = "all installed models" until the user chooses
    "threads": 0,
    "max_answer_tokens": 30,
    "uploaded_datasets": {},  # name -> Dataset parsed from uploads (kept across pages)
}


def init_state() -> None:
    # Every page says it is wide: a page opened straight by its URL, or served on its own, would
    # otherwise fall back to Streamlit's narrow centred column (736 px), which squeezes the heatmap.
    st.set_page_config(page_title="QA Robustness Explorer", page_icon="🔎", layout="wide")
    for key, value in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = value.copy() if isinstance(value, dict) else value
    if st.session_state["data_dir"] is None:
        try:
            d = config.data_dir()
        except FileNotFoundError as e:
            st.session_state["data_dir_error"] = str(e)
            d = None
        st.session_state["data_dir"] = str(d) if d else ""


def current_data_dir():
    """The data directory chosen in the sidebar, or None."""
    from pathlib import Path

    d = st.session_state.get("data_dir") or ""
    return Path(d) if d and Path(d).is_dir() else None


def sidebar_settings() -> None:
    """Data directory and engine settings, shown in the sidebar of every page."""
    with st.sidebar:
        st.markdown("### Settings")
        if err := st.session_state.pop("data_dir_error", None):
            st.error(err)
        new = st.text_input(
            "Data directory",
            value=st.session_state["data_dir"],
            help="Folder with xquad/, noiseqa/, squad/ ... (env var QAX_DATA_DIR; default ../shared/data). "
            "Leave empty to use only the bundled demo set.",
        )
        if new != st.session_state["data_dir"]:
            if new and not os.path.isdir(new):
                st.error(f"Not a folder: {new}")
            else:
                st.session_state["data_dir"] = new
        with st.expander("Engine"):
            st.session_state["threads"] = st.number_input(
                "CPU threads (0 = all)", 0, os.cpu_count() or 1, st.session_state["threads"]
            )
            st.session_state["max_answer_tokens"] = st.number_input(
                "Max answer length (tokens)", 1, 200, st.session_state["max_answer_tokens"]
            )
