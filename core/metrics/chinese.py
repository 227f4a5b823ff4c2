"""Character-level EM and F1 for Chinese, as CMRC 2018 and DuReader-robust score answers.

Citation: Cui et al. (2019), "A Span-Extraction Dataset for Chinese Machine Reading
Comprehension" (CMRC 2018, script ``cmrc2018_evaluate.py``); Tang et al. (2021),
"DuReader_robust: A Chinese Dataset Towards Evaluating Robustness and Generalization of Machine
Reading Comprehension in Real-World Applications", which scores with the same script.

Tokenisation (``mixed_segmentation``): lower-case; every CJK ideograph is one token; a run of
other characters (Latin letters, digits, ...) is one token; whitespace ends a run and is dropped;
punctuation is deleted (it neither makes a token nor ends a run, so "2010-2012" is one token).
EM compares the normalised strings (``normalize_answer``: the tokens joined, i.e. the lower-cased
text without punctuation and without any whitespace). F1 comes from the longest common substring
of the two token lists (contiguous, as ``find_lcs`` in the CMRC script): precision = LCS length /
prediction tokens, recall = LCS length / reference tokens, 0 when they share no token. Both take
the max over the references.

Where we follow SEEDS.md §3 rather than the letter of ``cmrc2018_evaluate.py`` (our choices):
  * punctuation = ASCII ``string.punctuation`` + the script's Chinese list + every Unicode
    punctuation character (categories P*). The script removes only its own list (so "." or ","
    survive there as tokens of their own, and its "……" entry, being two characters, never
    matches); the spec says strip Chinese and ASCII punctuation;
  * a non-CJK run is split on whitespace only; the script runs NLTK's ``word_tokenize`` on it,
    which also splits off clitics and leftover punctuation. NLTK is not needed here;
  * EM also removes whitespace (the spec: strip spaces), so "北 京" equals "北京"; the script's
    ``remove_punctuation`` keeps inner spaces. One consequence: "new york" and "newyork" are an
    exact match (spaces stripped) yet share no F1 token (["new", "york"] vs ["newyork"]);
  * CJK = the CJK Unified Ideographs block U+4E00-U+9FFF plus Extension A (U+3400-U+4DBF),
    compatibility ideographs (U+F900-U+FAFF) and the supplementary-plane extensions
    (U+20000-U+3134F); the script's regex covers U+4E00-U+9FA5 only.

Edge cases, as in the script: an empty (or all-punctuation) prediction scores F1 0; two answers
that both normalise to nothing are an exact match (EM 1) but score F1 0, like SQuAD.

>>> mixed_segmentation("2008年北京奥运会")
['2008', '年', '北', '京', '奥', '运', '会']
>>> round(f1_score("北京奥运会", "2008年北京奥运会"), 6)  # LCS 5, P 5/5, R 5/7
0.833333
>>> chinese_scores({"q1": "北京。"}, {"q1": ["北 京", "中国北京"]})
{'exact_match': 100.0, 'f1': 100.0, 'n': 1}
"""
from __future__ import annotations

import string
import unicodedata
from collections.abc import Mapping, Sequence

from core.metrics.squad import corpus_scores

__all__ = [
    "is_chinese_lang",
    "mixed_segmentation",
    "normalize_answer",
    "longest_common_substring_length",
    "exact_match_score",
    "f1_score",
    "chinese_scores",
]

# The Chinese (and a few ASCII) punctuation marks listed in cmrc2018_evaluate.py's ``sp_char``.
_CMRC_PUNCTUATION = frozenset(
    "-:_*^/\\~`+=，。：？！“”；’《》…·、「」（）－～『』"
)
_ASCII_PUNCTUATION = frozenset(string.punctuation)

# (first, last) code points of the ideograph blocks treated as one-character tokens.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0x3400, 0x4DBF),  # Extension A
    (0xF900, 0xFAFF),  # Compatibility Ideographs
    (0x20000, 0x3134F),  # Extensions B-G (supplementary ideographic planes)
)


def is_chinese_lang(lang: str) -> bool:
    """True for a Chinese language code ("zh", "ZH", "zh-CN", "zh_Hans", ...).

    >>> is_chinese_lang("zh"), is_chinese_lang("zh-Hans"), is_chinese_lang("en"), is_chinese_lang("zha")
    (True, True, False, False)
    """
    if not isinstance(lang, str) or not lang.strip():
        raise ValueError(f"lang must be a non-empty language code such as 'en' or 'zh', got {lang!r}")
    code = lang.strip().lower().replace("_", "-")
    return code == "zh" or code.startswith("zh-")


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or ch in _CMRC_PUNCTUATION or unicodedata.category(ch).startswith("P")


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return any(first <= code <= last for first, last in _CJK_RANGES)


def mixed_segmentation(text: str) -> list[str]:
    """Lower-cased tokens: one per CJK character, one per run of other characters, punctuation deleted.

    >>> mixed_segmentation("《红楼梦》的作者是 Cao Xueqin。")
    ['红', '楼', '梦', '的', '作', '者', '是', 'cao', 'xueqin']
    >>> mixed_segmentation("iPhone11发布于2019-09-10")
    ['iphone11', '发', '布', '于', '20190910']
    >>> mixed_segmentation("，。！ ")
    []
    """
    if not isinstance(text, str):
        raise TypeError(f"answer must be a str, got {type(text).__name__}: {text!r}")
    tokens: list[str] = []
    run: list[str] = []
    for ch in text.lower():
        if _is_punctuation(ch):
            continue  # deleted without ending the current run
        if ch.isspace() or _is_cjk(ch):
            if run:
                tokens.append("".join(run))
                run = []
            if not ch.isspace():
                tokens.append(ch)
        else:
            run.append(ch)
    if run:
        tokens.append("".join(run))
    return tokens


def normalize_answer(text: str) -> str:
    """The string EM compares: lower-cased, punctuation and all whitespace removed.

    >>> normalize_answer("  《北京》 Olympic Games！")
    '北京olympicgames'
    """
    return "".join(mixed_segmentation(text))


def longest_common_substring_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest contiguous run of tokens that ``a`` and ``b`` share (DP, O(len a * len b)).

    >>> longest_common_substring_length(list("北京的奥运会"), list("北京奥运会"))
    3
    >>> longest_common_substring_length([], list("北京"))
    0
    """
    best = 0
    previous = [0] * (len(b) + 1)  # previous[j]: common run ending at a[i-1], b[j-1]
    for token_a in a:
        current = [0] * (len(b) + 1)
        for j, token_b in enumerate(b, start=1):
            if token_a == token_b:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best = current[j]
        previous = current
    return best


def exact_match_score(prediction: str, reference: str) -> bool:
    """True when both normalise to the same string (punctuation, spaces and case ignored).

    >>> exact_match_score("北 京。", "北京")
    True
    >>> exact_match_score("Beijing", "beijing!")
    True
    >>> exact_match_score("北京市", "北京")
    False
    """
    return normalize_answer(prediction) == normalize_answer(reference)


def f1_score(prediction: str, reference: str) -> float:
    """F1 from the longest common substring of the token lists (0 if they share no token).

    Only a contiguous common run counts, unlike SQuAD's bag-of-tokens overlap: "北京的奥运会" and
    "北京奥运会" share all five characters of the reference, but the longest common run is
    "奥运会" (3), so P = 3/6, R = 3/5:

    >>> round(f1_score("北京的奥运会", "北京奥运会"), 6)
    0.545455
    >>> round(f1_score("1998年", "1998"), 6)  # P 1/2, R 1/1
    0.666667
    >>> f1_score("上海", "北京")
    0.0
    >>> f1_score("", "北京"), f1_score("。", "")  # nothing to overlap: 0, as in the script
    (0.0, 0.0)
    """
    prediction_tokens = mixed_segmentation(prediction)
    reference_tokens = mixed_segmentation(reference)
    lcs = longest_common_substring_length(prediction_tokens, reference_tokens)
    if lcs == 0:
        return 0.0
    precision = lcs / len(prediction_tokens)
    recall = lcs / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def chinese_scores(
    predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]
) -> dict[str, float | int]:
    """Character-level EM and F1 in percent (max over references, mean over questions).

    Same contract as ``core.metrics.squad.squad_scores``: unanswered questions score 0.

    >>> chinese_scores({"a": "北京奥运会", "b": "上海"}, {"a": ["2008年北京奥运会", "北京奥运会。"], "b": ["北京"]})
    {'exact_match': 50.0, 'f1': 50.0, 'n': 2}
    """
    return corpus_scores(predictions, references, exact_match_score, f1_score)
