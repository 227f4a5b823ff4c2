"""Is model B really better than model A on this set? A paired bootstrap of the mean score difference.

Both models answer the same questions, so the per-question scores are paired: resampling questions
(with replacement) and recomputing mean(B - A) each time gives a confidence interval for the
difference that accounts for which questions are hard. A gain whose interval excludes 0 is
called *significant* here; one whose interval straddles 0 is within what the choice of questions
alone can produce. The resampling is :func:`scipy.stats.bootstrap` (``paired=True``, percentile
interval) with an explicit seed, so the same inputs give the same interval.

It does not measure training noise: two training runs with different seeds can differ by more
than this interval (the interval is about the test questions, not the model).

>>> r = paired_difference([0.0, 0.5, 1.0, 0.25], [0.5, 1.0, 1.0, 0.25], seed=0)
>>> r["mean_a"], r["mean_b"], r["difference"], r["n"]
(0.4375, 0.6875, 0.25, 4)
>>> r["ci_low"] >= 0.0 and r["ci_high"] <= 0.5
True
>>> paired_difference([0.25, 0.5, 0.75], [0.75, 1.0, 1.25])["ci_low"]   # every question gains 0.5
0.5
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def paired_difference(scores_a: Sequence[float], scores_b: Sequence[float], *, confidence: float = 0.95,
                      n_resamples: int = 2000, seed: int = 0) -> dict:
    """Mean of B - A over paired per-question scores, with a ``confidence`` bootstrap interval.

    Returns ``mean_a``, ``mean_b``, ``difference`` (B - A), ``ci_low``, ``ci_high``, ``confidence``,
    ``n``, ``n_resamples``, ``seed`` and ``significant`` (the interval excludes 0), in the units of
    the scores (multiply F1 in [0, 1] by 100 for points).

    >>> paired_difference([1.0], [0.0, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: paired scores need the same questions: 1 scores for A, 2 for B
    >>> paired_difference([], [])
    Traceback (most recent call last):
    ...
    ValueError: paired scores need at least 2 questions, got 0
    """
    from scipy.stats import bootstrap

    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same questions: {a.size} scores for A, {b.size} for B")
    if a.size < 2:
        raise ValueError(f"paired scores need at least 2 questions, got {a.size}")
    diff = b - a
    if np.all(diff == diff[0]):   # every resample has the same mean: scipy would warn of a degenerate interval
        low = high = float(diff[0])
    else:
        res = bootstrap((a, b), lambda x, y, axis=-1: np.mean(y - x, axis=axis), paired=True, vectorized=True,
                        confidence_level=confidence, n_resamples=n_resamples, method="percentile",
                        rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return {
        "mean_a": float(a.mean()), "mean_b": float(b.mean()), "difference": float(diff.mean()),
        "ci_low": low, "ci_high": high, "confidence": confidence, "n": int(a.size),
        "n_resamples": n_resamples, "seed": seed, "significant": bool(low > 0 or high < 0),
    }
