"""Character-level EM and F1 for Korean, exactly as KorQuAD 1.0's official ``evaluate-v1.0.py``.

Citation: Lim, Kim & Lee (2019), "KorQuAD1.0: Korean QA Dataset for Machine Reading Comprehension"
(arXiv:1909.07005); the script is "based on the SQuAD v1.1 evaluation script" and differs from it
in the normalisation and in F1, which counts characters, not words. Word-level F1 under-rates
Korean answers: a particle glued to a word (서울에서 for 서울) makes the whole word a miss.

Normalisation (``normalize_answer``), in the script's order:
  1. replace each of ``' " 《 》 < > 〈 〉 ( ) ‘ ’`` with a space;
  2. lower-case;
  3. delete every character of ASCII ``string.punctuation`` (deleted, not replaced);
  4. collapse runs of whitespace to one space and strip the ends.
No article is removed (SQuAD's a/an/the step is not in the script).

EM: the normalised strings are equal, so inner spaces still count ("서울 특별시" is not "서울특별시").
F1: the characters of the normalised text's whitespace tokens (every space gone), compared as
multisets (``Counter``, order ignored, unlike CMRC's longest common substring for Chinese);
precision = shared / prediction characters, recall = shared / gold characters, 0 when none is
shared. Per question the max over the gold answers; the corpus score is the mean times 100.

>>> normalize_answer("《서울특별시》 (Seoul)의  인구")
'서울특별시 seoul 의 인구'
>>> round(f1_score("서울에서", "서울"), 6)   # 2 shared, P 2/4, R 2/2
0.666667
>>> korean_scores({"q1": "세종대왕이", "q2": "1443년"}, {"q1": ["세종대왕"], "q2": ["1443년."]})
{'exact_match': 50.0, 'f1': 94.44444444444444, 'n': 2}
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

from core.metrics.squad import corpus_scores

__all__ = ["is_korean_lang", "normalize_answer", "exact_match_score", "f1_score", "korean_scores"]

# The characters the script's ``remove_`` replaces with a space, before lower-casing.
_REPLACED = re.compile("['\"《》<>〈〉()‘’]")
_PUNCTUATION = frozenset(string.punctuation)


def is_korean_lang(lang: str) -> bool:
    """True for a Korean language code ("ko", "ko-KR", "KO_kr").

    >>> is_korean_lang("ko"), is_korean_lang("ko-KR"), is_korean_lang("kok"), is_korean_lang("en")
    (True, True, False, False)
    """
    if not isinstance(lang, str) or not lang.strip():
        raise ValueError(f"lang must be a non-empty language code such as 'en' or 'ko', got {lang!r}")
    code = lang.strip().lower().replace("_", "-")
    return code == "ko" or code.startswith("ko-")


def normalize_answer(text: str) -> str:
    """Brackets and quotes to spaces, lower-case, ASCII punctuation deleted, whitespace collapsed.

    >>> normalize_answer("‘한글’은 1443년에 (세종이) 만들었다.")
    '한글 은 1443년에 세종이 만들었다'
    >>> normalize_answer("U.S.A")   # deleted, not replaced: one token
    'usa'
    """
    if not isinstance(text, str):
        raise TypeError(f"answer must be a str, got {type(text).__name__}: {text!r}")
    text = _REPLACED.sub(" ", text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """True when both normalise to the same string (inner spaces count, as in the script).

    >>> exact_match_score("《훈민정음》", "훈민정음"), exact_match_score("서울 특별시", "서울특별시")
    (True, False)
    """
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def _characters(text: str) -> list[str]:
    return [ch for token in normalize_answer(text).split() for ch in token]


def f1_score(prediction: str, ground_truth: str) -> float:
    """F1 over the characters of the normalised texts, spaces removed (multiset overlap; 0 if none).

    >>> f1_score("서울 특별시", "서울특별시")
    1.0
    >>> round(f1_score("세종대왕이", "세종대왕"), 6)   # P 4/5, R 4/4
    0.888889
    >>> f1_score("", "서울"), f1_score("부산", "서울")
    (0, 0)
    """
    prediction_chars, truth_chars = _characters(prediction), _characters(ground_truth)
    num_same = sum((Counter(prediction_chars) & Counter(truth_chars)).values())
    if num_same == 0:
        return 0   # the script's int 0, as in core.metrics.squad
    precision = num_same / len(prediction_chars)
    recall = num_same / len(truth_chars)
    return 2 * precision * recall / (precision + recall)


def korean_scores(predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]) -> dict[str, float | int]:
    """KorQuAD 1.0 EM and F1 in percent (max over references, mean over questions); the contract of
    ``core.metrics.squad.squad_scores``: unanswered questions score 0."""
    return corpus_scores(predictions, references, exact_match_score, f1_score)
