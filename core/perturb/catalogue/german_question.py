"""Whole-question perturbations of Satheesh et al. (2024), "German extractive QA robustness", Table 6.

* Case: **TLQ** lower case, **TUQ** upper case, **TTQ** title case, **ICQ** inverted case.
  Title case upper-cases the first character of every word (:data:`core.perturb.nlp.WORD_RE`) and
  lower-cases the rest - not Python's ``str.title()``, which would write "What'S".
  Upper-casing follows Python (``"ß".upper() == "SS"``).
* Punctuation: **DPQ** deletes every punctuation character (Unicode category P*); **IPQ** inserts
  one random punctuation mark from :data:`PUNCTUATION_MARKS` at a random position
  ``rng.randint(0, len(question))`` (anywhere, inside words too - our choice, the paper only says
  "insert a random punctuation mark").
* **RUQ**: replace umlauts and ß by their ASCII spellings (ä->ae, ö->oe, ü->ue, Ä->AE, Ö->OE,
  Ü->UE, ß->ss).
* **typo_Q**: per-character keyboard typos - every letter on the layout is, with probability
  ``rate`` (0.1), replaced by a random neighbouring key (full adjacency, German QWERTZ by
  default; see :mod:`core.perturb.keyboards`); case kept.
* **repeat_question**: the question written twice, separated by a space.

Deterministic perturbations return None when they would not change the question (no umlaut, no
punctuation, already lower-case...). typo_Q returns None only when the question has no letter on
the layout; a variant may then still equal the original by chance (``meta["changed"]``).
"""
from __future__ import annotations

import random
import unicodedata
from typing import Any

from core.perturb import keyboards
from core.perturb.base import Edit, Param, Perturbation, Variant, diff_edits, make_variant
from core.perturb.nlp import WORD_RE
from core.perturb.registry import register
from core.types import QAExample

SOURCE = "German QA robustness (Satheesh et al. 2024), Table 6"

PUNCTUATION_MARKS = ".,;:!?'\"-()"
UMLAUTS = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "AE", "Ö": "OE", "Ü": "UE", "ß": "ss"}


class QuestionPerturbation(Perturbation):
    field = "question"
    source = SOURCE


class CaseChange(QuestionPerturbation):
    """Shared implementation of the case perturbations: a deterministic rewrite of the question."""

    family = "case"
    randomised = False

    def transform(self, text: str) -> str:
        raise NotImplementedError

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        if self.transform(example.question) != example.question:
            return None
        if not any(ch.lower() != ch.upper() for ch in example.question):
            return f"{self.id} changes letter case, and this question has no letter with case"
        return f"{self.id} leaves this question as it is: it is written that way already"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        new = self.transform(example.question)
        if new == example.question:
            return None
        return [make_variant(self, example, self.field, diff_edits(example.question, new, "case"),
                             {"params": params})]


def title_case(text: str) -> str:
    """First character of every word upper-cased, the rest lower-cased; non-words untouched."""
    return WORD_RE.sub(lambda m: m.group()[0].upper() + m.group()[1:].lower(), text)


@register
class TLQ(CaseChange):
    id = "TLQ"
    description = "Lower-case the question"

    def transform(self, text: str) -> str:
        return text.lower()


@register
class TUQ(CaseChange):
    id = "TUQ"
    description = "Upper-case the question"

    def transform(self, text: str) -> str:
        return text.upper()


@register
class TTQ(CaseChange):
    id = "TTQ"
    description = "Title-case the question (every word capitalised)"

    def transform(self, text: str) -> str:
        return title_case(text)


@register
class ICQ(CaseChange):
    id = "ICQ"
    description = "Invert the case of every letter of the question"

    def transform(self, text: str) -> str:
        return text.swapcase()


@register
class DPQ(QuestionPerturbation):
    id = "DPQ"
    family = "punctuation"
    randomised = False
    description = "Delete all punctuation from the question"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        edits = [Edit(i, i + 1, "", "delete_punct") for i, ch in enumerate(example.question)
                 if unicodedata.category(ch).startswith("P")]
        if not edits:
            return None
        return [make_variant(self, example, self.field, edits,
                             {"params": params, "deleted": "".join(example.question[e.start] for e in edits)})]


@register
class IPQ(QuestionPerturbation):
    id = "IPQ"
    family = "punctuation"
    randomised = True
    description = "Insert a random punctuation mark at a random position of the question"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        position = rng.randint(0, len(example.question))
        mark = rng.choice(PUNCTUATION_MARKS)
        return [make_variant(self, example, self.field, [Edit(position, position, mark, "insert_punct")],
                             {"params": params, "position": position, "mark": mark})]


@register
class RUQ(QuestionPerturbation):
    id = "RUQ"
    family = "character"
    randomised = False
    description = "Replace umlauts and ß: ä->ae, ö->oe, ü->ue, ß->ss"

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        if any(ch in UMLAUTS for ch in example.question):
            return None
        return "RUQ replaces umlauts and ß, and this question has none"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        edits = [Edit(i, i + 1, UMLAUTS[ch], "replace_umlaut") for i, ch in enumerate(example.question)
                 if ch in UMLAUTS]
        if not edits:
            return None
        return [make_variant(self, example, self.field, edits, {"params": params})]


@register
class TypoQ(QuestionPerturbation):
    id = "typo_Q"
    family = "keyboard"
    randomised = True
    description = ("Keyboard typos (the German paper's typo_Q, so a German QWERTZ keyboard by default; "
                   "set layout=qwerty for English): each letter replaced by a neighbouring key with probability rate")
    parameters = (
        Param("rate", 0.1, "probability that a letter is replaced by a neighbouring key", min=0.0, max=1.0),
        Param("layout", "qwertz", "the keyboard the typist uses", choices=tuple(sorted(keyboards.LAYOUTS))),
    )

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        neighbours = keyboards.neighbours(params["layout"])
        if any(len(ch.lower()) == 1 and neighbours.get(ch.lower()) for ch in example.question):
            return None
        return (f"typo_Q types on a {keyboards.LAYOUT_NAMES[params['layout']]} keyboard, and this question has no "
                "letter of it")

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        neighbours = keyboards.neighbours(params["layout"])
        edits, eligible = [], 0
        for i, ch in enumerate(example.question):
            options = neighbours.get(ch.lower())
            if not options or len(ch.lower()) != 1:
                continue
            eligible += 1
            if rng.random() < params["rate"]:
                edits.append(Edit(i, i + 1, keyboards.replace_keeping_case(ch, rng.choice(options)), "keyboard"))
        if eligible == 0:
            return None
        return [make_variant(self, example, self.field, edits, {"params": params, "n_typos": len(edits)})]


@register
class RepeatQuestion(QuestionPerturbation):
    id = "repeat_question"
    family = "sentence"
    randomised = False
    description = "Write the question twice"

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        q = example.question
        return [make_variant(self, example, self.field, [Edit(len(q), len(q), " " + q, "repeat_question")],
                             {"params": params})]
