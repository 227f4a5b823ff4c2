"""A sweep running in the background (core.sweeps.job.SweepJob): its progress bar and its Cancel.

Shared by the Sweeps page and the speech trial's scoring, which both run ``run_sweep`` on a
background thread and poll it from an auto-refreshing fragment: the bar names the sweep and says
how many result rows are done and about how long is left; Cancel stops it after the chunk in
flight (everything committed is kept, and the same configuration resumes).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from components.text import md_escape
from core.sweeps.job import SweepJob
from core.sweeps.progress import Eta, format_seconds


def job_name(job: SweepJob) -> str:
    return job.result.name if job.result else (job.name or job.config.name or job.config.dataset)


def running_job(job: SweepJob, key: str, below: Callable[[SweepJob], None] | None = None) -> None:
    """The progress bar of a running ``job``, ``below(job)`` under it, then Cancel. ``key``
    prefixes the widget and state keys (``{key}_cancel``; ``{key}_eta``: the time-left estimate,
    reset by whoever starts a job)."""
    name = job_name(job)
    if job.phase == "aggregates":
        text = f"Sweep '{name}' is done: storing its heatmap's aggregates, so Heatmaps opens it at once…"
    elif job.total:
        left = st.session_state.setdefault(f"{key}_eta", Eta()).update(job.done, job.total, time.monotonic())
        text = (f"Sweep '{name}': {job.done:,}/{job.total:,} result rows · {format_seconds(job.elapsed_s)}"
                + (f" · about {format_seconds(left)} left" if left is not None else " · estimating the time left…"))
    else:
        text = f"Preparing sweep '{name}' (loading {job.config.dataset}, making variants)…"
    st.progress(job.fraction, text=md_escape(text))
    if below is not None:
        below(job)
    if not job.cancel_requested and st.button("Cancel", key=f"{key}_cancel"):
        job.cancel()
    if job.cancel_requested:
        st.info("Cancelling: the sweep stops after the chunk in progress (everything committed is kept).")
