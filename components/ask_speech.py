"""Ask's "Speak the question" panel: record in the browser or on the server's microphone, every
ASR engine transcribes the take (core.explore.ask_input), the transcripts are shown side by side
with their WER against what the speaker meant to say, and the chosen engine's transcript becomes
the question (answered at once when the page's toggle is on: ``ask_answer_now``).

A take is transcribed once per (recording, language): the recorder keeps its bytes across reruns.
A take belongs to its passage: when the item or the pasted context changes, :func:`forget_if_moved`
clears the recording, its transcripts and the recorder itself (a new widget key: the browser would
otherwise keep showing, and sending, the old take).
"""
from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from components.text import md_escape, sentence
from core.explore import ask_input
from core.speech import asr, recorder
from core.speech.audio import AudioError, to_wav_bytes
from core.translate import languages

SPEECH_STATE = ("ask_speech", "ask_latest_take", "ask_browser_digest", "ask_answer_now")


def audio_key() -> str:
    """The browser recorder's widget key: a new one after each :func:`forget_if_moved`."""
    return f"ask_audio_{st.session_state.get('ask_audio_gen', 0)}"


def forget_if_moved(where: str) -> bool:
    """Clear the speech panel (take, transcripts, what the speaker meant, the recorder) when
    ``where`` (the item and its passage, or the pasted context) is not what it was last drawn
    for; True when it cleared something."""
    from components import persist

    s = st.session_state
    digest = hashlib.sha256(where.encode("utf-8")).hexdigest()
    before = s.get("ask_speech_context")
    s["ask_speech_context"] = digest
    if before is None or before == digest:
        return False
    if not any(s.get(k) is not None for k in SPEECH_STATE):
        return False   # nothing recorded: the recorder keeps its key
    for k in SPEECH_STATE:
        s.pop(k, None)
    persist.hand_over({"ask_reference": ""})
    s["ask_audio_gen"] = s.get("ask_audio_gen", 0) + 1
    return True


def speech_panel(qlang: str) -> None:
    """Browser / server recorder -> every engine's transcript; the chosen one becomes the question
    (``ask_question``). ``qlang``: the question language chosen on the page (or auto)."""
    names = list(asr.ENGINE_NAMES)
    asr_lang = None if qlang == ask_input.AUTO else qlang
    problems = {n: ask_input.engine_problem(n, asr_lang) for n in names}
    usable = [n for n in names if problems[n] is None]
    c1, c2 = st.columns([3, 2])
    with c1:
        browser = st.audio_input("Record in the browser", key=audio_key())
    with c2:
        default = "whisper-base" if "whisper-base" in usable else (usable[0] if usable else names[0])
        chosen = st.selectbox("Recogniser for the question", names, index=names.index(default),
                              key="ask_asr_engine",
                              format_func=lambda n: n + ("" if problems[n] is None else " (cannot run)"))
        if problems[chosen]:
            st.caption(md_escape(f"{chosen}: {problems[chosen]}"))
        st.text_input("What you meant to say (optional, for WER)", key="ask_reference")
        st.toggle("Answer as soon as it is transcribed", value=True, key="ask_auto_answer",
                  help="A new recording's transcript becomes the question and every selected model "
                       "answers it at once, without pressing Answer.")
    _server_microphone()

    speech = _transcribed_take(browser, usable, asr_lang)
    if not speech:
        st.caption("Record a question: the chosen recogniser's transcript becomes the question below. "
                   + ("Speech is recognised as English; choose the question language above to speak another."
                      if asr_lang is None else f"Speech is recognised as {languages.language_name(asr_lang)}."))
        return
    if speech["error"]:
        st.error(f"The recording cannot be used: {md_escape(speech['error'])}")
        return
    st.audio(speech["wav"], format="audio/wav")
    by_engine = {r.engine: r for r in speech["results"]}
    picked = by_engine.get(chosen)
    # Put the chosen engine's transcript into the question box once per (recording, engine); a
    # transcript without words (a hum, a whistle, a fake microphone's tone) never replaces a typed question.
    heard = picked is not None and picked.text is not None and bool(picked.text.strip())
    if heard and speech["applied"] != (speech["key"], chosen):
        st.session_state["ask_question"] = picked.text
        speech["applied"] = (speech["key"], chosen)
        st.session_state["ask_answer_now"] = True   # answered below when the toggle is on
    elif picked is not None and picked.text is not None and not heard:
        st.warning(md_escape(f"{chosen} recognised no words in this recording: the question is left as it "
                             "was. Record again, closer to the microphone, or try another recogniser."))
    _transcripts(speech, names, problems)


def _server_microphone() -> None:
    """Record on the server's own microphone, when it has one (the take goes to ``ask_latest_take``)."""
    ok, why = recorder.available()
    if ok:
        rc1, rc2 = st.columns([1, 2])
        seconds = rc1.number_input("Seconds", 1, 30, 5, key="ask_server_seconds")
        if rc2.button("Record on the server's microphone", key="ask_server_record"):
            try:
                with st.spinner(f"Recording {seconds} s…"):
                    rec = recorder.record(float(seconds))
                st.session_state["ask_latest_take"] = ("server", to_wav_bytes(rec.samples, rec.sample_rate))
            except (recorder.RecorderError, AudioError) as e:
                st.error(f"Server recording failed: {md_escape(e)}")
    else:
        st.caption(f"Server microphone: not available — {md_escape(sentence(why))}")


def _transcribed_take(browser, usable: list[str], asr_lang: str | None) -> dict | None:
    """The newest take (browser or server), transcribed by every usable engine once per (recording,
    language): {key, wav, source, results, error, applied}, kept in ``ask_speech``; None before any."""
    # The newest take wins: a browser recording counts as new when its bytes change.
    if browser is not None:
        wav = browser.getvalue()
        digest = hashlib.sha256(wav).hexdigest()
        if st.session_state.get("ask_browser_digest") != digest:
            st.session_state["ask_browser_digest"] = digest
            st.session_state["ask_latest_take"] = ("browser", wav)
    take = st.session_state.get("ask_latest_take")
    speech = st.session_state.get("ask_speech")
    if take is not None:
        source, wav = take
        key = (hashlib.sha256(wav).hexdigest(), asr_lang)
        if speech is None or speech["key"] != key:
            speech = {"key": key, "wav": wav, "source": source, "results": [], "error": None, "applied": None}
            try:
                audio = recorder.from_audio_input(wav)
            except AudioError as e:
                speech["error"] = str(e)
            else:
                with st.spinner("Transcribing…"):
                    speech["results"] = ask_input.transcribe_all(audio, usable, asr_lang)
            st.session_state["ask_speech"] = speech
    return speech


def _transcripts(speech: dict, names: list[str], problems: dict) -> None:
    """Every engine's transcript of the take side by side, with its WER against what the speaker
    meant to say (when typed), time and real-time factor, or why it has none."""
    reference = st.session_state.get("ask_reference", "")
    rows = ask_input.transcript_rows(names, speech["results"], problems, reference)   # "—" where there is no figure
    st.caption(f"Recording from the {speech['source']}; transcripts side by side"
               + (" (WER against what you meant to say)" if reference.strip() else ""))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
