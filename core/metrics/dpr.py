"""Different Prediction Rate (over-sensitivity) and bucketing for robustness-vs-similarity plots.

Citation: Tang et al. (2021), "DuReader_robust", ACL (SEEDS.md §3). DPR is the share of
(original question, paraphrased question) pairs, same context, on which the model's two
predictions differ. Over-sensitivity shows as DPR rising while paraphrase-to-original similarity
falls; over-stability as F1 falling while question-to-trap-span similarity rises. Both plots
bucket one number by another: ``bucket_by``.

Which predictions count as "different" (our choice; the paper compares predicted answers):
two predictions are the same when they are an exact match under the EM normalisation of the
language, i.e. SQuAD's ``normalize_answer`` (lower-case, no ASCII punctuation, no articles,
collapsed spaces) for every language but Chinese and Korean, and the character-level
normalisations of ``core.metrics.chinese`` and ``core.metrics.korean`` for those two
(core.metrics.rules.scoring_rule). So "the
Broncos." and "Broncos" are the same prediction; "Denver Broncos" and "Broncos" differ. In
other words DPR = 100 - mean EM of the paraphrase's prediction against the original's.

>>> different_prediction_rate(["Denver Broncos", "1963"], ["the Denver Broncos.", "2009"])
50.0
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from core.metrics.declared import Metric
from core.metrics.rules import scoring_rule

__all__ = ["predictions_differ", "different_prediction_rate", "bucket_by"]


DPR_CITATION = ('Tang et al. (2021), "DuReader_robust: A Chinese Dataset Towards Evaluating Robustness and '
                'Generalization of Machine Reading Comprehension in Real-World Applications", ACL-IJCNLP 2021')
DECLARED = (
    Metric("dpr", "DPR", "lower", "%", "Different Prediction Rate: the share of question pairs whose "
           "predictions differ (DuReader-robust)", citation=DPR_CITATION,
           reference="https://aclanthology.org/2021.acl-short.120; SEEDS.md §3 (over-sensitivity)"),
)


def predictions_differ(original: str, paraphrase: str, lang: str = "en") -> bool:
    """True when the two predicted answers differ after the language's EM normalisation.

    >>> predictions_differ("The Broncos", "broncos!")
    False
    >>> predictions_differ("Denver Broncos", "Broncos")
    True
    >>> predictions_differ("北京。", "北 京", lang="zh"), predictions_differ("北京", "北京市", lang="zh")
    (False, True)
    """
    return not scoring_rule(lang).module.exact_match_score(original, paraphrase)


def different_prediction_rate(
    original_predictions: Sequence[str], paraphrase_predictions: Sequence[str], lang: str = "en"
) -> float:
    """DPR in percent: the share of pairs (i-th original, i-th paraphrase) whose predictions differ.

    >>> different_prediction_rate(["北京", "上海", "1998年"], ["北京。", "广州", "1998 年"], lang="zh")
    33.333333333333336
    >>> different_prediction_rate([], [])
    Traceback (most recent call last):
    ...
    ValueError: no prediction pairs: DPR needs at least one (original, paraphrase) pair
    """
    if isinstance(original_predictions, str) or isinstance(paraphrase_predictions, str):
        raise TypeError("predictions must be sequences of str, not a single str")
    if len(original_predictions) != len(paraphrase_predictions):
        raise ValueError(
            "original and paraphrase predictions differ in length "
            f"({len(original_predictions)} vs {len(paraphrase_predictions)})"
        )
    if len(original_predictions) == 0:
        raise ValueError("no prediction pairs: DPR needs at least one (original, paraphrase) pair")
    differing = sum(
        predictions_differ(original, paraphrase, lang)
        for original, paraphrase in zip(original_predictions, paraphrase_predictions)
    )
    return 100.0 * differing / len(original_predictions)


def _format_edge(x: float) -> str:
    return f"{x:g}"


def bucket_by(
    values: Sequence[float], scores: Sequence[float], edges: Sequence[float]
) -> list[dict[str, object]]:
    """Group ``scores`` by which bucket of ``edges`` their ``values`` fall in; mean per bucket.

    ``edges`` (strictly increasing, at least two) define the buckets ``[e0, e1), [e1, e2), ...,
    [e_{k-1}, e_k]``: left-closed, and the last one closed on both sides so that a similarity of
    exactly 1.0 lands in the top bucket. A value outside ``[e0, e_k]`` (or NaN) is an error rather
    than silently dropped. Each bucket is ``{"label", "low", "high", "n", "mean"}``; ``mean`` is
    None for an empty bucket.

    For a DPR-vs-similarity plot pass ``scores = [100.0 if differ else 0.0 ...]`` so each bucket's
    mean is its DPR in percent; for F1-vs-trap-similarity pass the per-question F1.

    >>> buckets = bucket_by([0.1, 0.5, 0.55, 1.0], [100.0, 0.0, 100.0, 0.0], [0.0, 0.5, 1.0])
    >>> [(b["label"], b["n"], b["mean"]) for b in buckets]
    [('[0, 0.5)', 1, 100.0), ('[0.5, 1]', 3, 33.333333333333336)]
    >>> [b["mean"] for b in bucket_by([0.9], [1.0], [0.0, 0.5, 1.0])]
    [None, 1.0]
    >>> bucket_by([1.2], [1.0], [0.0, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: value 1.2 at index 0 lies outside the bucket edges [0, 1]
    """
    if len(values) != len(scores):
        raise ValueError(f"values and scores differ in length ({len(values)} vs {len(scores)})")
    edges = [float(e) for e in edges]
    if len(edges) < 2:
        raise ValueError(f"need at least two bucket edges, got {edges!r}")
    if any(math.isnan(e) for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"bucket edges must be strictly increasing numbers, got {edges!r}")
    sums = [0.0] * (len(edges) - 1)
    counts = [0] * (len(edges) - 1)
    low, high = edges[0], edges[-1]
    for index, (value, score) in enumerate(zip(values, scores)):
        value = float(value)
        if not (low <= value <= high):  # also rejects NaN
            raise ValueError(
                f"value {value:g} at index {index} lies outside the bucket edges "
                f"[{_format_edge(low)}, {_format_edge(high)}]"
            )
        # The bucket whose left edge is the last one <= value; the top edge joins the last bucket.
        bucket = len(edges) - 2
        for i in range(len(edges) - 1):
            if value < edges[i + 1]:
                bucket = i
                break
        sums[bucket] += float(score)
        counts[bucket] += 1
    buckets = []
    for i in range(len(edges) - 1):
        closing = "]" if i == len(edges) - 2 else ")"
        buckets.append(
            {
                "label": f"[{_format_edge(edges[i])}, {_format_edge(edges[i + 1])}{closing}",
                "low": edges[i],
                "high": edges[i + 1],
                "n": counts[i],
                "mean": sums[i] / counts[i] if counts[i] else None,
            }
        )
    return buckets
