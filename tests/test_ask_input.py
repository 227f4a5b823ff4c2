"""core.explore.ask_input: the Ask page's speech comparison and question-translation logic."""
from __future__ import annotations

import numpy as np
import pytest

from core.explore import ask_input
from core.speech.audio import Audio
from core.translate import translators

ES_EN = translators.MappingTranslator(
    {("es", "en"): {"¿Cuál es la capital de Francia?": "Which is the capital of France?"}})


def test_plan_same_language_is_asked_as_typed():
    plan = ask_input.plan_question("what is the capital of france", ask_input.AUTO, "en", [ES_EN])
    assert (plan.lang, plan.asked, plan.translated, plan.problem) == (
        "en", "what is the capital of france", False, None)
    assert plan.guess.evidence == ("what", "is", "the", "of")


def test_plan_translates_with_the_first_backend_that_covers_the_pair():
    cache: dict = {}
    other = translators.MappingTranslator({("de", "en"): {}})
    plan = ask_input.plan_question("¿Cuál es la capital de Francia?", ask_input.AUTO, "en", [other, ES_EN], cache)
    assert (plan.lang, plan.asked, plan.translator) == ("es", "Which is the capital of France?", "mapping")
    assert cache == {("mapping", "es", "en", "¿Cuál es la capital de Francia?"): "Which is the capital of France?"}
    # Served from the cache (an empty table would fail otherwise).
    empty = translators.MappingTranslator({("es", "en"): {}})
    again = ask_input.plan_question("¿Cuál es la capital de Francia?", "es", "en", [empty], cache)
    assert again.asked == "Which is the capital of France?" and again.guess is None


def test_plan_without_mt_says_so_and_asks_as_typed():
    plan = ask_input.plan_question("Was ist die Hauptstadt von Frankreich?", ask_input.AUTO, "en", [ES_EN])
    assert plan.lang == "de" and plan.asked == "Was ist die Hauptstadt von Frankreich?" and not plan.translated
    assert plan.problem == (
        "No offline machine translation is installed for German → English: Debian ships no Apertium pair for "
        "German or Chinese, and no neural translation model ships its weights through a package registry. "
        "The question is asked as typed (a multilingual model may still answer it); to translate it, supply a "
        "local seq2seq translation model folder.")
    gl = ask_input.plan_question("Cal é a capital de Francia?", "gl", "en", [ES_EN])
    assert "the installed backends cover es→en" in gl.problem
    assert "no translation backend is installed" in ask_input.plan_question("x", "gl", "en", []).problem
    failed = ask_input.plan_question("¿Qué?", "es", "en", [ES_EN])
    assert failed.problem.startswith("Translation failed: no es->en translation in the table")


def test_wer_against_normalises_both_sides():
    assert ask_input.wer_against("What is the capital of France?", "what is the capital of france") == 0.0
    assert ask_input.wer_against("When was the tower completed?", "when was that our completed") == pytest.approx(0.4)
    assert ask_input.wer_against("", "anything") is None and ask_input.wer_against("x", None) is None


def test_engine_problems_and_failures_are_reported_not_raised():
    assert ask_input.engine_problem("pocketsphinx", "es") == "pocketsphinx recognises en only, not Spanish"
    assert ask_input.engine_problem("kaldi", None) == "unknown ASR engine 'kaldi'; known: pocketsphinx, whisper-base"
    silent = Audio(np.zeros(16000, dtype=np.float32), 16000)
    [kaldi, ps] = ask_input.transcribe_all(silent, ["kaldi", "pocketsphinx"])
    assert kaldi.text is None and "unknown ASR engine" in kaldi.error
    assert ps.text is None and "silent" in ps.error
