"""NoiseQA mitigation (a): question repair with the context, final question mark, spellchecker."""
from __future__ import annotations

import pytest

from core.perturb import repair
from core.types import QAExample

CONTEXT = ("Doctor Who first appeared on BBC television in 1963. Since 2009 the series has been "
           "televised in HDTV by the British Broadcasting Corporation.")
NOISY = "Since what yaer has Docter Who been televized in HDTV"


def test_word_cer_is_relative_to_the_context_word():
    assert repair.word_cer("Doctor", "Docter") == pytest.approx(1 / 6)
    assert repair.word_cer("ab", "abcd") == 1.0
    assert repair.closest_word("televized", ["television", "televised", "in"]) == ("televised", pytest.approx(1 / 9))


def test_context_repair_content_words_only():
    r = repair.repair_with_context(NOISY, CONTEXT, "en", mode="content")
    # "Docter" (PROPN) -> "Doctor"; the verb "televized" is not a content word (nouns, adjectives)
    assert r.text == "Since what yaer has Doctor Who been televized in HDTV"
    assert [(c.old, c.new) for c in r.changes] == [("Docter", "Doctor")]
    assert r.changes[0].reason == "closest context word, CER 0.17"


def test_context_repair_all_words_and_threshold():
    r = repair.repair_with_context(NOISY, CONTEXT, "en", mode="all")
    assert r.text == "Since what yaer has Doctor Who been televised in HDTV"
    # "yaer" has no context word within CER 0.5: left alone; a 0.12 bar keeps only "televized" (1/9)
    strict = repair.repair_with_context(NOISY, CONTEXT, "en", mode="all", max_cer=0.12)
    assert [(c.old, c.new) for c in strict.changes] == [("televized", "televised")]


def test_context_repair_entities_only():
    r = repair.repair_with_context("Where did Barak Obama study?", "Barack Obama studied at Columbia.", "en",
                                   mode="entities")
    assert r.text == "Where did Barack Obama study?"
    with pytest.raises(ValueError, match="mode"):
        repair.repair_with_context("q", "c", mode="verbs")


def test_add_question_mark():
    assert repair.add_question_mark("Where is it ").text == "Where is it?"
    assert repair.add_question_mark("Where is it?").changes == []
    assert repair.add_question_mark("这是哪里", "zh").text == "这是哪里？"
    assert repair.add_question_mark("Πού είναι", "el").text == "Πού είναι;"


def test_spellcheck_leaves_names_and_acronyms():
    r = repair.spellcheck("Whta yaer was the compnay of Obama foundde in HDTV?")
    assert r.text == "What year was the company of Obama founded in HDTV?"
    assert [c.old for c in r.changes] == ["Whta", "yaer", "compnay", "foundde"]
    with pytest.raises(ValueError, match="no spellchecker dictionary"):
        repair.spellcheck("x", "zh")


def test_repair_example_replaces_only_the_question():
    e = QAExample(id="q", question=NOISY, context=CONTEXT)
    fixed, result = repair.repair_example(e, "context", mode="all")
    assert fixed.question == result.text and fixed.context == CONTEXT and fixed.id == "q"
    with pytest.raises(ValueError, match="takes no options"):
        repair.repair_example(e, "spellcheck", mode="all")
