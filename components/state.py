"""Shared app state and the sidebar settings every page shows.

Both are drawn once per run by the frame (components/frame.py: app.py, or a page run on its own);
``init_state`` only fills keys that are missing, so it is harmless on every rerun (idempotent).

The data directory is the server's setting (QAX_DATA_DIR, default ../shared/data): the sidebar
offers it or none (the bundled demo sets only), never a folder typed in the browser, which would
let a visitor read any SQuAD-shaped file on the server. :func:`current_data_dir` checks the
session's choice against the configured directory again on every call.
"""
from __future__ import annotations

import os

import streamlit as st

from components.text import md_escape
from core import config

DEFAULTS = {
    "data_dir": None,  # filled from QAX_DATA_DIR / ../shared/data on first run
    "threads": 0,
    "max_answer_tokens": 30,
    "backend": "default",  # core.qa.backends.selection.CHOICES: "default" = each model's card's choice
    "uploaded_datasets": {},  # name -> Dataset parsed from uploads (kept across pages)
}


def init_state() -> None:
    """The session's defaults (components.frame calls it once per run)."""
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


def data_dir_choices() -> list[str]:
    """What the sidebar offers: the configured data directory (when there is one), then ""
    (none: the bundled demo sets only)."""
    try:
        d = config.data_dir()
    except FileNotFoundError:
        d = None
    return ([str(d)] if d else []) + [""]


def current_data_dir():
    """The data directory chosen in the sidebar, or None. Only the configured one is ever
    returned, whatever the session holds."""
    from pathlib import Path

    d = st.session_state.get("data_dir") or ""
    return Path(d) if d and d in data_dir_choices() and Path(d).is_dir() else None


def sidebar_settings() -> None:
    """Data directory and engine settings, shown in the sidebar of every page."""
    with st.sidebar:
        st.markdown("### Settings")
        if err := st.session_state.pop("data_dir_error", None):
            st.error(md_escape(err))
        choices = data_dir_choices()
        if st.session_state["data_dir"] not in choices:
            st.session_state["data_dir"] = choices[0]
        st.session_state["data_dir"] = st.selectbox(
            "Data directory", choices, index=choices.index(st.session_state["data_dir"]), key="data_dir_pick",
            format_func=lambda d: config.shown_path(d, "the server's data directory") if d
            else "none (the bundled demo sets only)",
            help="Folder with xquad/, noiseqa/, squad/ ..., set on the server (QAX_DATA_DIR; default "
                 "../shared/data): the browser cannot point the app at another folder.",
        )
        with st.expander("Engine"):
            st.session_state["threads"] = st.number_input(
                "CPU threads (0 = policy)", 0, os.cpu_count() or 1, st.session_state["threads"],
                help="0: every core while a model answers alone, one thread each while others answer "
                     "too (other visitors, a sweep; QAX_THREADS sets the budget: core.qa.threads). A "
                     "number: always that many.")
            st.session_state["max_answer_tokens"] = st.number_input(
                "Max answer length (tokens)", 1, 200, st.session_state["max_answer_tokens"],
                help="The longest answer span a model may return (default 30 tokens, as the model cards' "
                     "figures were measured; python -m core.models.evaluate --max-answer-tokens). SQuAD answers are "
                     "short; a domain set with long gold answers (clauses, sentences) needs more, or every "
                     "long answer is cut and scores low. Part of the prediction cache key: sweeps run with "
                     "another cap are answered afresh.")
            if st.session_state["max_answer_tokens"] != DEFAULTS["max_answer_tokens"]:
                st.caption(f"Answers capped at {st.session_state['max_answer_tokens']} tokens (default "
                           f"{DEFAULTS['max_answer_tokens']}).")
            from core.qa.backends.selection import CHOICES

            if st.session_state.get("backend") not in CHOICES:
                st.session_state["backend"] = DEFAULTS["backend"]
            st.session_state["backend"] = st.selectbox(
                "Backend", CHOICES, index=CHOICES.index(st.session_state["backend"]), key="backend_pick",
                format_func=lambda b: "default (each model's)" if b == "default" else b,
                help="How the models run: default (each model's own: the fastest backend within 0.5 "
                     "XQuAD-en F1 of torch, as measured in its model card), torch (eager PyTorch, "
                     "the weights' own answers), torch-bf16 (bf16 weights: fast on a CPU with AMX or "
                     "AVX512-BF16, answers nearly always torch's), onnx (ONNX Runtime, same answers) "
                     "or onnx-int8 (int8 per token: answers may differ slightly). The first use of an "
                     "ONNX backend exports the model once into the cache. A backend that cannot run "
                     "here falls back to torch.",
            )
