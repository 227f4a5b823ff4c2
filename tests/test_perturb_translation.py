"""Round-trip translation perturbations and the translation backend interface."""
from __future__ import annotations

import random
import shutil

import pytest

from core.perturb import registry
from core.perturb.base import NotApplicable
from core.perturb.catalogue import translation
from core.translate import translators
from core.types import QAExample

TABLE = {
    ("de", "en"): {"In welchem Jahr begann die Serie?": "In which year did the series start?",
                   "In welchem Jahr startete die Serie?": "In what year did the series start?"},
    ("en", "de"): {"In which year did the series start?": "In welchem Jahr startete die Serie?",
                   "When did it end?": "Wann endete es?"},
    ("en", "es"): {"When did it end?": "¿Cuándo terminó?"},
    ("es", "en"): {"¿Cuándo terminó?": "When finished?"},
}


class CountingTranslator(translators.MappingTranslator):
    def __init__(self, table):
        super().__init__(table)
        self.calls = []

    def _translate(self, texts, src, tgt):
        self.calls.append((src, tgt, tuple(texts)))
        return super()._translate(texts, src, tgt)


@pytest.fixture()
def table_translator():
    t = CountingTranslator(TABLE)
    translation.use_translator(t)
    yield t
    translation.use_translator(None)


def ex(question, lang):
    return QAExample(id="q", question=question, context="ctx", lang=lang)


def test_translate_question_de_en_de(table_translator):
    p = registry.get("translate_question")
    v = p.apply(ex("In welchem Jahr begann die Serie?", "de"), random.Random(0))[0]
    assert v.text == "In welchem Jahr startete die Serie?"
    assert v.meta["pivot"] == "en" and v.meta["pivot_text"] == "In which year did the series start?"
    assert v.meta["backend"] == "mapping"
    assert "".join(e.replacement for e in v.edits) != ""   # edits recovered from the rewrite


def test_backtranslate_prefers_german_pivot_then_spanish():
    p = registry.get("backtranslate_Q")
    try:
        translation.use_translator(translators.MappingTranslator(TABLE))
        v = p.apply(ex("In which year did the series start?", "en"), random.Random(0))[0]
        assert v.meta["pivot"] == "de" and v.text == "In what year did the series start?"
        # without de<->en the automatic pivot falls back to Spanish
        no_german = {pair: table for pair, table in TABLE.items() if "de" not in pair}
        translation.use_translator(translators.MappingTranslator(no_german))
        v = p.apply(ex("When did it end?", "en"), random.Random(0))[0]
        assert v.meta["pivot"] == "es" and v.text == "When finished?"
        assert "no en->de, de->en pair" in p.why_not(ex("When did it end?", "en"), {"pivot": "de"})
        with pytest.raises(NotApplicable, match="no en->de, de->en pair"):
            p.apply(ex("When did it end?", "en"), random.Random(0), pivot="de")
    finally:
        translation.use_translator(None)


def test_prepare_translates_in_batches(table_translator):
    p = registry.get("translate_question")
    items = [ex("In welchem Jahr begann die Serie?", "de")] * 3
    p.prepare(items)
    assert table_translator.calls == [("de", "en", ("In welchem Jahr begann die Serie?",)),
                                      ("en", "de", ("In which year did the series start?",))]
    p.apply(items[0], random.Random(0))
    assert len(table_translator.calls) == 2    # served from the cache


def test_incompatible_without_a_backend_pair(table_translator):
    p = registry.get("translate_question")
    reason = p.why_not(ex("这个系列是哪一年开始的？", "zh"))
    assert "no zh->en, en->zh pair" in reason and not p.is_compatible(ex("x", "zh"))
    assert not registry.get("backtranslate_Q").is_compatible(ex("x", "de"))


def test_mapping_translator_refuses_unknown_text_and_pair():
    t = translators.MappingTranslator(TABLE)
    with pytest.raises(translators.TranslationError, match="no en->de translation"):
        t.translate(["Unknown?"], "en", "de")
    with pytest.raises(translators.TranslationError, match="cannot translate fr->en"):
        t.translate(["x"], "fr", "en")
    with pytest.raises(TypeError):
        t.translate("When did it end?", "en", "es")


@pytest.mark.skipif(shutil.which("apertium") is None, reason="Debian apertium not installed")
def test_apertium_backend_round_trip():
    t = translators.ApertiumTranslator()
    assert {("en", "es"), ("es", "en")} <= t.available_pairs()
    # one text per line in, one per line out, order kept, internal newlines flattened
    out = t.translate(["Who is the president?", "", "The house\nis red."], "en", "es")
    assert out == ["Quién es el presidente ?", "", "La casa es roja."]
    translation.use_translator(None)
    v = registry.get("backtranslate_Q").apply(ex("In what year did the Doctor Who series begin?", "en"),
                                              random.Random(0))[0]
    assert v.meta["backend"] == "apertium" and v.meta["pivot"] == "es"
    assert v.text == "In which year the Doctor Who the series begin?"
