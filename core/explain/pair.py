"""A clean example and its perturbed variant explained together: "why did it change?".

:func:`explain_change` explains both with the same model (each with the span that model chooses
for it), aligns the perturbed field's words with the clean ones by the variant's edits
(:func:`core.explain.align.align_words`) and says how the answer moved. A question perturbation
aligns the questions; a context perturbation aligns the contexts.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.explain.align import AlignedWord, align_words, answer_move
from core.explain.integrated import DEFAULT_STEPS, Attribution, Progress, explain
from core.explain.words import word_scores
from core.perturb.base import Edit


@dataclass
class Change:
    clean: Attribution
    perturbed: Attribution
    field: str                     # "question" | "context": the field the perturbation edited
    rows: list[AlignedWord]        # that field's words, clean against perturbed
    move: str                      # the answer's move, one sentence

    def as_dict(self) -> dict:
        return {"field": self.field, "answer_move": self.move,
                "alignment": [{"clean": r.clean, "clean_score": _round(r.clean_score), "perturbed": r.perturbed,
                               "perturbed_score": _round(r.perturbed_score), "changed": r.changed}
                              for r in self.rows]}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _span(a: Attribution):
    return None if a.answer is None else (a.answer.text, a.answer.start, a.answer.end)


def align(clean: Attribution, perturbed: Attribution, field: str, edits: Sequence[Edit] | None) -> list[AlignedWord]:
    """The edited field's words, clean against perturbed, with their attributions."""
    segment = "question" if field == "question" else "context"
    old, new = clean.text_of(segment), perturbed.text_of(segment)
    return align_words(old, word_scores(old, clean.part(segment)), new, word_scores(new, perturbed.part(segment)),
                       edits)


def explain_change(engine, question: str, context: str, perturbed_question: str, perturbed_context: str,
                   edits: Sequence[Edit] | None = None, field: str = "question",
                   n_steps: int = DEFAULT_STEPS, clean: Attribution | None = None, *,
                   tolerance: float | None = None, progress: Progress | None = None) -> Change:
    """Explain the clean pair and the perturbed pair with ``engine``'s torch weights and align
    them (``edits``: offsets into the clean ``field``; None: diffed from the texts). ``clean``:
    an attribution of the clean pair already computed (reused, not recomputed). ``n_steps``,
    ``tolerance`` and ``progress`` as core.explain.explain takes them (the phases named "clean
    text: ..." and "perturbed text: ...")."""
    def named(which: str) -> Progress | None:
        if progress is None:
            return None
        return lambda phase, done, total: progress(f"{which} text: {phase}", done, total)

    if clean is None:
        clean = explain(engine, question, context, n_steps=n_steps, tolerance=tolerance, progress=named("clean"))
    perturbed = explain(engine, perturbed_question, perturbed_context, n_steps=n_steps, tolerance=tolerance,
                        progress=named("perturbed"))
    rows = align(clean, perturbed, field, edits)
    return Change(clean, perturbed, field, rows, answer_move(_span(clean), _span(perturbed)))
