"""Statistics of a collected Beat-the-AI set against a source data set (Bartolo et al. 2020,
Table 3 and Figure 3): question and answer lengths, the longest n-gram a question shares with its
passage, wh-words, model-fooling rates and human answerability.

:func:`question_stats`, :func:`set_statistics`, :func:`dataset_statistics`,
:func:`attempt_statistics`, :func:`fooling_rates`, :func:`answerability`, and the table builders
:func:`comparison_rows`, :func:`wh_rows`, :func:`distribution_rows`.
"""
from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import question_words
from core.collect.beat import Attempt, word_tokens
from core.datasets import Dataset

__all__ = [
    "WH_CLASSES", "ItemStats", "SetStatistics", "question_stats", "set_statistics",
    "dataset_statistics", "attempt_statistics", "longest_common_ngram", "wh_word",
    "fooling_rates", "answerability", "comparison_rows", "wh_rows", "distribution_rows",
]

# Bartolo et al. count "how many" with "how"; the classes are core.question_words' without it.
WH_CLASSES = tuple(c for c in question_words.WH_CLASSES if c != "how many/much")


def wh_word(question: str, lang: str) -> str:
    """The wh-class of a question (:func:`core.question_words.wh_class`, "how many/much" counted as
    "how"): one of :data:`WH_CLASSES`, "other" when it has no question word, "n/a" for languages
    without a word list.

    >>> wh_word("In what year was it first lit?", "en"), wh_word("Wie hoch ist der Turm?", "de")
    ('what', 'how')
    >>> wh_word("望川桥是什么时候建成的？", "zh"), wh_word("Name the keeper.", "en"), wh_word("Ποιος;", "el")
    ('when', 'other', 'n/a')
    """
    cls = question_words.wh_class(question, lang)
    return "n/a" if cls is None else "how" if cls == "how many/much" else cls


@functools.lru_cache(maxsize=4096)  # a data set asks several questions about each passage
def _lower_words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in word_tokens(text))


@functools.lru_cache(maxsize=4096)
def _ngrams(text: str, n: int) -> frozenset[tuple[str, ...]]:
    words = _lower_words(text)
    return frozenset(words[i:i + n] for i in range(len(words) - n + 1))


def longest_common_ngram(question: str, passage: str) -> int:
    """Length of the longest run of consecutive words (lower-cased, punctuation dropped) that
    the question shares with the passage: the paper's lexical-overlap measure (it falls from 3
    to 2 as stronger models are put in the loop).

    >>> longest_common_ngram("Who kept the light burning?",
    ...                      "Margaret Ellison kept the light burning for 31 years.")
    4
    >>> longest_common_ngram("When was the lighthouse first lit?",  # "the lighthouse", "first lit"
    ...                      "The lighthouse was first lit in 1871.")
    2
    """
    q = _lower_words(question)
    # Grow n while some question n-gram occurs in the passage: a shared (n+1)-gram implies a
    # shared n-gram, so the first n without one ends the search (set lookups, no O(|q||p|) DP).
    best = 0
    for n in range(1, len(q) + 1):
        grams = _ngrams(passage, n)
        if not any(q[i:i + n] in grams for i in range(len(q) - n + 1)):
            break
        best = n
    return best


@dataclass(frozen=True)
class ItemStats:
    """One question's statistics: lengths in words (:func:`word_tokens`), longest common n-gram
    with its passage, and its wh-class."""

    question_tokens: int
    answer_tokens: int
    longest_ngram: int
    wh: str


def question_stats(question: str, context: str, answer: str, lang: str) -> ItemStats:
    return ItemStats(len(word_tokens(question)), len(word_tokens(answer)),
                     longest_common_ngram(question, context), wh_word(question, lang))


@dataclass
class SetStatistics:
    """Statistics of a set of questions (a collected set or a source data set)."""

    name: str
    items: list[ItemStats]

    @property
    def n(self) -> int:
        return len(self.items)

    def _mean(self, attr: str) -> float | None:
        return sum(getattr(i, attr) for i in self.items) / self.n if self.items else None

    @property
    def mean_question_tokens(self) -> float | None:
        return self._mean("question_tokens")

    @property
    def mean_answer_tokens(self) -> float | None:
        return self._mean("answer_tokens")

    @property
    def mean_longest_ngram(self) -> float | None:
        return self._mean("longest_ngram")

    def wh_counts(self) -> dict[str, int]:
        """Count per wh-class, in :data:`WH_CLASSES` order ("n/a" last, when present)."""
        c = Counter(i.wh for i in self.items)
        out = {k: c.get(k, 0) for k in WH_CLASSES}
        if c.get("n/a"):
            out["n/a"] = c["n/a"]
        return out


def set_statistics(name: str, items: Iterable[tuple[str, str, str, str]]) -> SetStatistics:
    """Statistics of (question, context, answer, lang) tuples."""
    try:
        return SetStatistics(name, [question_stats(q, c, a, lang) for q, c, a, lang in items])
    finally:
        # The word caches serve one set's repeated passages; emptied afterwards, so no text of
        # an uploaded set outlives the visitor's session in this process-wide cache.
        _lower_words.cache_clear()
        _ngrams.cache_clear()


def dataset_statistics(dataset: Dataset) -> SetStatistics:
    """Statistics of a source data set; each question's first gold answer gives its answer
    length, questions without a gold answer are left out."""
    return set_statistics(dataset.name, ((ex.question, ex.context, ex.answers[0].text, ex.lang)
                                         for ex in dataset.examples if ex.answers))


def attempt_statistics(name: str, attempts: Iterable[Attempt]) -> SetStatistics:
    return set_statistics(name, ((a.question, a.context, a.answer_text, a.lang) for a in attempts))


def fooling_rates(attempts: Sequence[Attempt]) -> list[dict[str, Any]]:
    """Per model: the attempts it answered and the share it lost (its F1 <= threshold, i.e. the
    question fooled it); last row "any model (ensemble)": the share every model lost."""
    per: dict[str, list[int]] = {}
    for a in attempts:
        for m in a.models:
            n, fooled = per.setdefault(m.model, [0, 0]), not m.won
            n[0] += 1
            n[1] += fooled
    rows = [{"model": k, "attempts": n, "fooled": f, "fooling_rate": f / n}
            for k, (n, f) in per.items()]
    if attempts:
        human = sum(a.human_won for a in attempts)
        rows.append({"model": "any model (ensemble)", "attempts": len(attempts), "fooled": human,
                     "fooling_rate": human / len(attempts)})
    return rows


def answerability(attempts: Sequence[Attempt]) -> dict[str, Any]:
    """Validated questions, how many are answerable and flagged, and the answerable share."""
    validated = [a for a in attempts if a.validations]
    ok = sum(bool(a.answerable) for a in validated)
    return {"validated": len(validated), "answerable": ok,
            "flagged": sum(a.flagged for a in validated),
            "answerability": ok / len(validated) if validated else None}


def comparison_rows(sets: Sequence[SetStatistics],
                    attempts_by_set: Mapping[str, Sequence[Attempt]] | None = None
                    ) -> list[dict[str, Any]]:
    """The Table-3-like summary: one row per set. Model-fooling rate (ensemble) and human
    answerability only exist for collected sets (given in ``attempts_by_set``), else None."""
    rows = []
    for s in sets:
        atts = (attempts_by_set or {}).get(s.name)
        fool = fooling_rates(atts)[-1]["fooling_rate"] if atts else None
        rows.append({"set": s.name, "questions": s.n,
                     "question_tokens": s.mean_question_tokens,
                     "answer_tokens": s.mean_answer_tokens,
                     "longest_common_ngram": s.mean_longest_ngram,
                     "model_fooling_rate": fool,
                     "human_answerability": answerability(atts)["answerability"] if atts else None})
    return rows


def wh_rows(sets: Sequence[SetStatistics]) -> list[dict[str, Any]]:
    """Wh-word distribution per set (Figure 3): count and share of every wh-class."""
    rows = []
    for s in sets:
        for wh, count in s.wh_counts().items():
            rows.append({"set": s.name, "wh": wh, "count": count,
                         "share": count / s.n if s.n else 0.0})
    return rows


def distribution_rows(sets: Sequence[SetStatistics], attr: str) -> list[dict[str, Any]]:
    """Histogram of one per-question statistic (``question_tokens``, ``answer_tokens`` or
    ``longest_ngram``) per set: count and share of each value, values ascending."""
    if attr not in ("question_tokens", "answer_tokens", "longest_ngram"):
        raise ValueError(f"no per-question statistic {attr!r}")
    rows = []
    for s in sets:
        c = Counter(getattr(i, attr) for i in s.items)
        for value in sorted(c):
            rows.append({"set": s.name, attr: value, "count": c[value], "share": c[value] / s.n})
    return rows
