"""The speech trial's results: the transcripts' WER and CER (NoiseQA's Table 3 measures) for this
trial and per speaker across the server's trials, transcribing what is missing, and the
SQuAD-format challenge sets written from the transcripts, with the sweep command and the scoring
panel (components.trial_scoring) that read them."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.trial_scoring import score_panel
from core.collect import trial_sets, trials
from core.speech import asr


def results_section(trial: trials.Trial) -> None:
    """``trial``'s results, under the recording step."""
    st.subheader("Results")
    summary = trial_sets.wer_summary(trial)
    if summary:
        st.dataframe(pd.DataFrame(trial_sets.summary_rows(summary)), hide_index=True, width="stretch")
        st.caption("WER/CER: transcripts against the questions, both in the form the recognisers write "
                   "(lower-cased; punctuation made a space, so \"fee-paying\" reads \"fee paying\"; an apostrophe "
                   "inside a word kept). Table 3: NoiseQA's CER/WER/BLEU as the paper computes them (CER and WER "
                   "lower-cased with punctuation deleted, so \"feepaying\"; BLEU uncased on the text as written): "
                   "the two differ where a question has hyphens or apostrophes.")
    else:
        st.caption("No transcripts yet.")
    everyone = trial_sets.speaker_wer(trials.list_trials())
    if everyone:
        with st.expander("WER per speaker (all trials on this server)"):
            st.dataframe(pd.DataFrame(trial_sets.speaker_rows(everyone)), hide_index=True, width="stretch")
    c1, c2 = st.columns(2)
    if c1.button("Transcribe what is missing", key="trial_pending",
                 help="After an interruption, or when a recogniser was installed later."):
        with st.spinner("Transcribing…"):
            made = trial.transcribe_pending(list(asr.ENGINE_NAMES))
        st.success(f"{made} transcripts made.")
    if c2.button("Write challenge sets", key="trial_write", disabled=not summary):
        trial_sets.write_challenge_sets(trial)
    # read from the trial's folder, not kept in the session: the list (and the scores under it) are
    # there again when the visitor comes back to the page, or opens the trial in another session
    paths = {k: str(v) for k, v in trial_sets.written_sets(trial).items()}
    if paths:
        st.caption("SQuAD-format challenge sets (paired with the original by question id):")
        shown = trial_sets.shown_paths(paths)   # the server's folders only with QAX_SHOW_PATHS=1
        for key, path in shown.items():
            st.text(f"{key}: {path}")
        models = st.session_state.get("trial_models") or ["MODEL"]
        st.code(trial_sets.sweep_command(trial, shown, models), language="bash")
        score_panel(trial, paths)
