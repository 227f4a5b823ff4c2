"""Apertium pairs from Debian (.ci/apt-packages.txt): which directions exist, exact translations.

Exact outputs were measured with apertium 3.8.3, apertium-eng-spa 0.8.1, apertium-en-gl 0.5.4,
apertium-eo-en 1.0.2 and apertium-eu-en 0.3.3 (Debian 12/13); rule-based, so deterministic.
"""
from __future__ import annotations

import pytest

from core.translate import translators


@pytest.fixture(scope="module")
def apertium():
    # Not skipped when missing: ./run.sh test installs .ci/apt-packages.txt, and the error names
    # the packages to install.
    return translators.ApertiumTranslator()


def test_pairs_from_the_debian_packages(apertium):
    pairs = apertium.available_pairs()
    # eng<->spa, eng<->cat, eng<->glg both ways; epo both ways (apertium-eo-en ships en-eo too);
    # eus only into English.
    for pair in [("es", "en"), ("en", "es"), ("ca", "en"), ("en", "ca"), ("gl", "en"), ("en", "gl"),
                 ("eo", "en"), ("en", "eo"), ("eu", "en")]:
        assert pair in pairs, f"{pair} missing from {sorted(pairs)}"
    assert ("en", "eu") not in pairs
    assert not any("de" in p or "zh" in p for p in pairs)
    assert translators.no_backend_reason([("de", "en")], apertium).startswith("apertium has no de->en pair")


def test_known_spanish_xquad_question(apertium):
    # XQuAD es, id 56beb4343aeaaa14008c925b (xquad.en: "How many points did the Panthers defense surrender?")
    assert apertium.translate(["¿Cuántos puntos dejaron escapar en defensa los Panthers?"], "es", "en") == \
        ["How many points left to escape in defence the Panthers?"]


def test_galician_esperanto_basque_into_english(apertium):
    assert apertium.translate(["Cal é a capital de Francia?"], "gl", "en") == ["Which is the capital of France?"]
    assert apertium.translate(["Kio estas la ĉefurbo de Francio?"], "eo", "en") == ["What is the capital of France?"]
    assert apertium.translate(["Zein da Frantziako hiriburua?"], "eu", "en") == ["Which He is France's capital?"]


def test_batch_keeps_order_and_count(apertium):
    out = apertium.translate(["¿Cuál es la capital de Francia?", "",
                              "¿Cuántos puntos dejaron escapar en defensa los Panthers?"], "es", "en")
    assert out == ["Which is the capital of France?", "",
                   "How many points left to escape in defence the Panthers?"]


def test_unsupported_pair_names_what_exists(apertium):
    with pytest.raises(translators.TranslationError, match=r"cannot translate de->en; available pairs: .*es->en"):
        apertium.translate(["Was ist die Hauptstadt von Frankreich?"], "de", "en")


def test_a_long_batch_goes_in_bounded_calls_with_the_same_lines_and_a_slow_call_is_one_error():
    texts = ["Which is the capital of France?", "How many points did the Panthers defense surrender?",
             "Who wrote the book?", "Where is the river?", "When did the war end?"]
    whole = translators.ApertiumTranslator().translate(texts, "en", "es")
    small = translators.ApertiumTranslator()
    small.lines_per_call = 2   # three processes: 2 + 2 + 1 lines
    assert small.translate(texts, "en", "es") == whole and len(whole) == 5
    assert whole[0] == "Cuál es el capital  de Francia?"   # Apertium's own output, measured
    slow = translators.ApertiumTranslator(timeout_s=0.0001)   # no process starts that fast
    with pytest.raises(translators.TranslationError, match=r"apertium eng-spa took more than 0.0001 s for 5 lines"):
        slow.translate(texts, "en", "es")
