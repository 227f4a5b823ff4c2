"""A long job run in the page's own script run: its bar, with Cancel beside it.

Cancel works the way any widget does while a run is under way: its click asks Streamlit for a
rerun, and Streamlit ends the run under way at its next call, here the job's next progress
report, so the job stops within one of its steps (keep them short: a chunk of questions, one
test case, one variant) and keeps nothing of what it had done. The click's callback leaves a flag
that the next run turns into one line in the job's place (:func:`say_if_cancelled`).

Sweeps run on a background thread instead (components/job_progress.py): they keep every chunk they
commit and resume, which a job that only fills a page's table has no need for.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import streamlit as st

from components.text import md_escape

CANCELLED = "_cancelled:"   # + the job's key: set by its Cancel, read once by the next run

Progress = Callable[[float, str], None]   # (fraction done, what it is doing)


@contextlib.contextmanager
def progress_with_cancel(key: str, text: str, where=None) -> Iterator[Progress]:
    """The bar (``text`` until the first report) with Cancel beside it while the block runs, both
    gone after it; yields ``progress(fraction, text)``. ``where``: an ``st.empty()`` to draw them
    in (left empty after), else a new one here."""
    slot = where if where is not None else st.empty()
    row = slot.container(horizontal=True, vertical_alignment="bottom")   # Cancel beside the bar, never under it
    bar = row.progress(0.0, text=md_escape(text))
    row.button("Cancel", key=f"{key}_cancel", on_click=st.session_state.__setitem__, args=(CANCELLED + key, True))

    def progress(fraction: float, text: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=md_escape(text))
    try:
        yield progress
    finally:
        slot.empty()


def say_if_cancelled(key: str, where, what: str) -> None:
    """On the run after the job ``key`` was cancelled: "Cancelled: ``what``" in ``where`` (the
    job's place, components.frame.run_output, so nothing after it moves)."""
    if st.session_state.pop(CANCELLED + key, False):
        where.info(md_escape(f"Cancelled: {what}"))


def counted(progress: Progress) -> Callable[[int, int, str], None]:
    """``progress`` for a job that reports ``(done, total, text)`` (core's progress callbacks)."""
    return lambda done, total, text: progress(done / max(total, 1), text)
