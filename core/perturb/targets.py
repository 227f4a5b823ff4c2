"""Choosing which words a word-targeted perturbation may touch ("R" = a random word, "V" = a verb).

Used by the German-paper perturbations (Satheesh et al. 2024, Table 6), in the question (Q) or the
context (C). Definitions chosen here (the paper leaves them open):

* a *word* is a run of letters/digits that may contain inner apostrophes or hyphens
  (:data:`core.perturb.nlp.WORD_RE`); Chinese is segmented with jieba;
* a *verb* is a token tagged VERB (Universal POS) by the language's tagger (:mod:`core.perturb.nlp`).
  Auxiliaries and modals (AUX: "was", "wurde", "kann") are not verbs here;
* character-level perturbations only take words made of letters alone with more than 2 of them
  (so that ``randint(1, n-2)`` has room and the first letter can stay untouched);
* in the context, a word is never a candidate if it overlaps a gold answer span, nor if it equals
  (case-insensitively) a word of a gold answer anywhere in the context - the stricter reading of
  "words of the gold answer are never perturbed", which also keeps other mentions of the answer.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, ClassVar

from core.perturb import nlp
from core.perturb.base import Perturbation
from core.types import QAExample


@dataclass(frozen=True)
class WordSpan:
    start: int
    end: int
    text: str


def can_tag_verbs(lang: str) -> bool:
    """Whether ``lang`` has a real POS tagger available (verb-based perturbations need one)."""
    return lang in nlp.TAGGER_LANGUAGES and nlp.backend_error(lang) is None


def _answer_guard(example: QAExample):
    """A predicate telling whether a context span may be perturbed (see the module docstring)."""
    spans = [(a.answer_start, a.answer_start + len(a.text)) for a in example.answers]
    answer_words = {a.text[s:e].lower() for a in example.answers for s, e in nlp.word_spans(a.text, example.lang)}

    def allowed(start: int, end: int, word: str) -> bool:
        if any(start < a_end and end > a_start for a_start, a_end in spans):
            return False
        return word.lower() not in answer_words

    return allowed


def candidate_words(example: QAExample, field: str, target: str, *, char_level: bool,
                    min_len: int = 1) -> list[WordSpan]:
    """Words of ``example.<field>`` that a perturbation targeting ``target`` ("R" or "V") may touch.

    ``char_level`` keeps only all-letter words longer than 2; ``min_len`` is a further minimum length.
    Returned in text order.
    """
    if target not in ("R", "V"):
        raise ValueError(f"target must be 'R' (random word) or 'V' (verb), got {target!r}")
    text = getattr(example, field)
    if target == "R":
        spans = nlp.word_spans(text, example.lang)
    else:
        spans = [(t.start, t.end) for t in nlp.analyse(text, example.lang).tokens
                 if t.pos == "VERB" and any(ch.isalnum() for ch in t.text)]
    allowed = _answer_guard(example) if field == "context" else (lambda s, e, w: True)
    words = []
    for start, end in spans:
        word = text[start:end]
        if len(word) < min_len:
            continue
        if char_level and not (word.isalpha() and len(word) > 2):
            continue
        if allowed(start, end, word):
            words.append(WordSpan(start, end, word))
    return words


class WordTargetedPerturbation(Perturbation):
    """Base for perturbations that pick words ("R") or verbs ("V") of one field.

    Subclasses set ``target``; they cannot run where words cannot be found (or verbs tagged).
    """

    target: ClassVar[str]  # "R" or "V"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        if self.target == "V" and not can_tag_verbs(example.lang):
            taggers = ", ".join(nlp.TAGGER_LANGUAGES)
            return f"{self.id} needs a POS tagger ({taggers}); language {example.lang!r} has none"
        if self.target != "V" and not nlp.can_segment(example.lang):
            return f"{self.id} needs a word segmenter; language {example.lang!r} has none"
        return None


# The German paper's ids name an operation, a target and a field: DCRQ = Delete a Character of a
# Random word of the Question. The grid of classes is made here, once, for the character and word modules.
TARGETS = {"R": "a random word", "V": "a random verb"}
FIELD_CODES = {"Q": "question", "C": "context"}


def define_grid(base: type[WordTargetedPerturbation], module: str, operations: dict[str, str],
                id_format: str, description_format: str) -> list[type[WordTargetedPerturbation]]:
    """One subclass of ``base`` per operation x target x field (in that order), for ``module``.

    ``operations`` maps an op code to its text; the formats see ``op``, ``target``, ``field``
    (the codes) and ``op_text``, ``target_text``, ``field_text``. Each class is named
    ``<id>Perturbation`` and set ``op``, ``target``, ``field``, ``id`` and ``description``.

    >>> from core.perturb.catalogue.german_word import WordPerturbation
    >>> grid = define_grid(WordPerturbation, __name__, {"D": "Delete"},
    ...                    "{op}{target}{field}", "{op_text} {target_text} of the {field_text}")
    >>> [(c.id, c.description) for c in grid][:2]
    [('DRQ', 'Delete a random word of the question'), ('DRC', 'Delete a random word of the context')]
    """
    classes = []
    for op, op_text in operations.items():
        for target, target_text in TARGETS.items():
            for field_code, field_text in FIELD_CODES.items():
                names = {"op": op, "target": target, "field": field_code, "op_text": op_text,
                         "target_text": target_text, "field_text": field_text}
                pid = id_format.format(**names)
                attrs = {"id": pid, "op": op, "target": target, "field": field_text,
                         "description": description_format.format(**names),
                         "__module__": module, "__qualname__": f"{pid}Perturbation"}
                classes.append(type(f"{pid}Perturbation", (base,), attrs))
    return classes


def letter_alphabet(lang: str, text: str) -> str:
    """Letters a "random letter" is drawn from: a-z for English, a-z + äöüß for German, otherwise
    the distinct lower-case letters of ``text`` itself (so the letter is of the text's own script),
    falling back to a-z when ``text`` has none. Sorted, so seeded draws are reproducible."""
    if lang == "en":
        return string.ascii_lowercase
    if lang == "de":
        return string.ascii_lowercase + "äöüß"
    own = sorted({ch.lower() for ch in text if ch.isalpha() and len(ch.lower()) == 1})
    return "".join(own) or string.ascii_lowercase
