"""The sweep database both sweep pages read: a picker shared between them, confined to the roots.

The browser never names a path. The picker offers
  * the default database (QAX_SWEEP_DB, else ``runs/sweeps.sqlite`` under the repository, the
    CLI's default), even before it exists;
  * every sweep database found under the roots (:func:`core.config.sweep_db_roots`: QAX_SWEEP_DB's
    folder, ``runs/``, the speech trials' folder, QAX_EXTRA_ROOTS, a few levels deep); a file that
    is not a sweep store (another application's database, a text file) is not offered;
  * on the Sweeps page, "New sweep database": a file NAME only (:func:`core.config.safe_file_name`),
    placed in the first root; the file is created when a sweep starts, never before.
Whatever is chosen is checked again with :func:`core.config.confine` before use, and reading opens
read-only (core.sweeps.analysis.report), so looking at a database can never change it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from components.text import md_escape
from core import config
from core.io.sqlite_db import sqlite_kind
from core.sweeps.analysis import report as report
from core.sweeps.store import Store, StoreError

STATE_KEY = "sweep_db"
NEW = "\x00new"          # the picker's "new database" entry (no file name can hold a NUL)
SUFFIXES = (".sqlite", ".sqlite3", ".db")
_DEPTH = 4               # folder levels searched below each root
_LIMIT = 200             # databases offered at most


def default_db_path() -> str:
    """The default sweep database, absolute (QAX_SWEEP_DB, else runs/sweeps.sqlite)."""
    return str(config.sweep_db_default())


def is_sweep_store(path: Path) -> bool:
    """True when ``path`` opens read-only as a sweep database (nothing is written to find out)."""
    try:
        with Store(path, readonly=True):
            return True
    except (StoreError, OSError, ValueError):
        return False


@st.cache_data(ttl=10, show_spinner=False)
def find_sweep_dbs(roots: tuple[str, ...]) -> list[str]:
    """Sweep databases under ``roots`` (symlinks not followed, hidden folders skipped)."""
    found: list[str] = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for folder, dirs, files in os.walk(root):
            if len(Path(folder).relative_to(root).parts) >= _DEPTH:
                dirs[:] = []
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                p = Path(folder) / f
                if (f.endswith(SUFFIXES) and config.within(p, roots) and str(p.resolve()) not in found
                        and is_sweep_store(p)):
                    found.append(str(p.resolve()))
            if len(found) >= _LIMIT:
                return found
    return found


def label(path: str) -> str:
    """How a database is shown: relative to the repository when under it, else in full."""
    if path == NEW:
        return "➕ New sweep database…"
    p = Path(path)
    try:
        return str(p.relative_to(config.repo_root()))
    except ValueError:
        return config.shown_path(p)


@dataclass
class DbChoice:
    """What the picker chose: ``path`` to use, or ``error`` (a refused choice) or ``hint`` (nothing
    chosen yet) saying why there is none. ``new``: the file does not exist yet."""

    path: Path | None
    error: str | None = None
    new: bool = False
    hint: str | None = None


def db_picker(key: str, *, allow_new: bool = False) -> DbChoice:
    """The database picker (remembered across pages). ``allow_new``: offer "New sweep database"."""
    roots = config.sweep_db_roots()
    default = default_db_path()
    options = [default] + [p for p in find_sweep_dbs(tuple(map(str, roots))) if p != default]
    remembered = st.session_state.get(STATE_KEY)
    if remembered and remembered not in options and config.within(remembered, roots):
        options.append(remembered)   # a new database chosen on the Sweeps page, maybe not created yet
    if allow_new:
        options.append(NEW)
    widget = f"{key}_db"
    if st.session_state.get(widget) not in options:
        st.session_state[widget] = remembered if remembered in options else default
    choice = st.selectbox("Sweep database", options, key=widget, format_func=label,
                          help="Sweep databases found in the folders this server allows (QAX_SWEEP_DB's "
                               "folder, runs/, the speech trials, QAX_EXTRA_ROOTS)."
                               + (" A new one is created when its first sweep starts." if allow_new else ""))
    if choice == NEW:
        return _new_db(key, roots[0])
    try:
        path = config.confine(choice, roots, "sweep database")
    except config.ConfinementError as e:   # never offered; checked again all the same
        return DbChoice(None, str(e))
    st.session_state[STATE_KEY] = str(path)
    return DbChoice(path)


def _new_db(key: str, folder: Path) -> DbChoice:
    name = st.text_input("New database file name", key=f"{key}_db_new", placeholder="experiments.sqlite",
                         help=f"A file name only (letters, digits, '.', '_', '-'), created in {folder} "
                              "when the first sweep starts.")
    if not name.strip():
        return DbChoice(None, new=True, hint="Type a file name for the new sweep database.")
    try:
        path = config.confine(folder / config.safe_file_name(name, SUFFIXES), [folder], "sweep database")
    except ValueError as e:   # ConfinementError is one
        return DbChoice(None, str(e), new=True)
    kind = sqlite_kind(path)
    if kind != "missing" and not is_sweep_store(path):
        return DbChoice(None, f"{path.name} already exists in {folder} and is not a sweep database: "
                              "choose another name.", new=True)
    st.session_state[STATE_KEY] = str(path)
    return DbChoice(path, new=kind == "missing")


def db_path_input(key: str) -> Path:
    """The database picker without "new" (the Heatmaps page reads only); the chosen path."""
    choice = db_picker(key)
    if choice.path is None:
        st.error(md_escape(choice.error or choice.hint or "No sweep database chosen."))
        st.stop()
    return choice.path


def stored_sweeps_or_stop(db_path: Path, missing: str) -> list:
    """The sweeps stored in ``db_path`` (opened read-only); otherwise say why there are none
    (``missing`` when the file does not exist) and stop the page."""
    if not db_path.exists():
        st.info(missing)   # the caller's text; the path in it is the server's, never typed
        st.stop()
    try:
        sweeps = report.list_sweeps(db_path)
    except (StoreError, Exception) as e:  # a foreign or damaged file must not take the page down
        st.error(md_escape(f"Cannot read {config.shown_path(db_path)}: {e}"))
        st.stop()
    if not sweeps:
        st.info("The database holds no sweep yet.")
        st.stop()
    return sweeps
