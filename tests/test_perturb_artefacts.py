"""NoiseQA isolated artefacts (catalogue/artefacts.py, catalogue/keyboard_words.py): exact outputs."""
from __future__ import annotations

import random

import pytest

from core.perturb import registry
from core.perturb.base import PerturbationError
from core.perturb.keyboards import NOISEQA_ROWWISE_QWERTY
from core.types import Answer, QAExample

OBAMA = "What did Barack Obama's wife, Michelle, study at Princeton University?"
BRIDGE = "Who built the Golden Gate Bridge in San Francisco in 1963?"


def ex(question: str, lang: str = "en") -> QAExample:
    return QAExample(id="q1", question=question, context="Some context.", answers=(Answer("Some", 0),), lang=lang)


def run(pid: str, question: str, lang: str = "en", seed: int = 0, **params):
    out = registry.get(pid).apply(ex(question, lang), random.Random(seed), **params)
    return None if out is None else out[0]


def test_ids_are_registered_with_family_and_source():
    for pid in ("drop_punct_Q", "drop_qmark_Q", "drop_function_Q", "drop_content_Q", "entity_placeholder_Q",
                "spell_numerals_Q", "keyboard_function_Q", "keyboard_content_Q"):
        p = registry.get(pid)
        assert p.family == "artefact" and p.field == "question"
        assert p.source.startswith("NoiseQA")


def test_drop_punct_deletes_every_mark_but_keeps_number_separators():
    v = run("drop_punct_Q", OBAMA)
    assert v.text == "What did Barack Obamas wife Michelle study at Princeton University"
    assert v.meta["n_removed"] == 4
    # standalone marks take their space with them; "3,000" and "2.5" keep their separators
    assert run("drop_punct_Q", "Was it 3,000 or 2.5 (roughly) ?").text == "Was it 3,000 or 2.5 roughly"
    assert run("drop_punct_Q", "No punctuation here") is None


def test_drop_qmark_only_final_mark():
    v = run("drop_qmark_Q", "Who? Why is it so ?")
    assert v.text == "Who? Why is it so"
    assert [(e.start, e.end, e.replacement) for e in v.edits] == [(17, 19, "")]
    assert run("drop_qmark_Q", "谁创立了这家公司？", lang="zh").text == "谁创立了这家公司"
    assert run("drop_qmark_Q", "Πότε ξεκίνησε;", lang="el").text == "Πότε ξεκίνησε"
    assert run("drop_qmark_Q", "Tell me the year.") is None


def test_drop_function_words():
    v = run("drop_function_Q", OBAMA)
    # What/PRON, did (tagged VERB here, kept), 's/PART, at/ADP; the clitic leaves no gap
    assert v.text == "did Barack Obama wife, Michelle, study Princeton University?"
    assert v.meta["words"] == ["What", "'s", "at"]
    assert run("drop_function_Q", BRIDGE).text == "built Golden Gate Bridge San Francisco 1963?"


def test_drop_content_words_takes_possessive_clitic_along():
    assert run("drop_content_Q", OBAMA).text == "What did,, at?"
    assert run("drop_content_Q", BRIDGE).text == "Who built the in in 1963?"


def test_entity_placeholder_generic_and_tag():
    v = run("entity_placeholder_Q", BRIDGE, seed=0)
    # two LOC entities: "the Golden Gate Bridge" (spaCy FAC includes "the") and "San Francisco"
    assert v.meta["entity"] in ("the Golden Gate Bridge", "San Francisco")
    texts = {run("entity_placeholder_Q", BRIDGE, seed=s).text for s in range(20)}
    assert texts == {"Who built some place in San Francisco in 1963?",
                     "Who built the Golden Gate Bridge in some place in 1963?"}
    v = run("entity_placeholder_Q", "Where did Barack Obama's wife study?", style="tag")
    assert v.text == "Where did [PER]'s wife study?" and v.meta["label"] == "PER"
    assert run("entity_placeholder_Q", "谁在北京创立了这家公司？", lang="zh").text == "谁在某地创立了这家公司？"
    # XQuAD-zh: jieba tags the transliterated part of a name "nrt", and an interpunct joins the
    # parts of a foreign name; the whole name is replaced (it was "某人里德", "某人·坎克利")
    jared = run("entity_placeholder_Q", "贾里德在职业生涯中有多少次擒杀？", lang="zh")
    assert jared.text == "某人在职业生涯中有多少次擒杀？"
    assert run("entity_placeholder_Q", "卢克·坎克利贡献了多少次擒抱？", lang="zh").text == "某人贡献了多少次擒抱？"
    assert run("entity_placeholder_Q", "What is the capital?") is None
    with pytest.raises(PerturbationError):
        run("entity_placeholder_Q", BRIDGE, style="brackets")


def test_entity_placeholder_incompatible_without_ner():
    p = registry.get("entity_placeholder_Q")
    assert not p.is_compatible(ex("Wer gründete Siemens?", lang="de"))
    assert "not 'de'" in p.why_not(ex("Wer gründete Siemens?", lang="de"))


def test_spell_numerals_years_cardinals_ordinals_decimals():
    assert run("spell_numerals_Q", BRIDGE).text == (
        "Who built the Golden Gate Bridge in San Francisco in nineteen sixty-three?")
    v = run("spell_numerals_Q", "Were 1,250 or 2.5 people there in the 19th century, in 2009?")
    assert v.text == ("Were one thousand, two hundred and fifty or two point five people there in the "
                      "nineteenth century, in two thousand and nine?")
    assert v.meta["numerals"] == ["1,250", "2.5", "19th", "2009"]
    # German: decimal comma, thousands dot, year reading
    assert run("spell_numerals_Q", "Lebten 1963 dort 3,5 oder 1.200 Menschen?", lang="de").text == \
        "Lebten neunzehnhundertdreiundsechzig dort drei Komma fünf oder eintausendzweihundert Menschen?"
    assert run("spell_numerals_Q", "A320 or 3D?") is None
    assert not registry.get("spell_numerals_Q").is_compatible(ex("1963年", lang="zh"))


def test_keyboard_function_words_only():
    v = run("keyboard_function_Q", OBAMA, p=1.0)
    assert v.text == "Whar did Barack Obama'a wife, Michelle, study ay Princeton University?"
    for change in v.meta["changed_tokens"]:
        assert change["to"] in NOISEQA_ROWWISE_QWERTY[change["from"]]
    assert [c["token"] for c in v.meta["changed_tokens"]] == ["What", "'s", "at"]
    # p = 0.25 with seed 0: no function word drawn; the variant is unchanged and says so
    v = run("keyboard_function_Q", OBAMA, p=0.25)
    assert v.text == OBAMA and v.meta["changed"] is False


def test_keyboard_content_words_only():
    v = run("keyboard_content_Q", OBAMA, p=1.0)
    assert v.text == "What did Barsck Obams's wide, Micgelle, atudy at Princetom Ubiversity?"
    assert v.meta["n_eligible"] == 7
    # function words untouched
    assert v.text.startswith("What did ") and " at " in v.text


def test_original_example_is_not_mutated_and_answers_kept():
    e = ex(OBAMA)
    registry.get("drop_content_Q").apply(e, random.Random(0))
    assert e.question == OBAMA
    v = run("drop_punct_Q", OBAMA)
    assert v.example.context == "Some context." and v.example.answers == (Answer("Some", 0),)
