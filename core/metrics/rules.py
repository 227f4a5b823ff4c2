"""Which official script scores each language's answers: one place that says it, and names it.

Every benchmark this product measures on publishes its own evaluation script, and they do not
agree on what a token is. A language is scored as its benchmark's script scores it:

- Chinese (zh, zh-*): ``chinese-char``, CMRC 2018's ``cmrc2018_evaluate.py`` (DuReader-robust scores
  with it too): one token per CJK character, one per run of other characters; F1 from the longest
  common substring (core.metrics.chinese);
- Korean (ko, ko-*): ``korquad-char``, KorQuAD 1.0's ``evaluate-v1.0.py``: the characters of the
  normalised answer, spaces removed; F1 over shared characters (core.metrics.korean);
- every other language: ``squad-v1.1``, SQuAD's ``evaluate-v1.1.py`` (XQuAD's authors score all its
  languages with it): whitespace words, a/an/the removed; F1 over shared words (core.metrics.squad).

Word-level F1 on Korean under-rates it badly: a particle glued to a word (서울에서 for 서울) makes
the whole word a miss, so KorQuAD 1.0 dev scored 61.2 F1 word by word where its own script gave
76.1 for the same predictions (issue 57). Scores recorded before this rule existed for Korean
are word-level; each score records its rule's name (``corpus_scorer``).

>>> [scoring_rule(lang).name for lang in ("en", "de", "zh-CN", "ko", "ko-KR", "ja")]
['squad-v1.1', 'squad-v1.1', 'chinese-char', 'korquad-char', 'korquad-char', 'squad-v1.1']
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from core.metrics import chinese, korean, squad

__all__ = ["ScoringRule", "RULES", "scoring_rule", "score_answer", "corpus_scorer"]


@dataclass(frozen=True)
class ScoringRule:
    """How one language's answers are scored: ``module`` has ``normalize_answer``,
    ``exact_match_score`` and ``f1_score`` as the official ``script`` defines them."""

    name: str
    module: ModuleType
    script: str
    description: str


RULES = {
    "squad-v1.1": ScoringRule("squad-v1.1", squad, "SQuAD evaluate-v1.1.py",
                              "words: lower-cased, ASCII punctuation and a/an/the removed; F1 over shared words"),
    "chinese-char": ScoringRule("chinese-char", chinese, "CMRC 2018 cmrc2018_evaluate.py",
                                "characters: each CJK character a token, punctuation removed; F1 from the "
                                "longest common substring"),
    "korquad-char": ScoringRule("korquad-char", korean, "KorQuAD 1.0 evaluate-v1.0.py",
                                "characters: brackets, quotes and ASCII punctuation removed, spaces dropped; "
                                "F1 over shared characters"),
}


def scoring_rule(lang: str | None) -> ScoringRule:
    """The rule ``lang``'s answers are scored by (the list above); None: SQuAD's. An empty or
    non-string code is a ValueError (a caller that lost the language should say so).

    >>> rule = scoring_rule("ko")
    >>> rule.script, round(rule.module.f1_score("서울에서", "서울"), 4)
    ('KorQuAD 1.0 evaluate-v1.0.py', 0.6667)
    """
    if lang is None:
        return RULES["squad-v1.1"]
    if chinese.is_chinese_lang(lang):
        return RULES["chinese-char"]
    if korean.is_korean_lang(lang):
        return RULES["korquad-char"]
    return RULES["squad-v1.1"]


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
    em = squad.metric_max_over_ground_truths(module.exact_match_score, prediction, golds)
    f1 = squad.metric_max_over_ground_truths(module.f1_score, prediction, golds)
    return float(em), float(f1)


def corpus_scorer(lang: str | None) -> tuple[str, Callable]:
    """(name, scorer) for a data set in ``lang``: Chinese -> ``chinese_scores``, Korean ->
    ``korean_scores`` (character level), anything else -> ``squad_scores``; the name is the rule's
    (:func:`core.metrics.rules.scoring_rule`), what every score of a whole set records.

    >>> corpus_scorer("zh")[0], corpus_scorer("ko")[0], corpus_scorer("de")[0]
    ('chinese-char', 'korquad-char', 'squad-v1.1')
    """
    name = scoring_rule(lang).name
    scorers = {"chinese-char": chinese.chinese_scores, "korquad-char": korean.korean_scores}
    return name, scorers.get(name, squad.squad_scores)
