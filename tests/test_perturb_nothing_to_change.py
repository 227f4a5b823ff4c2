"""Perturbation.nothing_to_change: a question whose text leaves a perturbation nothing to change
(a case change in Chinese, keyboard noise in Arabic, RUQ without an umlaut) is told from the text
alone, before a sweep, and ``apply`` then indeed returns None."""
from __future__ import annotations

import random

import pytest

from core.perturb import registry
from core.perturb.base import NotApplicable
from core.types import Answer, QAExample


def example(question: str, lang: str) -> QAExample:
    return QAExample("q", question, "Anna kam 1999 nach Berlin.", [Answer("Anna", 0)], lang=lang)


@pytest.mark.parametrize("pid, question, lang, reason", [
    ("TUQ", "谁来了？", "zh", "TUQ changes letter case, and this question has no letter with case"),
    ("ICQ", "ใครมา", "th", "ICQ changes letter case, and this question has no letter with case"),
    ("TLQ", "who came?", "en", "TLQ leaves this question as it is: it is written that way already"),
    ("TUQ", "WHO CAME 2 DAYS AGO?", "en", "TUQ leaves this question as it is: it is written that way already"),
    ("RUQ", "Who came?", "en", "RUQ replaces umlauts and ß, and this question has none"),
    ("typo_Q", "من جاء؟", "ar", "typo_Q types on a QWERTZ keyboard, and this question has no letter of it"),
    ("keyboard_Q", "谁来了？", "zh",   # Chinese is typed through pinyin: no keyboard of its letters here
     "keyboard_Q types on a QWERTY keyboard, and no word of this question (split at spaces) has a letter of it"),
    ("keyboard_Q", "a 1999 ?", "en",   # the one letter is a word of one character: never typed wrong
     "keyboard_Q types on a QWERTY keyboard, and no word of this question (split at spaces) has a letter of it"),
    ("keyboard_content_Q", "谁来了？", "zh",
     "keyboard_content_Q types on a QWERTY keyboard, and this question has no letter of it"),
])
def test_the_reason_is_said_and_apply_gives_nothing(pid, question, lang, reason):
    p, ex = registry.get(pid), example(question, lang)
    assert p.nothing_to_change(ex) == reason
    assert p.apply(ex, random.Random(0)) is None


@pytest.mark.parametrize("pid, question, lang, params", [(*case, {})[:4] for case in [
    ("TUQ", "Wer kam?", "de"), ("TLQ", "ΠΟΙΟΣ;", "el"), ("RUQ", "Wer kam aus Köln?", "de"),
    ("typo_Q", "Wer?", "de"), ("keyboard_Q", "谁是NFL的MVP？", "zh"), ("keyboard_Q", "Who came?", "en"),
    ("keyboard_Q", "Кто пришёл?", "ru"), ("keyboard_Q", "Πόσους πόντους;", "el"), ("keyboard_Q", "من جاء؟", "ar"),
    ("keyboard_Q", "कौन आया?", "hi"), ("keyboard_Q", "ใครมา บ้าง", "th"),
    ("keyboard_content_Q", "ใครก่อตั้งมหาวิทยาลัย", "th"),   # word classes by PyThaiNLP, Thai keys
    ("typo_Q", "Кто?", "ru", {"layout": "russian"}),
]])
def test_a_question_it_can_change_has_no_reason(pid, question, lang, params):
    """Russian, Greek, Arabic, Hindi and Thai questions are typed on their own keyboards (before: no
    letter of QWERTY, nothing changed)."""
    p, ex = registry.get(pid), example(question, lang)
    assert p.nothing_to_change(ex, params) is None
    assert p.apply(ex, random.Random(0), **params) is not None


@pytest.mark.needs_data("xquad/xquad.en.json")
def test_on_every_xquad_language_a_reason_means_apply_returns_none():
    """The contract over the catalogue: wherever a perturbation says its question leaves it nothing
    to change, ``apply`` returns None (the first 25 questions of each of XQuAD's 12 languages; the
    perturbations that say nothing are not run, so no encoder or voice is loaded)."""
    from core.datasets import load_dataset

    said = 0
    for lang in ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"):
        for ex in load_dataset(f"xquad/xquad.{lang}").examples[:25]:
            for p in registry.all_perturbations():
                if p.why_not_before_loading(ex) is not None:
                    continue
                reason = p.nothing_to_change(ex)
                if reason is None:
                    continue
                said += 1
                try:
                    got = p.apply(ex, random.Random(0))
                except NotApplicable:   # a missing tagger: refused, so nothing changed either
                    continue
                assert got is None, (p.id, lang, ex.question, reason)
    assert said > 12 * 25   # case in ar/hi/th/zh, keyboards in ar/el/hi/ru/th/zh, RUQ nearly everywhere
