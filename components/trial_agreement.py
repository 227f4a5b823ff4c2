"""The speech trial's "Synthetic against natural noise" section: do the answers that a speaker's
recordings flip also flip under TTS -> ASR and keyboard noise? (logic: core.collect.flip_agreement)

With recordings: choose models, the natural ASR engines, the TTS voice and engines, the keyboard
rate and the seed; the comparison runs with a progress bar (TTS -> ASR is cached on disk per
question, voice and engine, so a second run is fast) and leaves, per trial, the flip rates, the
kappa matrix with its intervals, the kappa rows and the per-question table, each exportable.
Without a trial, or with no transcribed recording yet, it explains what to record and why. The
same comparison runs without a recording on a natural set (HeySQuAD's real speech, Disfl-QA's real
disfluencies: core.collect.agreement_natural), XQuAD's paragraphs apart.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components import loaders, persist
from components.cancellable import counted, progress_with_cancel, say_if_cancelled
from components.export import csv_download, file_stem, json_download
from components.frame import run_output
from components.pickers import DEMO_LANGS, evaluation_sets, model_picker
from components.text import md_escape
from core.collect import flip_agreement, trial_sets, trials
from core.collect.agreement_natural import everything, flip_rates_by_subset, natural_set_conditions
from core.explore.answers import load_engines
from core.render.words import count
from core.speech import asr, tts

RESULTS = "agree_results"   # trial id (or natural:<set>) -> Agreement, kept across reruns
TRIAL_CHOICE = "this trial's recordings"
DEMO_SET = "demo.en"   # the bundled English set a visitor can try the flow on
NATURAL_CHOICES = {"HeySQuAD (real speech)": "heysquad", "Disfl-QA (real disfluencies)": "disfl-qa"}


def explain_what_to_record(trial: trials.Trial | None) -> None:
    """What to record for the comparison, and why that many (kappa needs enough flips)."""
    widths = {n: flip_agreement.kappa_halfwidth(n, 0.2) for n in (25, 50, 100, 200)}
    where = ("this trial has no transcribed recording yet: record some questions above"
             if trial is not None else "start a trial above")
    st.markdown(
        f"Nothing to compare yet: {md_escape(where)}. This section asks NoiseQA's question: does "
        "synthetic noise flip the same answers as a real voice? For each question you record, every "
        "model answers the typed question, your recording as each recogniser heard it, the same "
        "question spoken by a text-to-speech voice and transcribed (TTS → ASR), and the question "
        "with keyboard typos. Their agreement is Cohen's kappa of the flipped answers.\n\n"
        "**What to record.** English questions (the TTS voices and PocketSphinx are English), read "
        "as you would ask them: about **100**, NoiseQA's speaker study and the trial form's default. "
        "Kappa only measures something when each condition flips some answers and not others; if each "
        "flips one answer in five, a 95% interval reaches about "
        + ", ".join(f"±{w:.2f} with {n}" for n, w in widths.items())
        + " questions. Recordings of several speakers are separate trials, compared one at a time.")
    st.caption("No recordings of real speakers ship with the app, so there is no natural demo to run here. "
               + demo_hint(list(evaluation_sets())))


def demo_hint(offered: list[str]) -> str:
    """Where to find the bundled English demo set under "Questions from", naming it only when the
    form offers it (it comes after a data directory's sets, out of sight in a long list).

    >>> print(demo_hint(["demo.en", "demo.de"]))  # doctest: +NORMALIZE_WHITESPACE
    The bundled demo set (demo.en, 12 English questions) is a quick way to try the whole flow: choose it under
    "Questions from" when you start a trial.
    >>> print(demo_hint(["xquad/xquad.en", "squad/dev-v2.0", "demo.en"]))  # doctest: +ELLIPSIS
    The bundled demo set ... when you start a trial, after the 2 sets of the data directory (type "demo" in the box...
    >>> print(demo_hint(["xquad/xquad.en"]))
    A short English set is a quick way to try the whole flow: choose one under "Questions from" when you start a trial.
    """
    if DEMO_SET not in offered:
        return ('A short English set is a quick way to try the whole flow: choose one under "Questions from" '
                "when you start a trial.")
    before = [name for name in offered[:offered.index(DEMO_SET)] if name not in DEMO_LANGS]
    where = f', after the {count(len(before), "set")} of the data directory (type "demo" in the box to find it)'
    return (f"The bundled demo set ({DEMO_SET}, 12 English questions) is a quick way to try the whole flow: "
            f'choose it under "Questions from" when you start a trial{where if before else ""}.')


def _settings(trial: trials.Trial, natural_default: list[str]) -> dict | None:
    models = model_picker("agree", default_all=False, lang=trial.lang)
    c1, c2 = st.columns(2)
    # this section's inputs survive a visit to another page (components/persist.py), defaults given there
    persist.keep("agree_asr", natural_default, default=natural_default)
    natural = c1.multiselect("Natural: your recordings, as transcribed by", natural_default, key="agree_asr")
    persist.keep("agree_tts", list(asr.ENGINE_NAMES), default=natural_default)
    tts_engines = c2.multiselect("TTS → ASR: the question spoken, then transcribed by", list(asr.ENGINE_NAMES),
                                 key="agree_tts")
    d1, d2, d3, d4 = st.columns([1.6, 1, 1, 1])   # a voice id ("espeak-ng:en-gb-x-rp+f3") needs the room
    voices = list(tts.ALL_VOICE_IDS)
    persist.keep("agree_voice", voices, default=flip_agreement.DEFAULT_VOICE)
    persist.keep_all(["agree_p", "agree_seed", "agree_boot"])
    voice = d1.selectbox("TTS voice", voices, key="agree_voice")
    p = d2.number_input("Keyboard noise rate", 0.0, 1.0, flip_agreement.KEYBOARD_P, 0.05, key="agree_p",
                        help="NoiseQA's synthetic keyboard noise: the share of words given one typo (0: none)")
    seed = d3.number_input("Seed", 0, 10**9, 0, key="agree_seed", help="of the keyboard noise and the bootstrap")
    n_boot = d4.number_input("Bootstrap resamples", 100, 10_000, flip_agreement.N_BOOT, 100, key="agree_boot")
    if not models or not natural:
        st.caption("Choose at least one model and one recogniser.")
        return None
    if len(natural) + len(tts_engines) + (p > 0) < 2:
        st.caption("Choose at least two conditions to compare (kappa is between two).")
        return None
    return {"models": models, "natural": natural, "tts": tts_engines, "voice": voice,
            "p": float(p) or None, "seed": int(seed), "n_boot": int(n_boot)}


CANCELLED_NOTE = ("the comparison stopped at the step it was on, and nothing of it was kept. Compare the flips "
                  "again to start over (TTS → ASR transcripts made so far are cached).")


def _run(trial: trials.Trial, s: dict) -> flip_agreement.Agreement | None:
    with progress_with_cancel("agree", "Preparing the conditions…") as bar:
        progress = counted(bar)
        try:
            examples, conditions, left_out = flip_agreement.trial_conditions(
                trial, s["natural"], tts_engines=s["tts"], voice=s["voice"], keyboard_p=s["p"], seed=s["seed"],
                progress=progress)
        except (flip_agreement.AgreementError, ValueError, RuntimeError) as e:   # an engine or voice missing
            st.error(md_escape(e))
            return None
        engines, failures = load_engines(s["models"], loaders.engine_for_state)
        for failure in failures:
            st.error(md_escape(failure))
        if not engines:
            return None
        return flip_agreement.compare(examples, conditions, engines, seed=s["seed"], n_boot=s["n_boot"],
                                      progress=progress, settings={"trial": trial.id, "voice": s["voice"],
                                                                   "keyboard_p": s["p"], "left_out": left_out})


def _show(source: str, result: flip_agreement.Agreement) -> None:
    stem = file_stem(source, "agreement")
    left_out = result.settings.get("left_out") or []
    what = "recorded questions" if "natural set" not in result.settings else f"questions of {source}"
    st.caption(f"{result.settings['questions']} {what} · seed {result.settings['seed']} · "
               f"{result.settings['n_boot']} bootstrap resamples, 95% interval · a flip: the answer differs from "
               "the typed question's after SQuAD normalisation"
               + (f" · {len(left_out)} recorded questions left out (not transcribed by every recogniser)"
                  if left_out else ""))
    model = result.models[0]
    if len(result.models) > 1:
        persist.keep("agree_model_shown", result.models)
        model = st.selectbox("Model", result.models, key="agree_model_shown")
    rates = pd.DataFrame([r for r in flip_agreement.flip_rates(result) if r["model"] == model]).drop(columns="model")
    st.markdown("**Flips per condition**")
    st.dataframe(rates, hide_index=True, width="stretch")
    if "natural set" in result.settings:   # SQuAD dev questions: XQuAD's paragraphs apart (not trained on)
        by_subset = pd.DataFrame([r for r in flip_rates_by_subset(result) if r["model"] == model]).drop(columns="model")
        with st.expander("Flips by paragraph: XQuAD's 240 (not trained on by the shipped models) and the rest"):
            st.dataframe(by_subset, hide_index=True, width="stretch")
    st.markdown("**Cohen's kappa of the flips** (95% bootstrap interval where there are flips enough for one; "
                "p: Fisher's exact test)")
    st.dataframe(pd.DataFrame(flip_agreement.kappa_matrix(result, model)), width="stretch")
    for note in flip_agreement.matrix_notes(result, model):
        st.caption(md_escape(note[:1].upper() + note[1:] + "."))
    st.caption("Kappa is 1 when two conditions flip the same answers, 0 when they agree no more than chance "
               "would, below 0 when they disagree. It is undefined for a condition that flips no question, or "
               "every one: it needs flips and non-flips to agree on. Fisher's p says whether the flips go "
               "together at all (small: they do; near 1: no sign of it), exact however few flips there are.")
    kappas = pd.DataFrame(result.kappas)
    with st.expander("Kappa rows: counts, agreement, notes"):
        st.dataframe(kappas[kappas["model"] == model], hide_index=True, width="stretch")
    st.markdown("**Per question**")
    questions = pd.DataFrame(result.rows)
    st.dataframe(questions[questions["model"] == model].drop(columns="model"), hide_index=True, width="stretch")
    c1, c2, c3 = st.columns([1, 1.3, 1])
    with c1:
        csv_download(kappas, f"{stem}-kappa", key="agree_kappa_csv", label="Kappa CSV")
    with c2:
        csv_download(questions, f"{stem}-questions", key="agree_questions_csv", label="Per-question CSV")
    with c3:
        json_download(everything(result), stem, key="agree_json", label="All (JSON)")


def agreement_panel(trial: trials.Trial | None) -> None:
    """The section: the explanation when there is nothing to compare, else the settings, the run
    and the last result for this trial."""
    st.subheader("Synthetic against natural noise")
    persist.keep("agree_on", [TRIAL_CHOICE, *NATURAL_CHOICES])   # kept across a visit to another page
    source = st.radio("Compare on", [TRIAL_CHOICE, *NATURAL_CHOICES], horizontal=True, key="agree_on",
                      help="HeySQuAD: 1,002 SQuAD questions spoken by people and by a TTS voice, then transcribed; "
                           "Disfl-QA: SQuAD questions rewritten as a speaker who corrects themselves says them.")
    if source in NATURAL_CHOICES:
        natural_panel(NATURAL_CHOICES[source])
        return
    transcribed = trial_sets.engines_transcribed(trial) if trial is not None else []
    if trial is None or not transcribed:
        explain_what_to_record(trial)
        return
    st.caption("Which answers flip when a question reaches the model through your voice, and do "
               "synthetic TTS → ASR and keyboard noise flip the same ones? (NoiseQA, natural against "
               "synthetic noise.)")
    settings = _settings(trial, transcribed)
    results = st.session_state.setdefault(RESULTS, {})
    compare = st.button("Compare the flips", key="agree_run", type="primary", disabled=settings is None)
    working = run_output()   # the progress bar, the models' loads, what failed
    say_if_cancelled("agree", working, CANCELLED_NOTE)
    if compare:
        with working.container():
            result = _run(trial, settings)
        if result is not None:
            results[trial.id] = result
    if trial.id in results:
        _show(f"trial-{trial.id}", results[trial.id])


def natural_panel(name: str) -> None:
    """The comparison on a natural set: its natural questions against TTS -> ASR, keyboard noise and
    the disfluency perturbation, on a seeded sample (core.collect.agreement_natural)."""
    models = model_picker("agree_nat", default_all=False, lang="en")
    c1, c2, c3 = st.columns([1.6, 1, 1])
    persist.keep("agree_nat_tts", list(asr.ENGINE_NAMES), default=[])
    tts_engines = c1.multiselect("TTS → ASR: the question spoken, then transcribed by", list(asr.ENGINE_NAMES),
                                 key="agree_nat_tts", help="seconds per question (cached on disk)")
    voices = list(tts.ALL_VOICE_IDS)
    persist.keep("agree_nat_voice", voices, default=flip_agreement.DEFAULT_VOICE)
    persist.keep_all(["agree_nat_n", "agree_nat_p", "agree_nat_d", "agree_nat_seed"])
    voice = c1.selectbox("TTS voice", voices, key="agree_nat_voice")
    n = c2.number_input("Questions", 20, 2000, 200, 20, key="agree_nat_n", help="a seeded sample")
    p = c2.number_input("Keyboard noise rate", 0.0, 1.0, flip_agreement.KEYBOARD_P, 0.05, key="agree_nat_p")
    d = c3.number_input("Disfluencies per question", 0, 4, 1, key="agree_nat_d", help="0: leave it out")
    seed = c3.number_input("Seed", 0, 10**9, 0, key="agree_nat_seed")
    results = st.session_state.setdefault(RESULTS, {})
    compare = st.button("Compare the flips", key="agree_nat_run", type="primary", disabled=not models)
    working = run_output()   # the progress bar, the models' loads, what failed
    say_if_cancelled("agree_nat", working, CANCELLED_NOTE)
    if compare:
        with working.container(), progress_with_cancel("agree_nat", "Preparing the conditions…") as bar:
            progress = counted(bar)
            try:
                examples, conditions, settings = natural_set_conditions(
                    name, sample=int(n), tts_engines=tts_engines, voice=voice, keyboard_p=float(p) or None,
                    disfluency_n=int(d) or None, seed=int(seed), progress=progress)
                engines, failures = load_engines(models, loaders.engine_for_state)
                for failure in failures:
                    st.error(md_escape(failure))
                if engines:
                    results[f"natural:{name}"] = flip_agreement.compare(examples, conditions, engines,
                                                                       seed=int(seed), settings=settings,
                                                                       progress=progress)
            # a data file, a voice or an engine missing
            except (flip_agreement.AgreementError, ValueError, OSError, RuntimeError) as e:
                st.error(md_escape(e))
    if f"natural:{name}" in results:
        _show(name, results[f"natural:{name}"])
