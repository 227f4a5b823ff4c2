"""Scoring for the explorer: answer EM/F1, question noise, prediction stability, robustness penalties.

Modules (each documented and doctested on hand-checked cases):
  squad          SQuAD v1.1 EM/F1, exactly as the official evaluate-v1.1.py
  chinese        character-level EM/F1 for Chinese (CMRC 2018 / DuReader-robust)
  korean         character-level EM/F1 for Korean (KorQuAD 1.0)
  rules          which of the three scores a language (``scoring_rule``), named in every corpus score
  text_distance  CER, WER (jiwer) and BLEU (sacreBLEU) of noisy vs original questions (NoiseQA)
  dpr            Different Prediction Rate and bucketing for similarity plots (DuReader-robust)
  penalty        percentage change, band and penalty per heatmap cell (Satheesh et al. 2024)
  declared       ``Metric``: what a metric is (label, better direction, unit, description)

Each module declares its metrics once (``DECLARED``); ``METRICS`` gathers them by name, so a page or
a table takes a metric's label, help text and direction from here. Chinese EM/F1 are the same
metrics at the character level, so they are not declared twice (Korean's too).

>>> METRICS["f1"].label, METRICS["wer"].better, METRICS["pct_change"].better
('F1', 'lower', 'zero')

This package picks the answer scorer by language (core.metrics.rules): Chinese ("zh", "zh-CN", ...)
and Korean ("ko") are scored at the character level as CMRC 2018's and KorQuAD 1.0's scripts do,
every other language with SQuAD's normalisation and whitespace tokens.

>>> score_answer("the Denver Broncos", ["Denver Broncos", "Broncos"], "en")
(1.0, 1.0)
>>> em, f1 = score_answer("北京奥运会", ["2008年北京奥运会"], "zh")
>>> em, round(f1, 6)
(0.0, 0.833333)
>>> em, f1 = score_answer("서울에서", ["서울"], "ko")
>>> em, round(f1, 6)
(0.0, 0.666667)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from core.metrics import chinese, dpr, korean, penalty, squad, text_distance
from core.metrics.chinese import chinese_scores, is_chinese_lang
from core.metrics.declared import Metric
from core.metrics.dpr import bucket_by, different_prediction_rate, predictions_differ
from core.metrics.korean import korean_scores
from core.metrics.penalty import band, pct_change, total_penalty
from core.metrics.penalty import penalty as penalty_for
from core.metrics.rules import ScoringRule, scoring_rule
from core.metrics.squad import metric_max_over_ground_truths, squad_scores
from core.metrics.text_distance import noise_summary

METRICS: dict[str, Metric] = {m.name: m for module in (squad, text_distance, dpr, penalty) for m in module.DECLARED}

__all__ = [
    "METRICS",
    "Metric",
    "score_answer",
    "word_overlap_f1",
    "squad_scores",
    "chinese_scores",
    "korean_scores",
    "corpus_scorer",
    "scoring_rule",
    "ScoringRule",
    "is_chinese_lang",
    "noise_summary",
    "predictions_differ",
    "different_prediction_rate",
    "bucket_by",
    "pct_change",
    "band",
    "penalty_for",
    "total_penalty",
    "chinese",
    "korean",
    "dpr",
    "penalty",
    "squad",
    "text_distance",
]


def score_answer(prediction: str, golds: Sequence[str], lang: str) -> tuple[float, float]:
    """(EM, F1) of one predicted answer against its gold answers, each in [0, 1], max over golds.

    ``lang`` picks the scorer (:func:`core.metrics.rules.scoring_rule`): Chinese ->
    ``core.metrics.chinese``, Korean -> ``core.metrics.korean`` (both character level), anything
    else -> ``core.metrics.squad`` (SQuAD v1.1).

    >>> score_answer("Carolina", ["Carolina Panthers"], "de")
    (0.0, 0.6666666666666666)
    >>> score_answer("Broncos", [], "en")
    Traceback (most recent call last):
    ...
    ValueError: no gold answers to score the prediction 'Broncos' against
    """
    module = scoring_rule(lang).module
    em = metric_max_over_ground_truths(module.exact_match_score, prediction, golds)
    f1 = metric_max_over_ground_truths(module.f1_score, prediction, golds)
    return float(em), float(f1)


def corpus_scorer(lang: str | None) -> tuple[str, Callable]:
    """(name, scorer) for a data set in ``lang``: Chinese -> ``chinese_scores``, Korean ->
    ``korean_scores`` (character level), anything else -> ``squad_scores``; the name is the rule's
    (:func:`core.metrics.rules.scoring_rule`), what every score of a whole set records.

    >>> corpus_scorer("zh")[0], corpus_scorer("ko")[0], corpus_scorer("de")[0]
    ('chinese-char', 'korquad-char', 'squad-v1.1')
    """
    name = scoring_rule(lang).name
    return name, {"chinese-char": chinese_scores, "korquad-char": korean_scores}.get(name, squad_scores)


def word_overlap_f1(a: str, b: str) -> float:
    """SQuAD token F1 between two answers (symmetric). Beat the AI: the model wins above 0.4.

    >>> word_overlap_f1("the Eiffel Tower in Paris", "Eiffel Tower")  # P 2/4, R 2/2
    0.6666666666666666
    >>> word_overlap_f1("Paris", "London")
    0.0
    """
    return float(squad.f1_score(a, b))
