"""AppTest: the Ask page answers a spoken question (a TTS-made WAV fed to st.audio_input) and a
translated one; bad audio and missing MT are explained. The trial page records, skips and resumes.

Speech: flite's kal16 voice says "what is the capital of france" (16 kHz WAV); both recognisers
transcribe it exactly (measured with pocketsphinx 5.1.1 and whisper base int8, see test_speech).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest

from core.speech import tts
from core.speech.audio import to_wav_bytes

SPOKEN = "what is the capital of france"
CONTEXT = "paris is the capital of france . berlin is the capital of germany ."


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def question_wav() -> bytes:
    samples, rate = tts.synthesize(SPOKEN, "flite:kal16")
    return to_wav_bytes(samples, rate)


def ask_with_pasted_context(question: str | None = None) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input(CONTEXT).run()
    if question is not None:
        at.text_area(key="ask_question").input(question).run()
    return at


def texts(at) -> list[str]:
    return [t.value for t in at.text]


def test_spoken_question_is_transcribed_compared_and_answered(tiny_env, question_wav):
    at = ask_with_pasted_context()
    at.text_input(key="ask_reference").input("What is the capital of France?").run()
    at.audio_input(key="ask_audio_0").set_value(("question.wav", question_wav, "audio/wav")).run()
    assert not at.exception
    # Whisper is the default recogniser; its transcript became the question.
    assert at.text_area(key="ask_question").value == SPOKEN
    table = at.dataframe[0].value
    assert list(table["engine"]) == ["pocketsphinx", "whisper-base"]
    assert list(table["transcript"]) == [SPOKEN, SPOKEN]
    assert list(table["WER %"]) == ["0.0", "0.0"]      # against the reference, both normalised
    at.text_input(key="ask_reference").input("").run()   # issue 53: without one, a dash (it showed "None")
    assert list(at.dataframe[0].value["WER %"]) == ["—", "—"]
    assert "None" not in at.dataframe[0].value.to_string()
    assert len(at.get("audio")) == 1                   # the recording can be played back
    # Choosing the other recogniser puts its transcript into the question box.
    at.text_area(key="ask_question").input("something else").run()
    at.selectbox(key="ask_asr_engine").set_value("pocketsphinx").run()
    assert at.text_area(key="ask_question").value == SPOKEN
    at.button(key="ask_go").click().run()
    assert not at.exception
    assert any(t.startswith("Answer: ") for t in texts(at))
    assert at.session_state["ask_result"]["question"] == SPOKEN


def test_switching_item_clears_the_recording_and_its_transcripts(tiny_env, question_wav):
    """Issue 43: after a switch to another item, the speech panel no longer shows the last
    recording, its transcripts or what the speaker meant; the recorder is a fresh one."""
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    at.text_input(key="ask_reference").input("What is the capital of France?").run()
    at.audio_input(key="ask_audio_0").set_value(("question.wav", question_wav, "audio/wav")).run()
    assert not at.exception
    assert list(at.dataframe[0].value["transcript"]) == [SPOKEN, SPOKEN]
    assert len(at.get("audio")) == 1 and at.session_state["ask_speech"] is not None
    at.number_input(key="ask_item").set_value(1).run()
    assert not at.exception
    assert "ask_speech" not in at.session_state and "ask_latest_take" not in at.session_state
    assert not at.get("audio")                                     # no playback of the old take
    assert not [d for d in at.dataframe if "transcript" in d.value.columns]   # no transcripts
    assert at.audio_input(key="ask_audio_1").value is None         # a fresh recorder
    assert at.text_input(key="ask_reference").value == ""
    assert at.text_area(key="ask_question").value != SPOKEN        # the new item's own question
    at.number_input(key="ask_item").set_value(2).run()             # nothing recorded: nothing to clear
    assert at.audio_input(key="ask_audio_1").value is None


@pytest.mark.parametrize("payload, message", [
    (b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is not a wave file", "not a readable audio file"),
    (to_wav_bytes(np.zeros(16000, dtype=np.float32), 16000), "is silent"),
    (b"", "empty audio"),
])
def test_bad_recordings_get_a_clear_message(tiny_env, payload, message):
    at = ask_with_pasted_context("what is the capital of france ?")
    at.audio_input(key="ask_audio_0").set_value(("question.wav", payload, "audio/wav")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith("The recording cannot be used:") and message in e for e in errors), errors
    assert at.text_area(key="ask_question").value == "what is the capital of france ?"   # untouched


def test_a_recording_without_words_keeps_the_typed_question(tiny_env):
    """A 440 Hz tone (what a browser's fake microphone sends; a hum, a whistle) is not silent but
    holds no words: both recognisers return an empty transcript. The typed question stays, nothing
    is answered, and the page says why."""
    t = np.arange(2 * 16000) / 16000
    tone = to_wav_bytes((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16000)
    at = ask_with_pasted_context("what is the capital of france ?")
    at.audio_input(key="ask_audio_0").set_value(("tone.wav", tone, "audio/wav")).run()
    assert not at.exception
    assert list(at.dataframe[0].value["transcript"]) == ["", ""]
    assert at.text_area(key="ask_question").value == "what is the capital of france ?"   # untouched
    assert "ask_result" not in at.session_state   # not answered: there was no new question
    assert not any("question is empty" in e.value for e in at.error)
    assert any("no words" in w.value for w in at.warning), [w.value for w in at.warning]


def test_spanish_question_is_translated_shown_and_answered(tiny_env):
    at = ask_with_pasted_context("¿Cuál es la capital de Francia?")
    assert not at.exception
    # Auto-detect: Spanish, from its function words; Apertium translates; both texts are shown.
    assert any("Question language: Spanish — detected from the cues 'cuál', 'es', 'la', 'de', '¿'" in shown(c.value)
               for c in at.caption), [c.value for c in at.caption]
    assert "¿Cuál es la capital de Francia?" in texts(at) and "Which is the capital of France?" in texts(at)
    assert any(c.value == "Asked (English, translated by apertium)" for c in at.caption)
    at.button(key="ask_go").click().run()
    result = at.session_state["ask_result"]
    assert (result["question"], result["typed"], result["question_lang"], result["translator"]) == (
        "Which is the capital of France?", "¿Cuál es la capital de Francia?", "es", "apertium")
    assert any(t.startswith("Answer: ") for t in texts(at))


def test_explicit_language_choice_and_no_mt_for_german_and_chinese(tiny_env):
    at = ask_with_pasted_context("Cal é a capital de Francia?")
    at.selectbox(key="ask_qlang").set_value("gl").run()
    assert "Which is the capital of France?" in texts(at)
    for code, name, question in [("de", "German", "Was ist die Hauptstadt von Frankreich?"),
                                 ("zh", "Chinese", "法国的首都是哪里？")]:
        at.text_area(key="ask_question").input(question).run()
        at.selectbox(key="ask_qlang").set_value(code).run()
        warnings = [shown(w.value) for w in at.warning]
        assert any(w.startswith(f"No offline machine translation is installed for {name} → English: Debian "
                                "ships no Apertium pair for German or Chinese") for w in warnings), warnings
        at.button(key="ask_go").click().run()      # asked as typed
        assert at.session_state["ask_result"]["question"] == question
        assert at.session_state["ask_result"]["translator"] is None


def test_server_microphone_absence_is_explained(tiny_env):
    from core.speech import recorder

    ok, why = recorder.available()
    at = ask_with_pasted_context()
    captions = [shown(c.value) for c in at.caption]
    if ok:
        assert at.button(key="ask_server_record")
    else:
        assert f"Server microphone: not available — {why}." in captions


# ------------------------------------------------------------------------------ the trial page


def trial_page() -> AppTest:
    return AppTest.from_file("../pages/speech_trial.py", default_timeout=180).run()


def shown_question(at) -> str:
    import html as html_lib
    import re

    [block] = [m.value for m in at.markdown if "qax-trial-question" in m.value]
    return html_lib.unescape(re.sub(r"<[^>]+>", "", block)).strip()


def speak(text: str) -> bytes:
    samples, rate = tts.synthesize(text, "flite:kal16")
    return to_wav_bytes(samples, rate)


def test_trial_page_records_skips_resumes_writes_sets_and_deletes(tiny_env, tmp_path, monkeypatch):
    from core.collect import trial_sets, trials
    from core.datasets import load_squad

    at = trial_page()
    assert not at.exception
    at.text_input(key="trial_speaker").input("Tester")
    at.text_input(key="trial_accent").input("Scottish English")
    at.text_input(key="trial_mic").input("flite kal16 (synthetic)")
    at.selectbox(key="trial_dataset").set_value("demo.en")
    at.number_input(key="trial_n").set_value(3)
    next(b for b in at.button if b.label == "Start the trial").click().run()
    assert not at.exception
    [trial] = trials.list_trials()
    assert (trial.speaker.label, trial.speaker.accent, trial.dataset, len(trial.examples)) == \
        ("Tester", "Scottish English", "demo.en", 3)
    first = shown_question(at)
    assert first == trial.examples[0].question

    # Bad audio: a clear message, nothing stored.
    at.audio_input[0].set_value(("take.wav", to_wav_bytes(np.zeros(8000, dtype=np.float32), 16000), "audio/wav")).run()
    assert any(e.value.replace("\\", "").startswith("This recording cannot be used: the recording take.wav is silent")
               for e in at.error)
    assert trial.recordings() == []
    # a message that ends with its own full stop gets no second one ("recognised.. Please")
    at.audio_input[0].set_value(("take.wav", b"not audio" * 100, "audio/wav")).run()
    [error] = [e.value.replace("\\", "") for e in at.error]
    assert error.endswith("Format not recognised. Please record again."), error

    # Read the question (TTS): stored at once, transcribed by both engines.
    wav = speak(first)
    at.audio_input[0].set_value(("take.wav", wav, "audio/wav")).run()
    assert not at.exception
    [rec] = trial.recordings()
    assert rec.qid == trial.examples[0].id and rec.path.read_bytes() == wav
    table = at.dataframe[0].value
    assert list(table["engine"]) == ["pocketsphinx", "whisper-base"]
    assert all(table["transcript"].str.len() > 0) and table["problem"].tolist() == ["", ""]
    assert len(at.get("audio")) == 1
    # the progress line counts the take in the run that stored it, not one click later
    assert [b.proto.text for b in at.get("progress")] == ["1 of 3 recorded · 0 skipped · 1 recording in all"]
    # "WER per speaker" is headed as the trial's own WER table
    [per_speaker] = [d.value for d in at.dataframe if "speaker" in d.value.columns]
    assert list(per_speaker.columns) == ["speaker", "engine", "questions", "WER %", "CER %"]

    at.button(key="trial_next").click().run()                   # question 2
    assert shown_question(at) == trial.examples[1].question
    at.button(key="trial_skip").click().run()                   # skip it: question 3
    assert shown_question(at) == trial.examples[2].question
    assert trial.progress() == {"questions": 3, "recorded": 1, "skipped": 1, "attempts": 1}

    # Stop and come back later, in a new session: the trial resumes at the open question.
    again = trial_page()
    again.radio(key="trial_mode").set_value("Resume a trial").run()
    assert shown_question(again) == trial.examples[2].question
    again.button(key="trial_write").click().run()
    assert not again.exception
    paths = {k: str(v) for k, v in trial_sets.written_sets(trial).items()}
    assert set(paths) == {"original", "pocketsphinx", "whisper-base"}
    spoken = load_squad(paths["pocketsphinx"])
    assert [e.id for e in spoken.examples] == [trial.examples[0].id]
    # the command names the sets from the trials folder down (the server's folders stay hidden)
    shown = trial_sets.shown_paths(paths)
    assert shown["pocketsphinx"].startswith("trials/") and str(tmp_path) not in shown["pocketsphinx"]
    assert any(f"file:{shown['pocketsphinx']}" in c.value for c in again.code)

    # Score a model on the spoken sets: a sweep in the background, with a progress bar and Cancel
    # (predictions wait on a gate, so the page is looked at while it runs); the table stays on the
    # page across later reruns.
    from core.qa.engine import QAEngine

    gate, original = threading.Event(), QAEngine.predict

    def gated(self, *args, **kwargs):
        assert gate.wait(120), "the test never opened the gate"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QAEngine, "predict", gated)
    again.multiselect(key="trial_models").set_value(["tiny-a"]).run()
    again.button(key="trial_score").click().run()
    assert not again.exception, again.exception
    job = again.session_state["trial_job"]
    assert job.running and again.button(key="trial_score").disabled
    assert any("Preparing sweep" in p.proto.text or "result rows" in p.proto.text for p in again.get("progress"))
    assert again.button(key="trial_cancel").label == "Cancel"
    gate.set()
    assert job.wait(120), "the scoring sweep did not finish in time"
    again.run()
    assert not again.exception, again.exception
    assert "trial_job" not in again.session_state
    scores = again.dataframe[-1].value
    assert list(scores["set"]) == ["file:pocketsphinx", "file:whisper-base"]
    assert list(scores["questions"]) == [1, 1] and list(scores["model"]) == ["tiny-a", "tiny-a"]
    again.run()
    assert again.dataframe[-1].value.equals(scores)
    # the sets and the scores are read back from the trial's folder: a new session shows them too
    later = trial_page()
    later.radio(key="trial_mode").set_value("Resume a trial").run()
    assert not later.exception, later.exception
    assert [t.value for t in later.text] == [f"{k}: {p}" for k, p in shown.items()]
    assert later.dataframe[-1].value.equals(scores)

    # Deleting needs the speaker label typed in.
    assert again.button(key="trial_delete").disabled
    again.text_input(key="trial_confirm").input("Tester").run()
    again.button(key="trial_delete").click().run()
    assert not again.exception
    assert trials.list_trials() == [] and not trial.path.exists()
    assert any("were deleted" in s.value for s in again.success)


def _german_trial_scoring():
    from pathlib import Path
    from types import SimpleNamespace

    from components.trial_scoring import score_panel

    # a trial folder with no scoring sweep stored in it
    score_panel(SimpleNamespace(id="t-de", lang="de", path=Path("no-such-trial")), {"original": "unused.json"})


def test_trial_scoring_marks_models_not_trained_for_the_trial_language(tiny_env):
    """A German trial: the scoring picker marks the English models and a note names them."""
    at = AppTest.from_function(_german_trial_scoring, default_timeout=60).run()
    assert not at.exception, at.exception
    assert "tiny-a · en only, not for de" in at.multiselect(key="trial_models").options
    assert any("The context is German; tiny-a was trained for English" in c.value for c in at.caption)


def test_a_spoken_question_meant_as_the_items_own_is_scored_against_its_gold(tiny_env):
    """The speech researcher's audit (2026-11-29): with "What you meant to say" set to the item's
    own question, a recogniser's version of it was "Not scored: this is not the item's own
    question", where NoiseQA scores a spoken question against the written one's gold."""
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    own = at.text_area(key="ask_question").value
    at.text_input(key="ask_reference").input(own).run()
    at.text_area(key="ask_question").input(own.lower().rstrip("?") + " uh").run()   # what a recogniser wrote
    at.button(key="ask_go").click().run()
    assert not at.exception
    shown_text = [shown(c.value) for c in at.caption] + [shown(m.value) for m in at.markdown]
    assert any("EM/F1 against the item's gold answers (what you meant to say is the item's own question)." in t
               for t in shown_text), shown_text
    assert not any("Not scored" in t for t in shown_text)
