"""A sweep running in the background (core.sweeps.running.job.SweepJob): its progress bar and its Cancel.

Shared by the Sweeps page and the speech trial's scoring, which both run ``run_sweep`` on a
background thread and poll it from an auto-refreshing fragment: the bar names the sweep and says
how many result rows are done and about how long is left; Cancel stops it after the chunk in
flight (everything committed is kept, and the same configuration resumes). :func:`sweep_panel`
is the Sweeps page's whole panel: the bar, a Ray sweep's workers, then the result once.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from components import loaders, session_memory
from components.text import md_escape, sentence
from core.budgets import BudgetError
from core.explore.answers import load_engines
from core.sweeps.config import SweepConfig
from core.sweeps.running.job import RayOptions, SweepJob, reap_abandoned
from core.sweeps.running.progress import Eta, format_seconds, worker_rows


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
    elif getattr(job, "ray", None) is not None:   # Ray starts and its workers load the models first
        text = (f"Preparing sweep '{name}' (starting Ray and loading the models in its workers, loading "
                f"{job.config.dataset}, making variants)…")
    else:
        text = f"Preparing sweep '{name}' (loading {job.config.dataset}, making variants)…"
    row = st.container(horizontal=True, vertical_alignment="bottom")   # Cancel beside the bar, never under it
    row.progress(job.fraction, text=md_escape(text))
    if not job.cancel_requested and row.button("Cancel", key=f"{key}_cancel"):
        job.cancel()
    if below is not None:
        below(job)
    if job.cancel_requested:
        st.info("Cancelling: the sweep stops after the chunk in progress (everything committed is kept).")


def worker_table(job: SweepJob, key: str = "sw") -> None:
    """A Ray sweep's workers: where each runs, what it is doing, its share of the predictions."""
    if job.workers:
        st.dataframe(pd.DataFrame(worker_rows(job.workers)), hide_index=True, width="stretch",
                     key=f"{key}_workers_table")


def sweep_panel(state_key: str, key: str) -> None:
    """The job in ``st.session_state[state_key]`` while it runs (refreshed every second), then its
    result once: an error, or what it did (rows, predictions computed and cached, time), with a
    button to Heatmaps. Both are pinned to the window's bottom edge (``st.bottom``): drawn under
    Start, the bar sat at the bottom edge with Cancel out of view at 800 px."""
    job = st.session_state.get(state_key)

    @st.fragment(run_every=1.0 if job is not None and job.running else None)
    def panel() -> None:
        _go_to_heatmaps_if_asked(key)   # a click reruns this fragment only
        job = st.session_state.get(state_key)
        if job is None:
            return
        if job.running:
            running_job(job, key, below=lambda j: worker_table(j, key))
            return
        if st.session_state.get(f"{key}_banner_shown"):   # shown once: it goes with the next interaction
            st.session_state.pop(state_key, None)
            return
        if not st.session_state.get(f"{key}_job_reported"):
            st.session_state[f"{key}_job_reported"] = True
            st.rerun()  # the whole page: the stored-sweeps list below changed
        st.session_state[f"{key}_banner_shown"] = True
        if job.error:
            st.error(f"The sweep stopped with an error: {md_escape(job.error)}")
            return
        if job.cancel_reason:
            st.warning(md_escape(f"Sweep '{job_name(job)}': {job.cancel_reason}."))
        worker_table(job, key)
        r = job.result
        verb = "finished" if r.status == "done" else "was cancelled (resume it below)"
        switched = "".join(f" {m} answered with {b}, the backend this sweep was made with."
                           for m, b in job.switched.items())
        st.success(md_escape(
            f"Sweep '{r.name}' {verb}: {r.done_units:,}/{r.total_units:,} result rows "
            f"({r.resumed_units:,} were already stored), {r.predictions_computed:,} predictions computed and "
            f"{r.predictions_cached:,} taken from the cache in {r.model_calls} model calls, "
            f"{r.variants_computed:,} variants computed, {r.elapsed_s:.1f} s.{switched}"))
        if r.done_units:   # a callback: the banner is gone by the rerun the click starts
            st.button("🟥 Open it on Heatmaps", key=f"{key}_open_heatmaps", type="primary",
                      on_click=open_on_heatmaps, args=(job.db, r.name, key))

    _go_to_heatmaps_if_asked(key)
    if job is None:
        return
    with st.bottom:
        panel()


def open_on_heatmaps(db: str, sweep_name: str, key: str) -> None:
    """Choose the database ``db`` and its sweep ``sweep_name`` on Heatmaps, which the panel then
    opens (:func:`_go_to_heatmaps_if_asked`: a page cannot be switched from a callback)."""
    from components import persist
    from components.sweep_db_picker import STATE_KEY
    from core.sweeps.analysis.stored import list_sweeps

    ids = [s["id"] for s in list_sweeps(db) if s["name"] == sweep_name]
    persist.hand_over({"hm_db": db, "hm_db_demo_auto": False, **({"hm_sweep": ids[-1]} if ids else {})})
    st.session_state[STATE_KEY] = db
    st.session_state[f"{key}_to_heatmaps"] = True


def _go_to_heatmaps_if_asked(key: str) -> None:
    if st.session_state.pop(f"{key}_to_heatmaps", False):
        st.switch_page("pages/heatmaps.py")


def start_sweep(state_key: str, key: str, config: SweepConfig, ds: Any, db_path: Path, *, data_dir: str | None,
                chunk_size: int, ray: RayOptions | None = None, stored: Mapping[str, str] | None = None) -> None:
    """Load the models here (on Ray, its actors load them), start ``config`` as a SweepJob kept in
    ``st.session_state[state_key]``, and rerun the page so it polls it. A model that fails to load
    is reported and nothing starts. ``stored``: a resumed sweep's {model: fingerprint}; each model
    then answers with the backend it was made with, whatever the sidebar says (core.sweeps.running.backends)."""
    engines: dict = {}
    if ray is None:
        engines, errors = load_engines(list(config.models), loaders.engine_for_state)
        for e in errors:   # a model that fails to load is reported, not raised
            st.error(md_escape(e))
        if errors:
            return
    # the job's lifecycle (core.sweeps.running.lifecycle.launch) switches the backends: the models
    # that switched are named in the result's banner
    job = start_job(SweepJob(config, engines, db_path, dataset=ds, data_dir=data_dir, chunk_size=chunk_size,
                             ray=ray, stored=stored, load_as=loaders.engine_loader_like_state(),
                             owner=session_memory.session_id()))
    if job is not None:
        follow(state_key, key, job)


def start_job(job: SweepJob) -> SweepJob | None:
    """Start ``job`` (owned by this session: cancelled once no browser follows it, see
    core.sweeps.running.job.reap_abandoned), or say why the server refuses it (the sweep budgets) and
    return None."""
    try:
        job.start()
    except BudgetError as e:
        st.error(md_escape(f"{sentence(e)} Wait for a running sweep to end, or cancel yours."))
        return None
    _watch_abandoned()
    return job


_watchdog: threading.Thread | None = None
_watchdog_lock = threading.Lock()


def _watch_abandoned() -> None:
    """Once per server: a daemon thread that cancels, every PERIOD_SECONDS, the sweeps whose
    sessions have all had no browser for QAX_SWEEP_GRACE_S (without a Streamlit server, nothing)."""
    global _watchdog
    if session_memory.runtime() is None:
        return
    with _watchdog_lock:
        if _watchdog is None or not _watchdog.is_alive():
            _watchdog = threading.Thread(target=_watchdog_loop, name="qax-sweep-janitor", daemon=True)
            _watchdog.start()


def _watchdog_loop() -> None:
    while True:
        time.sleep(session_memory.PERIOD_SECONDS)
        rt = session_memory.runtime()
        if rt is not None:
            reap_abandoned(time.monotonic(), rt.is_active_session)


def follow(state_key: str, key: str, job: SweepJob) -> None:
    """Show the running ``job`` in this session (one it just started, or one still running on this
    server that a reloaded page lost) and rerun the page so it polls it; this session then keeps
    the job alive too."""
    job.follow(session_memory.session_id())
    st.session_state[state_key] = job
    st.session_state[f"{key}_eta"] = Eta()
    for k in (f"{key}_job_reported", f"{key}_banner_shown"):
        st.session_state.pop(k, None)
    st.rerun()
