"""Speech trial: read a data set's questions aloud; the recordings become per-speaker ASR challenge sets.

How NoiseQA built its natural speech set, done by our users (logic in core.collect.trials): a seeded
sample of questions is shown one at a time; each recording is stored on the server at once, every
ASR engine transcribes it, and the transcripts form a SQuAD-format challenge set per speaker x
engine that sweeps read. Speakers can re-record, skip, stop and resume, export their recordings
and delete them. The results (WER, the challenge sets) are components/trial_results.py, and scoring
models on the sets runs as a background sweep (components/trial_scoring.py);
the flips of the recordings against synthetic noise are compared in components/trial_agreement.py.
"""
from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from components import persist
from components.export import download
from components.frame import page_frame
from components.pickers import evaluation_sets, load_set
from components.text import html_text, md_escape, sentence
from components.trial_agreement import agreement_panel
from components.trial_results import results_section
from core import config
from core.collect import trial_sets, trials
from core.datasets import DatasetError
from core.speech import asr
from core.speech.audio import AudioError

page_frame()
st.title("Speech trial")
st.caption("Read questions aloud, one at a time. Every recording is kept on this server "
           f"({md_escape(config.shown_path(trials.trials_root(), 'its trials folder'))}) until you delete it; "
           "each speech recogniser transcribes it, and "
           "your transcripts become a challenge set that sweeps can evaluate models on.")

ENGINES = list(asr.ENGINE_NAMES)


def _trial_label(t: trials.Trial) -> str:
    p = t.progress()
    return (f"{t.speaker.label} · {t.dataset} · {p['recorded']}/{p['questions']} recorded · "
            f"started {t.created[:16].replace('T', ' ')} · {t.id}")


def _start_or_resume():
    """The mode radio and the new-trial form, or (resuming) the chosen trial; returns a function
    that draws the trial picker, called once this run's take is stored, so its "n/N recorded"
    agrees with the progress bar below it (None when starting a new trial)."""
    existing = trials.list_trials()
    modes = ["Start a new trial"] + (["Resume a trial"] if existing else [])
    # A mode switch asked for by the previous run (a widget's state can only be set before it is drawn).
    if (wanted := st.session_state.pop("trial_mode_next", None)) in modes:
        persist.hand_over({"trial_mode": wanted})
    # Coming back to the page resumes the open trial (the radio's value is kept across pages).
    open_trial = st.session_state.get("trial_id") in {t.id for t in existing}
    persist.keep("trial_mode", modes, default="Resume a trial" if open_trial else modes[0])
    mode = st.radio("Trial", modes, horizontal=True, key="trial_mode")
    if mode == "Resume a trial":
        ids = [t.id for t in existing]
        current = st.session_state.get("trial_id")
        persist.keep("trial_pick", ids, default=current if current in ids else ids[0])
        pick = st.session_state["trial_pick"]
        if pick != current:
            st.session_state["trial_id"] = pick
            st.session_state.pop("trial_index", None)
        slot = st.container()

        def draw_picker() -> None:
            labels = {t.id: _trial_label(t) for t in trials.list_trials()}
            # The browser keeps the label it was last sent as the selectbox's value and shows it,
            # even when this run's options say "1/4 recorded": only a value set through session state
            # is sent again. Setting the same trial again sends its label as counted now.
            st.session_state["trial_pick"] = pick
            with slot:
                st.selectbox("Your trial", ids, format_func=lambda i: labels.get(i, i), key="trial_pick")
        return draw_picker
    st.session_state.pop("trial_id", None)   # a new trial: the form, not the last trial under it
    options = evaluation_sets()
    names = list(options)
    default = names.index("xquad/xquad.en") if "xquad/xquad.en" in names else 0
    with st.form("trial_new", enter_to_submit=False):   # a name's Enter started a 100-question trial
        c1, c2, c3 = st.columns(3)
        label = c1.text_input("Speaker (name or pseudonym)", key="trial_speaker")
        accent = c2.text_input("Accent / first language", key="trial_accent")
        mic = c3.text_input("Microphone", key="trial_mic", placeholder="e.g. laptop built-in, headset")
        d1, d2, d3 = st.columns([2, 1, 1])
        ds_name = d1.selectbox("Questions from", names, index=default, key="trial_dataset")
        n = d2.number_input("Questions", 1, 2000, 100, key="trial_n")
        seed = d3.number_input("Seed", 0, 10**9, 0, key="trial_seed")
        notes = st.text_input("Notes (optional)", key="trial_notes")
        started = st.form_submit_button("Start the trial", type="primary")
    if started:
        try:
            ds = load_set(ds_name, options[ds_name])
            trial = trials.create_trial(trials.Speaker(label.strip(), accent.strip(), mic.strip(), notes.strip()),
                                        ds, int(n), int(seed), dataset_label=ds_name)
        except (trials.TrialError, DatasetError, OSError) as e:
            st.error(md_escape(e))
            return
        st.session_state["trial_id"] = trial.id
        st.session_state.pop("trial_index", None)
        persist.forget("trial_pick")     # so that the picker shows the new trial
        st.session_state["trial_mode_next"] = "Resume a trial"
        st.rerun()
    return None


def _go(index: int | None) -> None:
    if index is not None:
        st.session_state["trial_index"] = index


def _recording_step(trial: trials.Trial) -> None:
    states = trial.states()
    n = len(states)
    if "trial_index" not in st.session_state:
        st.session_state["trial_index"] = trial.next_index() or 0
    idx = min(int(st.session_state["trial_index"]), n - 1)
    # filled at the end of this run, so a take recorded in this run is already counted
    progress_slot = st.empty()
    state = states[idx]
    ex = state.example
    st.markdown(f"**Question {idx + 1} of {n}**" + (" · skipped" if state.skipped and not state.recordings else "")
                + (f" · recorded {len(state.recordings)}×" if state.recordings else ""))
    st.markdown(f'<div style="font-size:1.6rem;line-height:1.3;padding:.4rem 0" class="qax-trial-question">'
                f"{html_text(ex.question)}</div>", unsafe_allow_html=True)
    st.caption("Read it aloud as you would ask it. To re-record, record again: every take is kept, the "
               "latest one counts.")
    audio = st.audio_input("Record your reading", key=f"trial_audio_{trial.id}_{ex.id}")
    results = None
    # A take is stored and transcribed once: the recorder keeps its bytes across reruns, and every
    # rerun (a click anywhere, the zip download) used to store and transcribe it again.
    digest = hashlib.sha256(audio.getvalue()).hexdigest() if audio is not None else None
    takes = st.session_state.setdefault("trial_takes", set())
    if audio is not None and (trial.id, ex.id, digest) not in takes:
        takes.add((trial.id, ex.id, digest))
        try:
            rec = trial.add_recording(ex.id, audio.getvalue(), name=getattr(audio, "name", None))
        except AudioError as e:
            st.error(f"This recording cannot be used: {md_escape(sentence(e))} Please record again.")
        else:
            usable = [e for e in ENGINES if trial.engine_problem(e) is None]
            with st.spinner("Transcribing…"):
                results = trial.transcribe(rec, usable)
            state = trial.states()[idx]
    if state.latest is not None:
        st.audio(state.latest.path.read_bytes(), format="audio/wav")
        st.dataframe(pd.DataFrame(trial_sets.transcript_rows(trial, state, ENGINES, results)), hide_index=True,
                     width="stretch")
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1.8])   # room for "First open question" at 800 px
    if c1.button("← Back", key="trial_back", disabled=idx == 0):
        _go(idx - 1)
        st.rerun()
    if c2.button("Skip", key="trial_skip"):
        trial.skip(ex.id)
        _go(trial.next_index(after=idx) if trial.next_index(after=idx) is not None else idx)
        st.rerun()
    if c3.button("Next →", key="trial_next", type="primary"):
        nxt = trial.next_index(after=idx)
        _go(nxt if nxt is not None else min(idx + 1, n - 1))
        st.rerun()
    if c4.button("First open question", key="trial_first_open"):
        _go(trial.next_index())
        st.rerun()
    if trial.next_index() is None:
        st.success("Every question is recorded or skipped. Thank you! See the results below.")
    p = trial.progress()
    progress_slot.progress(p["recorded"] / n, text=f"{p['recorded']} of {n} recorded · {p['skipped']} skipped · "
                                                   f"{p['attempts']} recording{'' if p['attempts'] == 1 else 's'} "
                                                   "in all")


def _export_delete(trial: trials.Trial) -> None:
    st.subheader("Your recordings")
    # Built when clicked, and no rerun after it (on_click="ignore"): nothing else waits on it.
    download("Download all recordings and transcripts (zip)", trial.export_zip, f"{trial.id}.zip", "application/zip",
             "trial_zip")
    with st.expander("Delete this trial"):
        st.caption("Deletes every recording, transcript and challenge set of this trial from the server, for good.")
        typed = st.text_input(f"Type the speaker label ({md_escape(trial.speaker.label)}) to confirm",
                              key="trial_confirm")
        if st.button("Delete the trial and its recordings", key="trial_delete", disabled=typed != trial.speaker.label):
            trial.delete()
            for k in ("trial_id", "trial_index", "trial_confirm"):
                st.session_state.pop(k, None)
            st.session_state["trial_mode_next"] = "Start a new trial"
            st.session_state["trial_deleted"] = trial.id
            st.rerun()


if deleted := st.session_state.pop("trial_deleted", None):
    st.success(f"Trial {md_escape(deleted)} and all its recordings were deleted.")
draw_picker = _start_or_resume()
trial_id = st.session_state.get("trial_id")
if trial_id:
    try:
        current = trials.open_trial(trial_id)
    except trials.TrialError as e:
        st.error(md_escape(e))
        st.session_state.pop("trial_id", None)
        st.stop()
    sp = current.speaker
    st.caption(f"Speaker **{md_escape(sp.label)}**" + (f" · accent: {md_escape(sp.accent)}" if sp.accent else "")
               + (f" · microphone: {md_escape(sp.microphone)}" if sp.microphone else "")
               + md_escape(f" · {current.dataset} ({current.lang}), seed {current.seed} · trial {current.id}"))
    _recording_step(current)
    if draw_picker is not None:
        draw_picker()
    results_section(current)
    agreement_panel(current)
    _export_delete(current)
else:
    agreement_panel(None)
