"""Gan & Ng paraphrases (catalogue/paraphrase.py): every rule, lexical substitution, adversarial."""
from __future__ import annotations

import random

import pytest

from core.perturb import registry, similarity
from core.perturb.catalogue.paraphrase import RULE_NAMES
from core.types import Answer, QAExample


def ex(question: str, context: str = "ctx", answers=(), lang: str = "en") -> QAExample:
    return QAExample(id="q", question=question, context=context, answers=tuple(answers), lang=lang)


def rule(name: str, question: str) -> str | None:
    out = registry.get("paraphrase_rules_Q").apply(ex(question), random.Random(0), rule=name)
    return None if out is None else out[0].text


@pytest.mark.parametrize("name, question, expected", [
    ("what_to_which", "In what year did the Normans conquer England?",
     "In which year did the Normans conquer England?"),
    ("what_to_which", "What is the capital?", None),                         # pronoun "what": no noun after it
    ("which_to_what", "Which team won the game?", "What team won the game?"),
    ("how_many", "How many people live in Warsaw?", "What number of people live in Warsaw?"),
    ("how_much", "How much money did the film make?", "What amount of money did the film make?"),
    ("how_much", "How much did the film cost?", None),                      # no noun after "much"
    ("in_what_year_to_when", "In what year did the Normans conquer England?", "When did the Normans conquer England?"),
    ("what_year_to_in_what_year", "What year was the university founded?", "In what year was the university founded?"),
    ("kind_to_type", "What kind of animal is it?", "What type of animal is it?"),
    ("type_to_kind", "What type of engine is it?", "What kind of engine is it?"),
    ("why_to_for_what_reason", "Why did the war end?", "For what reason did the war end?"),
    ("name_of_to_called", "What is the name of the band's first album?", "What is the band's first album called?"),
    ("how_old_to_what_age", "How old was Tesla when he died?", "What age was Tesla when he died?"),
    ("expand_contractions", "Who didn't go and can't swim?", "Who did not go and cannot swim?"),
    ("expand_contractions", "Why didn't he go?", None),                      # inversion: would need "did he not"
])
def test_each_rule(name, question, expected):
    assert rule(name, question) == expected


def test_every_rule_has_a_test():
    tested = {"what_to_which", "which_to_what", "how_many", "how_much", "in_what_year_to_when",
              "what_year_to_in_what_year", "kind_to_type", "type_to_kind", "why_to_for_what_reason",
              "name_of_to_called", "how_old_to_what_age", "expand_contractions"}
    assert set(RULE_NAMES) == tested


def test_rules_all_gives_one_variant_per_matching_rule_with_similarity():
    out = registry.get("paraphrase_rules_Q").apply(ex("In what year did the Normans conquer England?"),
                                                   random.Random(0))
    assert [v.meta["rule"] for v in out] == ["what_to_which", "in_what_year_to_when"]
    assert all(0.9 < v.meta["similarity"] <= 1.0 + 1e-6 for v in out)
    assert registry.get("paraphrase_rules_Q").apply(ex("Where is it?"), random.Random(0)) is None


def test_threshold_filters_rewrites():
    # "For what reason" scores ~0.91 against "Why didn't he go?"; a 0.95 bar drops it
    p = registry.get("paraphrase_rules_Q")
    assert p.apply(ex("Why didn't he go?"), random.Random(0), threshold=0.95) is None
    assert p.apply(ex("Why didn't he go?"), random.Random(0), threshold=0.85)[0].text == "For what reason didn't he go?"


def test_similarity_scores_are_cosines():
    a, b = similarity.similarities("When did the war end?", ["When did the war end?", "What is a banana?"])
    assert a == pytest.approx(1.0, abs=1e-5) and b < 0.3


def test_lexical_substitution_exact():
    p = registry.get("paraphrase_lexical_Q")
    v = p.apply(ex("Who registered the most sacks on the team this season?"), random.Random(0))[0]
    assert v.text == "Who registered the most sacks on the squad this season?"
    assert v.meta["replaced"] == [{"word": "team", "replacement": "squad", "pos": "NOUN"}]
    assert 0.9 <= v.meta["similarity"] < 1.0
    # the same swap in a short question scores ~0.81 against the original: below the 0.9 bar
    assert p.apply(ex("Which team won the game?"), random.Random(0)) is None
    assert p.apply(ex("Which team won the game?"), random.Random(0),
                   threshold=0.8)[0].text == "Which squad won the game?"
    # two words: the second is scored with the first in place; "were selected" -> participle "chosen"
    v = p.apply(ex("How many Panthers defense players were selected for the Pro Bowl?"), random.Random(0), n_words=2)[0]
    assert v.text == "How many Panthers defense participants were chosen for the Pro Bowl?"
    assert [r["word"] for r in v.meta["replaced"]] == ["players", "selected"]
    assert p.apply(ex("Who is he?"), random.Random(0)) is None   # nothing substitutable


ADV_CONTEXT = "Doctor Who began on BBC television in 1963. The series was first shown in high definition in 2009."
ADV_QUESTION = "When did the series start being shown in high definition?"


def test_adversarial_uses_words_near_a_same_type_distractor():
    gold = Answer("2009", ADV_CONTEXT.index("2009"))
    v = registry.get("paraphrase_adversarial_Q").apply(ex(ADV_QUESTION, ADV_CONTEXT, [gold]), random.Random(0))[0]
    assert v.text == "When did the series begin being shown in high definition?"
    assert v.meta["distractor"] == "1963" and v.meta["label"] == "DATE"
    assert ADV_CONTEXT[v.meta["distractor_start"]:v.meta["distractor_end"]] == "1963"
    assert v.meta["replaced"] == [{"word": "start", "replacement": "begin", "context_word": "began"}]
    assert v.example.answers == (gold,) and v.example.context == ADV_CONTEXT


def test_adversarial_none_without_a_distractor_of_the_same_type():
    context = "The series was first shown in high definition in 2009."
    gold = Answer("2009", context.index("2009"))
    assert registry.get("paraphrase_adversarial_Q").apply(ex(ADV_QUESTION, context, [gold]), random.Random(0)) is None
    assert registry.get("paraphrase_adversarial_Q").apply(ex(ADV_QUESTION, ADV_CONTEXT), random.Random(0)) is None


def test_paraphrases_are_english_only():
    for pid in ("paraphrase_rules_Q", "paraphrase_lexical_Q", "paraphrase_adversarial_Q"):
        p = registry.get(pid)
        assert p.family == "paraphrase" and p.source.startswith("Gan & Ng")
        assert not p.is_compatible(ex("Wie viele?", lang="de"))
