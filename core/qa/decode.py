"""Span decoding: from start/end logits of each window to n-best character spans.

transformers 5 has no question-answering pipeline, so this is ours. Per window, start and end
logits are softmaxed over that window's context tokens; a span's score is p(start) * p(end), the
convention of the former HF pipeline. Candidates must lie inside the context of one window
(never across a window boundary), have end >= start and at most ``max_answer_tokens`` tokens.
Across windows of the same pair the best-scoring candidates win; duplicates (same character
span seen from two overlapping windows) keep their best score.
"""
from __future__ import annotations

import numpy as np

from core.types import Span


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def window_candidates(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    offsets: list[tuple[int, int] | None],
    top_k: int = 20,
    max_answer_tokens: int = 30,
) -> list[tuple[float, int, int]]:
    """Return (score, char_start, char_end) candidates of one window, unsorted."""
    ctx = np.array([o is not None for o in offsets], dtype=bool)
    n = min(len(offsets), len(start_logits))
    ctx = ctx[:n]
    if not ctx.any():
        return []
    s = np.where(ctx, start_logits[:n], -np.inf)
    e = np.where(ctx, end_logits[:n], -np.inf)
    ps, pe = _softmax(s), _softmax(e)
    k = min(top_k, int(ctx.sum()))
    starts = np.argsort(-ps)[:k]
    ends = np.argsort(-pe)[:k]
    out = []
    for i in starts:
        for j in ends:
            if j < i or j - i + 1 > max_answer_tokens:
                continue
            out.append((float(ps[i] * pe[j]), offsets[i][0], offsets[j][1]))
    return out


def has_word(text: str) -> bool:
    """True when ``text`` holds a letter or a digit of any script (a Chinese character is a word).

    >>> has_word("? ..."), has_word("巴黎"), has_word("1889"), has_word(" – ")
    (False, True, True, False)
    """
    return any(ch.isalnum() for ch in text)


def best_spans(
    context: str, candidates: list[tuple[float, int, int]], n_best: int = 5
) -> list[Span]:
    """The ``n_best`` (at least 1) best distinct spans. A span without a letter or digit ("?",
    ", .") is never an answer, whatever its score: the next best one with a word takes its place.
    """
    if isinstance(n_best, bool) or not isinstance(n_best, int) or n_best < 1:
        raise ValueError(f"n_best must be at least 1, got {n_best!r}")
    best: dict[tuple[int, int], float] = {}
    for score, a, b in candidates:
        if b <= a or not has_word(context[a:b]):
            continue
        if score > best.get((a, b), -1.0):
            best[(a, b)] = score
    ranked = sorted(best.items(), key=lambda kv: -kv[1])[:n_best]
    return [Span(text=context[a:b], start=a, end=b, score=sc) for (a, b), sc in ranked]
