"""Sub-word tokens summed into whitespace-separated words: what a reader sees and edits name.

A word's score is the sum of its tokens' scores (attributions add: completeness survives). Words
are maximal runs of non-space characters; a token belongs to the word its first character is in.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class WordScore:
    """One word of a text: characters [start, end), and the summed scores of its tokens (None for
    a word no token was scored for: outside the explained window)."""

    text: str
    start: int
    end: int
    score: float | None
    score_start: float | None = None
    score_end: float | None = None


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace-separated word.

    >>> word_spans(" What  animal?")
    [(1, 5), (7, 14)]
    """
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def word_scores(text: str, tokens: Iterable) -> list[WordScore]:
    """Each word of ``text`` with the summed scores of ``tokens`` (objects with ``start``, ``end``,
    ``score_start``, ``score_end``: core.explain.integrated.TokenScore) that begin in it.

    >>> from core.explain.integrated import TokenScore
    >>> toks = [TokenScore("ani", "question", 0, 3, 0.5, 0.25), TokenScore("##mal", "question", 3, 6, 0.5, 0.0)]
    >>> [(w.text, w.score) for w in word_scores("animal ?", toks)]
    [('animal', 1.25), ('?', None)]
    """
    spans = word_spans(text)
    sums: list[list[float] | None] = [None] * len(spans)
    k = 0
    for t in sorted(tokens, key=lambda t: t.start):
        while k < len(spans) and spans[k][1] <= t.start:
            k += 1
        if k == len(spans):
            break
        if spans[k][0] <= t.start:
            acc = sums[k] or [0.0, 0.0]
            acc[0] += t.score_start
            acc[1] += t.score_end
            sums[k] = acc
    out = []
    for (a, b), acc in zip(spans, sums):
        if acc is None:
            out.append(WordScore(text[a:b], a, b, None))
        else:
            out.append(WordScore(text[a:b], a, b, acc[0] + acc[1], acc[0], acc[1]))
    return out
