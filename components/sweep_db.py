"""The sweep database both sweep pages read: a path input shared between them.

Default: the environment variable QAX_SWEEP_DB, else ``runs/sweeps.sqlite`` under the repository
(the CLI's default, ``python -m core.sweep --db``). A relative path is taken from the repository
root, so the app finds the CLI's sweeps whatever folder it was started from.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from components.text import md_escape
from core import sweep_report as report
from core.config import repo_root
from core.store import StoreError
from core.sweep import DEFAULT_DB

STATE_KEY = "sweep_db"


def default_db_path() -> str:
    return os.environ.get("QAX_SWEEP_DB") or DEFAULT_DB


def resolve(path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else repo_root() / p


def db_path_input(key: str) -> Path:
    """A text input for the database file (remembered across pages); returns the resolved path."""
    if STATE_KEY not in st.session_state:
        st.session_state[STATE_KEY] = default_db_path()
    widget = f"{key}_db"
    if widget not in st.session_state:
        st.session_state[widget] = st.session_state[STATE_KEY]
    value = st.text_input("Sweep database (SQLite file)", key=widget,
                          help="Where sweeps are stored: env QAX_SWEEP_DB, default runs/sweeps.sqlite "
                               "(the CLI's default). Relative paths start at the repository root.")
    st.session_state[STATE_KEY] = value.strip() or default_db_path()
    return resolve(st.session_state[STATE_KEY])


def stored_sweeps_or_stop(db_path: Path, missing: str) -> list:
    """The sweeps stored in ``db_path``; otherwise say why there are none (``missing`` when the
    file does not exist) and stop the page."""
    if not db_path.is_file():
        st.info(missing)
        st.stop()
    try:
        sweeps = report.list_sweeps(db_path)
    except (StoreError, Exception) as e:  # a foreign or damaged file must not take the page down
        st.error(md_escape(f"Cannot read {db_path}: {e}"))
        st.stop()
    if not sweeps:
        st.info("The database holds no sweep yet.")
        st.stop()
    return sweeps
