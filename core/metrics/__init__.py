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

from core.metrics import chinese, dpr, korean, penalty, squad, text_distance
from core.metrics.chinese import chinese_scores, is_chinese_lang
from core.metrics.declared import Metric
from core.metrics.dpr import bucket_by, different_prediction_rate, predictions_differ
from core.metrics.korean import korean_scores
from core.metrics.penalty import band, pct_change, total_penalty
from core.metrics.penalty import penalty as penalty_for
from core.metrics.rules import ScoringRule, corpus_scorer, score_answer, scoring_rule
from core.metrics.squad import squad_scores, word_overlap_f1
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
