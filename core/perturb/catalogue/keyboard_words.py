"""NoiseQA isolated artefacts: keyboard noise on function words only / on content words only.

The noise is NoiseQA's synthetic keyboard generator (the same one as ``keyboard_Q``): each
eligible word is chosen with probability ``p`` (0.25); a chosen word longer than one character gets
one randomly chosen letter replaced by a random row-wise QWERTY neighbour
(:data:`core.perturb.keyboards.NOISEQA_ROWWISE_QWERTY`), case kept. Only the words of one class
are eligible: function words (closed-class POS: ADP AUX CCONJ DET PART PRON SCONJ) or content
words (NOUN, PROPN, ADJ), as tagged by :mod:`core.perturb.nlp`. Draw order per eligible word:
``rng.random()``, then for a chosen word ``rng.choice`` of the position and of the neighbour.
``p = 1.0`` noises every word of the class.

Unlike ``keyboard_Q``, which types German on QWERTZ, these two type every Latin-script language on
NoiseQA's QWERTY map: they are NoiseQA's English artefacts, and a German sweep stored with them
keeps drawing the same variants. A language whose keyboard has a script of its own (Thai, of the
languages a tagger finds word classes for) is typed on that keyboard (:func:`keys_for`), where
QWERTY would find no letter to change.
"""
from __future__ import annotations

import random
from typing import Any

from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.keyboards import (
    LAYOUT_NAMES,
    NOISEQA_ROWWISE_QWERTY,
    SECOND_ALPHABET,
    layout_for,
    replace_keeping_case,
    rowwise,
)
from core.perturb.registry import register
from core.perturb.support import tagger_problem, tokens_of_class
from core.types import QAExample

SOURCE = "NoiseQA (Ravichander et al. 2021) §5, isolated artefacts (keyboard noise by word class)"


def keys_for(lang: str) -> tuple[str, dict[str, tuple[str, ...]]]:
    """The layout typed on and its row-wise neighbours: the language's own keyboard where it has a
    script of its own, NoiseQA's QWERTY map otherwise.

    >>> keys_for("de")[0], keys_for("zh")[0], keys_for("th")[0], keys_for("th")[1]["ก"]
    ('qwerty', 'qwerty', 'thai', ('ห', 'ด'))
    """
    layout = layout_for(lang)
    if layout in SECOND_ALPHABET:
        return layout, rowwise(layout)
    return "qwerty", NOISEQA_ROWWISE_QWERTY


def keyboard_letter_edit(word: str, offset: int, rng: random.Random, keys: dict[str, tuple[str, ...]]) -> Edit | None:
    """One NoiseQA keyboard typo in ``word`` (which starts at ``offset``) from the row-wise
    neighbours ``keys``, or None if no letter qualifies."""
    positions = [i for i, ch in enumerate(word) if keys.get(ch.lower())]
    if len(word) <= 1 or not positions:
        return None
    i = rng.choice(positions)
    original = word[i]
    new = replace_keeping_case(original, rng.choice(keys[original.lower()]))
    return Edit(offset + i, offset + i + 1, new, "keyboard")


class _KeyboardWordClass(Perturbation):
    """Keyboard noise restricted to one word class (the concrete classes are below)."""

    family = "artefact"
    field = "question"
    randomised = True
    parameters = (Param("p", 0.25, "probability that a word of the class gets a typo", min=0.0, max=1.0, step=0.05),)
    source = SOURCE
    word_class: str

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return tagger_problem(example.lang)

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        # before tagging: without a letter of the keyboard no word of any class is eligible
        layout, keys = keys_for(example.lang)
        if any(keys.get(ch.lower()) for ch in example.question):
            return None
        return f"{self.id} types on a {LAYOUT_NAMES[layout]} keyboard, and this question has no letter of it"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        keys = keys_for(example.lang)[1]
        eligible = [t for t in tokens_of_class(example.question, example.lang, self.word_class)
                    if len(t.text) > 1 and any(keys.get(ch.lower()) for ch in t.text)]
        if not eligible:
            return None
        edits, changed = [], []
        for token in eligible:
            if rng.random() >= params["p"]:
                continue
            edit = keyboard_letter_edit(token.text, token.start, rng, keys)
            edits.append(edit)
            changed.append({"token": token.text, "from": example.question[edit.start], "to": edit.replacement})
        return [make_variant(self, example, self.field, edits,
                             {"params": params, "word_class": self.word_class,
                              "n_eligible": len(eligible), "changed_tokens": changed})]


@register
class KeyboardFunctionWords(_KeyboardWordClass):
    id = "keyboard_function_Q"
    word_class = "function"
    description = "NoiseQA keyboard noise on function words only (each chosen with probability p)."


@register
class KeyboardContentWords(_KeyboardWordClass):
    id = "keyboard_content_Q"
    word_class = "content"
    description = "NoiseQA keyboard noise on content words only (nouns, adjectives; probability p each)."
