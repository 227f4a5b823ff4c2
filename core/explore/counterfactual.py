"""Counterfactual editing (LIT's counterfactuals): change one word of the question or the context,
answer again, and see how each model's span moved.

* :func:`words` - the editable words of a text with their offsets;
* :func:`edit_word` - the text with word ``index`` replaced (a new word, or "" to delete it);
* :func:`movement` - how one model's answer moved: the old span is first carried through the edit
  (a context edit before the span shifts it without the model doing anything), then compared with
  the new span;
* :func:`compare` - one row per model: old and new answer, spans, scores and the score change.

>>> text, edit = edit_word("Where did Anna live?", 2, "Ben", "en")
>>> text, (edit.start, edit.end, edit.old, edit.new)
('Where did Ben live?', (10, 14, 'Anna', 'Ben'))
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.perturb.base import Edit, edit_touches_span, map_offset
from core.perturb.nlp import word_spans
from core.types import Prediction

__all__ = ["WordEdit", "words", "edit_word", "movement", "compare", "MOVEMENTS"]

MOVEMENTS = {
    "same": "same span",
    "shifted": "same words, shifted by the edit",
    "edited": "same span, with the edited word in it",
    "moved": "moved to another span",
    "lost": "no answer any more",
    "found": "answers now (no answer before)",
    "none": "no answer before or after",
}


@dataclass(frozen=True)
class WordEdit:
    """Word ``index`` of ``field`` ([start, end) in the old text) replaced by ``new``."""

    field: str
    index: int
    start: int
    end: int
    old: str
    new: str


def words(text: str, lang: str = "en") -> list[tuple[int, int, str]]:
    """(start, end, word) of each word of ``text`` (core.perturb.nlp.word_spans).

    >>> words("Who won, in 2016?")
    [(0, 3, 'Who'), (4, 7, 'won'), (9, 11, 'in'), (12, 16, '2016')]
    """
    return [(s, e, text[s:e]) for s, e in word_spans(text, lang)]


def edit_word(text: str, index: int, new: str, lang: str = "en", field: str = "question") -> tuple[str, WordEdit]:
    """``text`` with word ``index`` replaced by ``new`` (stripped; "" deletes the word and one space).

    >>> edit_word("Anna lives in Oslo.", 2, "", "en")[0]
    'Anna lives Oslo.'
    """
    spans = words(text, lang)
    if not 0 <= index < len(spans):
        raise ValueError(f"word index {index} out of range: the text has {len(spans)} words")
    new = " ".join(new.split())
    start, end, old = spans[index]
    if not new:
        # take one neighbouring space with the word, so no double space is left
        if end < len(text) and text[end] == " ":
            end += 1
        elif start > 0 and text[start - 1] == " ":
            start -= 1
    return text[:start] + new + text[end:], WordEdit(field, index, start, end, text[start:end], new)


def movement(old: tuple[int, int] | None, new: tuple[int, int] | None, edit: WordEdit | None) -> str:
    """A key of :data:`MOVEMENTS` for an answer that went from span ``old`` to span ``new``.

    >>> e = WordEdit("context", 0, 0, 4, "Anna", "Annabel")
    >>> movement((10, 14), (13, 17), e), movement((10, 14), (10, 14), e), movement((10, 14), (0, 7), e)
    ('shifted', 'moved', 'moved')
    >>> movement((10, 14), (10, 14), WordEdit("question", 0, 0, 4, "Who", "Whom"))
    'same'
    >>> movement((0, 14), (0, 11), WordEdit("context", 0, 0, 6, "Peyton", "Eli"))
    'edited'
    """
    if old is None and new is None:
        return "none"
    if old is None:
        return "found"
    if new is None:
        return "lost"
    if edit is None or edit.field != "context":
        return "same" if tuple(old) == tuple(new) else "moved"
    ordered = [Edit(edit.start, edit.end, edit.new, "counterfactual")]
    mapped = (map_offset(old[0], ordered, side="start"), map_offset(old[1], ordered, side="end"))
    if mapped != tuple(new):
        return "moved"
    if edit_touches_span(ordered[0], old[0], old[1]):
        return "edited"
    return "same" if mapped == tuple(old) else "shifted"


def _span(p: Prediction | None) -> tuple[int, int] | None:
    best = p.best if p is not None else None
    return (best.start, best.end) if best is not None else None


def compare(before: Mapping[str, Prediction], after: Mapping[str, Prediction],
            edit: WordEdit | None) -> list[dict[str, Any]]:
    """One row per model in ``after``: old/new answer, span and score, score change, movement."""
    rows = []
    for model, new_pred in after.items():
        old_pred = before.get(model)
        ob = old_pred.best if old_pred is not None else None
        nb = new_pred.best
        old_score = float(ob.score) if ob is not None else None
        new_score = float(nb.score) if nb is not None else None
        move = movement(_span(old_pred), _span(new_pred), edit)
        rows.append({"model": model, "old answer": ob.text if ob else "", "old span": _fmt(_span(old_pred)),
                     "old score": None if old_score is None else round(old_score, 4),
                     "new answer": nb.text if nb else "", "new span": _fmt(_span(new_pred)),
                     "new score": None if new_score is None else round(new_score, 4),
                     "score change": (None if old_score is None or new_score is None
                                      else round(new_score - old_score, 4)),
                     "answer text changed": (ob.text if ob else "") != (nb.text if nb else ""),
                     "movement": MOVEMENTS[move]})
    return rows


def _fmt(span: tuple[int, int] | None) -> str | None:
    return None if span is None else f"{span[0]}-{span[1]}"
