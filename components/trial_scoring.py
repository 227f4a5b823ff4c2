"""The speech trial's scores: the chosen models on the trial's spoken challenge sets.

Per-speaker F1 as NoiseQA's Table 10 reports it: a sweep of the clean questions and of each ASR
engine's transcripts (``file:`` specs paired with the original by question id), stored in the
trial's folder (``sweep.sqlite``). It runs in the background like the Sweeps page's sweeps
(core.sweeps.running.job.SweepJob, components.job_progress): a progress bar, Cancel, and the page stays
responsive; the table (with its CSV) stays on the page across reruns, per trial, and is read back from
the trial's folder on a later visit (:func:`stored_scores`).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components import loaders, session_memory
from components.export import csv_download, file_stem
from components.job_progress import running_job, start_job
from components.pickers import language_mismatch_note, model_picker
from components.text import md_escape
from core.collect import trial_sets, trials
from core.explore.answers import load_engines
from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.config import SweepConfig
from core.sweeps.running.job import SweepJob
from core.sweeps.store import StoreError

JOB = "trial_job"   # the scoring sweep running in the background (core.sweeps.running.job.SweepJob)


def score_panel(trial: trials.Trial, paths: dict[str, str]) -> None:
    """Per-speaker F1 (NoiseQA Table 10): a sweep of the chosen models over this trial's sets, run
    in the background like the Sweeps page's (progress, Cancel), stored in the trial's folder."""
    models = model_picker("trial", default_all=False, lang=trial.lang)
    language_mismatch_note(models, trial.lang)
    job = st.session_state.get(JOB)
    busy = job is not None and job.running
    if models and st.button("Score the models on these recordings", key="trial_score", disabled=busy):
        engines, failures = load_engines(models, loaders.engine_for_state)   # a hub model offline says why
        for failure in failures:
            st.error(md_escape(failure))
        if not failures:
            specs = [f"file:{p}" for k, p in paths.items() if k != "original"]
            config = SweepConfig(paths["original"], specs, models, name=f"trial-{trial.id}")
            job = start_job(SweepJob(config, engines, trial.path / "sweep.sqlite", chunk_size=8,
                                     owner=session_memory.session_id()))
            if job is not None:
                st.session_state[JOB] = job
                st.session_state["trial_job_for"] = trial.id
                st.session_state.pop("trial_eta", None)
                st.rerun()   # the button disabled, the progress bar polling
    _scoring(trial, busy)


def stored_scores(trial: trials.Trial) -> tuple[list[dict], str] | None:
    """(rows, note) of the scoring sweep stored in the trial's folder, or None when there is none: what
    a visitor sees on coming back to the page (or opening the trial in another session)."""
    db = trial.path / "sweep.sqlite"
    if not db.is_file():
        return None
    try:
        sweep = StoredSweep(db, f"trial-{trial.id}")
        rows = trial_sets.score_rows(sweep.cells())
    except (KeyError, StoreError, OSError):   # no scoring sweep in it yet, or a damaged file
        return None
    status, done, total = sweep.info["status"], sweep.info["done_units"], sweep.info["total_units"]
    if status == "done":
        return rows, ""
    if status == "running":
        return rows, f"Still scoring: {done:,}/{total:,} rows so far."
    return rows, f"{status.capitalize()} after {done:,}/{total:,} rows."


def _scoring(trial: trials.Trial, busy: bool) -> None:
    @st.fragment(run_every=1.0 if busy else None)
    def panel() -> None:
        """The running sweep's progress; once it ends, its scores (kept per trial across reruns)."""
        scores = st.session_state.setdefault("trial_scores", {})   # trial id -> (rows, note)
        job: SweepJob | None = st.session_state.get(JOB)
        if job is not None and job.running:
            running_job(job, "trial")
            return
        if job is not None:   # it ended: its table, once, then the whole page without the timer
            st.session_state.pop(JOB)
            if job.error:
                st.session_state["trial_score_error"] = job.error
            else:
                r = job.result
                note = "" if r.status == "done" else f"Cancelled after {r.done_units:,}/{r.total_units:,} rows."
                # under the trial it scores, even if another trial was opened meanwhile
                for_trial = st.session_state.get("trial_job_for", trial.id)
                scores[for_trial] = (trial_sets.score_rows(StoredSweep(job.db, r.name).cells()), note)
            st.rerun()
        if error := st.session_state.pop("trial_score_error", None):
            st.error(md_escape(f"Scoring stopped with an error: {error}"))
        if shown := scores.get(trial.id) or stored_scores(trial):
            rows, note = shown
            if note:
                st.warning(note)
            table = pd.DataFrame(rows)
            st.dataframe(table, hide_index=True, width="stretch")
            csv_download(table, file_stem("trial", trial.id, "scores"), key="trial_scores_csv")
    panel()
