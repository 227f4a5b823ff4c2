"""The app's frame: page config, session defaults, the shared sidebar and the page CSS, drawn once.

``app.py`` draws the frame (:func:`draw_frame`) and then runs the chosen page inside
:func:`pages_of_the_app`. Every page starts with :func:`page_frame`, which does nothing there.

Why pages still call something: a page can also run *outside* ``app.py``, and then nobody else
draws the frame.

* A fresh server serves the first visit to a page address (``/models``) in Streamlit's old
  ``pages/`` directory mode: ``pages/models.py`` runs on its own. :func:`page_frame` leaves that
  mode (``components.navigation.leave_pages_directory_mode``: a rerun through ``app.py``).
* ``AppTest.from_file("pages/sweeps.py")`` and AppTest's ``switch_page`` run a page file on its
  own, and there is no rerun to go to: the page must still get its config, state and sidebar.

So :func:`page_frame` is idempotent per run: under ``app.py`` it sees the frame is already drawn
(a per-thread flag set by :func:`pages_of_the_app` for the duration of the page; each session's
script runs on its own thread) and returns; on its own it draws the frame itself. Either way,
``st.set_page_config`` and the sidebar run exactly once per script run.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from components import session_memory
from components.loaders import start_warm_start
from components.state import init_state, sidebar_settings
from core.render.highlight import CSS

PAGE_CONFIG = {"page_title": "QA Robustness Explorer", "page_icon": "🔎", "layout": "wide"}

# Streamlit pads the page 6rem from the top, for a header bar that holds only the menu, on the right:
# with 2rem, an item's passage on Ask is on the first screen at 1400x900. Tabs that do not fit the
# page's width wrap onto more lines: in one line, Heatmaps' ten ran behind an arrow at 800 px (issue 53).
FRAME_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 2rem; }
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; }
</style>"""

_run = threading.local()


def draw_frame() -> None:
    """Page config, the session's defaults, the shared sidebar settings and the page CSS.

    Every page is wide: Streamlit's narrow centred column (736 px) squeezes the heatmap and the
    answers side by side.
    """
    st.set_page_config(**PAGE_CONFIG)
    start_warm_start()   # once per server process: the first screen's models load meanwhile
    session_memory.watch_session()   # closed, results and all, once its browser has gone
    init_state()
    sidebar_settings()
    st.html(CSS + FRAME_CSS)   # style tags only: Streamlit puts them where they take no room


@contextmanager
def pages_of_the_app() -> Iterator[None]:
    """While the page chosen by ``app.py``'s navigation runs: its frame is drawn already."""
    _run.framed = True
    try:
        yield
    finally:   # st.rerun / st.stop / st.switch_page leave by an exception: the flag goes with them
        _run.framed = False


def page_frame() -> None:
    """The first line of every page: nothing under ``app.py``; on its own, the frame (see module doc)."""
    if getattr(_run, "framed", False):
        return
    from components.navigation import leave_pages_directory_mode

    leave_pages_directory_mode()   # on a real server's first visit to a page address: reruns via app.py
    draw_frame()


def run_output():
    """A place, made on every run, for what only some runs draw: a model's load line, a progress
    bar, an LLM's reply as it is written, a message about what the run did. A run that draws
    them draws them in ``run_output().container()``; on the other runs it stays empty and takes
    no room (an empty ``st.empty()`` adds no gap; an empty container would).

    Drawn straight into the page, such an element moves everything after it by one place on the
    next run, and the browser draws an expander or tabs whose place changed as new ones: closed,
    or on the first tab (Ask's counterfactual panel closed at the first word typed in it after an
    answer)."""
    return st.empty()
