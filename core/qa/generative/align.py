"""A generative reader's free answer placed in the passage: the span the rest of the app highlights.

An LLM writes its answer; an extractive view needs character offsets. :func:`align` looks for the
answer in the passage, in this order, and says how it was found:

1. **exact**: the answer's words occur in the passage. First as written (whole words; case
   ignored), else after SQuAD's normalisation (lower case, punctuation and articles dropped;
   for Chinese, CMRC's: punctuation and spaces dropped), word for word;
2. **approximate**: the run of whole words in the passage most similar to the answer (rapidfuzz's
   ``ratio``; for Chinese the window of ``partial_ratio_alignment``) when its similarity is at
   least ``threshold`` (:data:`APPROXIMATE_THRESHOLD`, 0-100);
3. **not in the passage**: no span; the answer is kept as free text and scored as text.

A span's text is always ``context[start:end]``: the contract every view relies on.

>>> ctx = "The Normans were in Normandy, a region in France. Rollo (Hrólfr) led them."
>>> a = align("France", ctx); a.kind, ctx[a.start:a.end]
('exact', 'France')
>>> a = align("the region of france.", ctx); a.kind
'not in the passage'
>>> a = align("in FRANCE", ctx); a.kind, ctx[a.start:a.end]
('exact', 'in France')
>>> a = align("Hrolfr", ctx); a.kind, ctx[a.start:a.end], a.similarity >= APPROXIMATE_THRESHOLD
('approximate', 'Hrólfr', True)
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from core.metrics import chinese, squad

# Below this similarity (rapidfuzz, 0-100) a window is not called the answer: at 80 one wrong
# letter in a five-letter name (80) still aligns, two (60) do not; a paraphrase of a few words
# rarely reaches it, so its text is scored as the model's own words instead.
APPROXIMATE_THRESHOLD = 80.0

EXACT, APPROXIMATE, NOT_IN_PASSAGE = "exact", "approximate", "not in the passage"


@dataclass(frozen=True)
class Alignment:
    """Where a free answer sits in the passage: ``kind`` (exact, approximate, not in the passage),
    offsets (None when not found) and the similarity (100 for exact, 0 when not found)."""

    kind: str
    start: int | None
    end: int | None
    similarity: float

    @property
    def found(self) -> bool:
        return self.start is not None


def _edges_trimmed(context: str, start: int, end: int) -> tuple[int, int]:
    """The span without whitespace or punctuation at its edges (a matched token 'France.' is
    the answer 'France')."""
    def strip(ch: str) -> bool:
        return ch.isspace() or unicodedata.category(ch).startswith("P")
    while start < end and strip(context[start]):
        start += 1
    while end > start and strip(context[end - 1]):
        end -= 1
    return start, end


def _literal(answer: str, context: str, zh: bool) -> tuple[int, int] | None:
    """The answer as written, case ignored; for languages with spaces only as whole words."""
    if zh:
        i = context.lower().find(answer.lower())
        return (i, i + len(answer)) if i >= 0 else None
    m = re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", context, flags=re.IGNORECASE)
    return (m.start(), m.end()) if m else None


def _normalised_words(answer: str, context: str) -> tuple[int, int] | None:
    """The answer's SQuAD-normalised words as a run of the passage's whitespace tokens."""
    want = squad.normalize_answer(answer).split()
    if not want:
        return None
    tokens = [(m.start(), m.end(), squad.normalize_answer(m.group())) for m in re.finditer(r"\S+", context)]
    # a token may carry two normalised words ('U.S.-based' -> 'usbased' is one; 'A-B C' ...) or
    # none (an article, a dash): compare on the non-empty normalised tokens, split to words
    words = [(s, e, w) for s, e, norm in tokens for w in norm.split()]
    n = len(want)
    for i in range(len(words) - n + 1):
        if [w for _, _, w in words[i:i + n]] == want:
            return words[i][0], words[i + n - 1][1]
    return None


def _normalised_chars(answer: str, context: str) -> tuple[int, int] | None:
    """Chinese: the answer's CMRC-normalised characters as a run of the passage's characters."""
    want = chinese.normalize_answer(answer)
    if not want:
        return None
    kept = [(i, ch) for i, ch in enumerate(context.lower()) if chinese.normalize_answer(ch)]
    stream = "".join(ch for _, ch in kept)
    j = stream.find(want)
    if j < 0 or len(stream) != len(kept):
        return None
    return kept[j][0], kept[j + len(want) - 1][0] + 1


def _lowered(text: str) -> str:
    """Lower case, character for character (a letter whose lower case is longer stays as it
    is), so that offsets into it are offsets into ``text``."""
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def _fuzzy(answer: str, context: str, zh: bool) -> tuple[int, int, float] | None:
    """The most similar window (rapidfuzz's ratio, case ignored): for languages with spaces every
    run of whole words one shorter to one longer than the answer; for Chinese the window
    ``partial_ratio_alignment`` finds (it has no words to run over)."""
    from rapidfuzz import fuzz

    needle, hay = _lowered(answer.strip()), _lowered(context)
    if not needle:
        return None
    if zh:
        found = fuzz.partial_ratio_alignment(needle, hay)
        if found is None:
            return None
        start, end = _edges_trimmed(context, found.dest_start, found.dest_end)
        return (start, end, fuzz.ratio(needle, hay[start:end])) if start < end else None
    words = [_edges_trimmed(context, m.start(), m.end()) for m in re.finditer(r"\S+", context)]
    words = [(s, e) for s, e in words if s < e]
    n = len(needle.split())
    best = None
    for size in range(max(1, n - 1), n + 2):
        for i in range(len(words) - size + 1):
            start, end = words[i][0], words[i + size - 1][1]
            score = fuzz.ratio(needle, hay[start:end])
            if best is None or score > best[2]:
                best = (start, end, score)
    return best


def align(answer: str, context: str, lang: str = "en", threshold: float = APPROXIMATE_THRESHOLD) -> Alignment:
    """Where ``answer`` is in ``context`` (see the module docstring).

    >>> align("北京", "2008年北京奥运会。", "zh")
    Alignment(kind='exact', start=5, end=7, similarity=100.0)
    >>> align("", "Some text.")
    Alignment(kind='not in the passage', start=None, end=None, similarity=0.0)
    """
    zh = chinese.is_chinese_lang(lang)
    text = answer.strip()
    if not text:
        return Alignment(NOT_IN_PASSAGE, None, None, 0.0)
    for finder in (_literal, (lambda a, c, _zh: _normalised_chars(a, c) if _zh else _normalised_words(a, c))):
        hit = finder(text, context, zh)
        if hit:
            start, end = _edges_trimmed(context, *hit)
            if start < end:
                return Alignment(EXACT, start, end, 100.0)
    fuzzy = _fuzzy(text, context, zh)
    if fuzzy and fuzzy[2] >= threshold:
        return Alignment(APPROXIMATE, fuzzy[0], fuzzy[1], round(fuzzy[2], 2))
    return Alignment(NOT_IN_PASSAGE, None, None, round(fuzzy[2], 2) if fuzzy else 0.0)
