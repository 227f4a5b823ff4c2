"""The sweep database both sweep pages read: a picker shared between them, confined to the roots.

The browser never names a path. The picker offers
  * the default database (QAX_SWEEP_DB, else ``runs/sweeps.sqlite`` under the repository, the
    CLI's default), even before it exists;
  * every sweep database found under the roots (:func:`core.config.sweep_db_roots`: QAX_SWEEP_DB's
    folder, ``runs/``, the speech trials' folder, QAX_EXTRA_ROOTS, a few levels deep); a file that
    is not a sweep store (another application's database, a text file) is not offered;
  * on the Sweeps page, "New sweep database": a file NAME only (:func:`core.config.safe_file_name`),
    placed in the first root; the file is created when a sweep starts, never before.
  * on Heatmaps and Gallery, "Bundled demo sweep": the shipped demo (core.explore.demo_sweep), read
    from the cache. It is chosen by itself while no database in the roots holds a sweep, so a fresh
    clone opens on something real; the user's own sweeps replace it as soon as there are any.
Whatever is chosen is checked again with :func:`core.config.confine` before use, and reading opens
read-only (core.sweeps.analysis.stored, the read handle), so looking at a database can never change it.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from components.text import md_escape
from core import config
from core.explore import demo_sweep
from core.io.sqlite_db import sqlite_kind
from core.sweeps.analysis.stored import is_sweep_database, list_sweeps
from core.sweeps.store import StoreError

STATE_KEY = "sweep_db"
NEW = "\x00new"          # the picker's "new database" entry (no file name can hold a NUL)
DEMO = "\x00demo"        # the picker's "bundled demo sweep" entry
SUFFIXES = (".sqlite", ".sqlite3", ".db")
_DEPTH = 4               # folder levels searched below each root
_LIMIT = 200             # databases offered at most


def default_db_path() -> str:
    """The default sweep database, absolute (QAX_SWEEP_DB, else runs/sweeps.sqlite)."""
    return str(config.sweep_db_default())


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
                        and is_sweep_database(p)):
                    found.append(str(p.resolve()))
            if len(found) >= _LIMIT:
                return found
    return found


def label(path: str) -> str:
    """How a database is shown: relative to the repository when under it, else in full."""
    if path == NEW:
        return "➕ New sweep database…"
    if path == DEMO:
        return "Bundled demo sweep (read-only)"
    p = Path(path)
    try:
        return str(p.relative_to(config.repo_root()))
    except ValueError:
        return config.shown_path(p)


@dataclass
class DbChoice:
    """What the picker chose: ``path`` to use, or ``error`` (a refused choice) or ``hint`` (nothing
    chosen yet) saying why there is none. ``new``: the file does not exist yet. ``demo``: the
    shipped demo sweep's store."""

    path: Path | None
    error: str | None = None
    new: bool = False
    hint: str | None = None
    demo: bool = False


def has_sweeps(path: str | Path) -> bool:
    """True when ``path`` is a sweep database holding at least one sweep."""
    try:
        return Path(path).is_file() and bool(list_sweeps(path))
    except Exception:   # foreign or damaged: nothing of the user's to open on
        return False


def first_with_sweeps(options: list[str]) -> str | None:
    """The first database among ``options`` that holds a sweep, or None."""
    return next((p for p in options if p not in (NEW, DEMO) and has_sweeps(p)), None)


def db_picker(key: str, *, allow_new: bool = False, allow_demo: bool = False) -> DbChoice:
    """The database picker (remembered across pages). ``allow_new``: offer "New sweep database";
    ``allow_demo``: offer the bundled demo sweep, and open on it while no database holds a sweep."""
    roots = config.sweep_db_roots()
    default = default_db_path()
    options = [default] + [p for p in find_sweep_dbs(tuple(map(str, roots))) if p != default]
    remembered = st.session_state.get(STATE_KEY)
    if remembered and remembered not in options and config.within(remembered, roots):
        options.append(remembered)   # a new database chosen on the Sweeps page, maybe not created yet
    if allow_new:
        options.append(NEW)
    if allow_demo:
        options.append(DEMO)
    widget, auto = f"{key}_db", f"{key}_db_demo_auto"
    if allow_demo and st.session_state.get(widget) == DEMO and st.session_state.get(auto):
        own = first_with_sweeps(options)   # the demo was chosen for the user: their sweeps replace it
        if own is not None:
            st.session_state[widget] = own
            st.session_state[auto] = False
    if st.session_state.get(widget) not in options:
        own = first_with_sweeps(options)
        if allow_demo and own is None:   # nothing of the user's: open on the demo
            st.session_state[widget], st.session_state[auto] = DEMO, True
        elif remembered in options and (not allow_demo or first_with_sweeps([remembered]) is not None):
            st.session_state[widget] = remembered
        else:   # a page that reads sweeps opens on one that holds some, not on an empty default (Sweeps' pick)
            st.session_state[widget] = own if allow_demo else default
    choice = st.selectbox("Sweep database", options, key=widget, format_func=label,
                          help="Sweep databases found in the folders this server allows (QAX_SWEEP_DB's "
                               "folder, runs/, the speech trials, QAX_EXTRA_ROOTS)."
                               + (" A new one is created when its first sweep starts." if allow_new else ""))
    if choice == NEW:
        return _new_db(key, roots[0])
    if choice == DEMO:
        try:
            return DbChoice(demo_sweep.shipped_store(), demo=True)
        except (OSError, sqlite3.Error) as e:   # a read-only cache, a damaged checkout: say so
            return DbChoice(None, f"The bundled demo sweep could not be opened: {e}", demo=True)
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
    if kind != "missing" and not is_sweep_database(path):
        return DbChoice(None, f"{path.name} already exists in {folder} and is not a sweep database: "
                              "choose another name.", new=True)
    st.session_state[STATE_KEY] = str(path)
    return DbChoice(path, new=kind == "missing")


def db_path_input(key: str) -> DbChoice:
    """The database picker without "new", with the demo (the Heatmaps page reads only): the choice,
    which has a path."""
    choice = db_picker(key, allow_demo=True)
    if choice.path is None:
        st.error(md_escape(choice.error or choice.hint or "No sweep database chosen."))
        st.stop()
    return choice


def demo_caption(choice: DbChoice) -> None:
    """Say that the bundled demo is shown, and how the user's own sweeps replace it."""
    if choice.demo:
        st.info("Showing the **bundled demo sweep**: the 12 questions of the bundled demo set, answered by two "
                "shipped models under five perturbations (six specs: character deletion at one and two "
                "characters), shipped with the app as text "
                "(`python -m core.explore.demo_sweep` rebuilds it). Run your own sweep on the **Sweeps** page: "
                "it replaces the demo here as soon as it is stored.")


def stored_sweeps_or_stop(db_path: Path, missing: str) -> list:
    """The sweeps stored in ``db_path`` (opened read-only); otherwise say why there are none
    (``missing`` when the file does not exist) and stop the page."""
    if not db_path.exists():
        st.info(missing)   # the caller's text; the path in it is the server's, never typed
        st.stop()
    try:
        sweeps = list_sweeps(db_path)
    except (StoreError, Exception) as e:  # a foreign or damaged file must not take the page down
        st.error(md_escape(f"Cannot read {config.shown_path(db_path)}: {e}"))
        st.stop()
    if not sweeps:
        st.info("The database holds no sweep yet.")
        st.stop()
    return sweeps
