"""AppTest: the Ask page answers a spoken question (a TTS-made WAV fed to st.audio_input) and a
translated one; bad audio and missing MT are explained. The trial page records, skips and resumes.

Speech: flite's kal16 voice says "what is the capital of france" (16 kHz WAV); both recognisers
transcribe it exactly (measured with pocketsphinx 5.1.1 and whisper base int8, see test_speech).
"""
from __future__ import annotations

import numpy as np
import pytest
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
    at.audio_input(key="ask_audio").set_value(("question.wav", question_wav, "audio/wav")).run()
    assert not at.exception
    # Whisper is the default recogniser; its transcript became the question.
    assert at.text_area(key="ask_question").value == SPOKEN
    table = at.dataframe[0].value
    assert list(table["engine"]) == ["pocketsphinx", "whisper-base"]
    assert list(table["transcript"]) == [SPOKEN, SPOKEN]
    assert list(table["WER %"]) == [0.0, 0.0]          # against the reference, both normalised
    assert len(at.get("audio")) == 1                   # the recording can be played back
    # Choosing the other recogniser puts its transcript into the question box.
    at.text_area(key="ask_question").input("something else").run()
    at.selectbox(key="ask_asr_engine").set_value("pocketsphinx").run()
    assert at.text_area(key="ask_question").value == SPOKEN
    at.button(key="ask_go").click().run()
    assert not at.exception
    assert any(t.startswith("Answer: ") for t in texts(at))
    assert at.session_state["ask_result"]["question"] == SPOKEN


@pytest.mark.parametrize("payload, message", [
    (b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is not a wave file", "not a readable audio file"),
    (to_wav_bytes(np.zeros(16000, dtype=np.float32), 16000), "is silent"),
    (b"", "empty audio"),
])
def test_bad_recordings_get_a_clear_message(tiny_env, payload, message):
    at = ask_with_pasted_context("what is the capital of france ?")
    at.audio_input(key="ask_audio").set_value(("question.wav", payload, "audio/wav")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith("The recording cannot be used:") and message in e for e in errors), errors
    assert at.text_area(key="ask_question").value == "what is the capital of france ?"   # untouched


def test_spanish_question_is_translated_shown_and_answered(tiny_env):
    at = ask_with_pasted_context("¿Cuál es la capital de Francia?")
    assert not at.exception
    # Auto-detect: Spanish, from its function words; Apertium translates; both texts are shown.
    assert any("Question language: Spanish — detected from the cues 'cuál', 'es', 'la', 'de', '¿'" in c.value
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
        warnings = [w.value for w in at.warning]
        assert any(w.startswith(f"No offline machine translation is installed for {name} → English: Debian "
                                "ships no Apertium pair for German or Chinese") for w in warnings), warnings
        at.button(key="ask_go").click().run()      # asked as typed
        assert at.session_state["ask_result"]["question"] == question
        assert at.session_state["ask_result"]["translator"] is None


def test_server_microphone_absence_is_explained(tiny_env):
    from core.speech import recorder

    ok, why = recorder.available()
    at = ask_with_pasted_context()
    captions = [c.value for c in at.caption]
    if ok:
        assert at.button(key="ask_server_record")
    else:
        assert f"Server microphone: not available — {why}." in captions
