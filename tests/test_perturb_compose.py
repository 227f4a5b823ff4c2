"""Composite perturbations (core/perturb/compose.py)."""
from __future__ import annotations

import random

import pytest

from core.perturb.base import PerturbationError, apply_edits
from core.perturb.compose import Composite, compose, resolve
from core.types import Answer, QAExample

Q = "When did Doctor Who start in 1963?"


def ex(question=Q, context="Doctor Who started in 1963.", answers=(Answer("1963", 22),)):
    return QAExample(id="q", question=question, context=context, answers=answers)


def test_tlq_then_keyboard_recomputes_edits_by_diff():
    c = compose(["TLQ", "keyboard_Q"], {"keyboard_Q": {"p": 1.0}})
    v = c.apply(ex(), random.Random(0))[0]
    # lower-cased first, then every word with a letter gets one row-wise QWERTY typo (the second
    # step draws from core.perturb.spec.step_rng: a generator seeded by the first's, as in a sweep)
    assert v.text == "whwn sid dictor eho srart on 1963?"
    assert c.id == "TLQ+keyboard_Q" and c.randomised and c.family == "keyboard"
    assert [m["id"] for m in v.meta["chain"]] == ["TLQ", "keyboard_Q"]
    # keyboard noise hit a letter TLQ had produced ("w" of "who"): offsets no longer line up
    assert v.meta["edits_from"] == "diff" and {e.kind for e in v.edits} == {"composite"}
    assert apply_edits(ex(), "question", v.edits).question == v.text
    assert v.cer == pytest.approx(8 / 34)


def test_independent_steps_keep_their_edits():
    v = compose(["spell_numerals_Q", "TLQ"]).apply(ex(), random.Random(0))[0]
    assert v.text == "when did doctor who start in nineteen sixty-three?"
    assert v.meta["edits_from"] == "steps"
    assert [(e.start, e.end, e.replacement, e.kind) for e in v.edits] == [
        (0, 1, "w", "case"), (9, 10, "d", "case"), (16, 17, "w", "case"),
        (29, 33, "nineteen sixty-three", "spell_numeral")]
    # adjacent edits (the numeral, then the question mark right after it) still map
    v = compose(["drop_qmark_Q", "spell_numerals_Q"]).apply(ex(), random.Random(0))[0]
    assert v.text == "When did Doctor Who start in nineteen sixty-three"
    assert [(e.start, e.end, e.kind) for e in v.edits] == [(29, 33, "spell_numeral"), (33, 34, "drop_qmark")]
    assert apply_edits(ex(), "question", v.edits).question == v.text


def test_seeded_composite_is_reproducible_and_none_propagates():
    c = compose(["TLQ", "keyboard_Q"])
    assert c.apply(ex(), random.Random(7))[0].text == c.apply(ex(), random.Random(7))[0].text
    # drop_qmark_Q does not apply to a question without "?": the chain does not apply
    assert compose(["drop_qmark_Q", "TLQ"]).apply(ex(question="When did it start"), random.Random(0)) is None


def test_bad_compositions_are_refused():
    with pytest.raises(PerturbationError, match="one field"):
        Composite(["TLQ", "DRC"])
    with pytest.raises(PerturbationError, match="at least 2"):
        Composite(["TLQ"])
    with pytest.raises(PerturbationError, match="not in the chain"):
        Composite(["TLQ", "keyboard_Q"], {"DPQ": {}})
    with pytest.raises(PerturbationError):
        Composite(["TLQ", "keyboard_Q"], {"keyboard_Q": {"p": 2.0}})
    with pytest.raises(KeyError, match="unknown perturbation id"):
        Composite(["TLQ", "nope"])


def test_resolve_spec():
    assert resolve("TLQ").id == "TLQ"
    assert resolve("TLQ + keyboard_Q").id == "TLQ+keyboard_Q"
    with pytest.raises(PerturbationError, match="empty id"):
        resolve("TLQ++DPQ")
