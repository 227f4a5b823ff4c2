"""NoiseQA's mitigation (a): repair a noisy question before the model sees it (not a perturbation).

Ravichander et al. (2021) repair questions with the context: a question word that does not occur in
the context is replaced by the closest context word, if the character error rate between the two
is <= 0.5; applied to content words only, or to named entities only. They also add a missing final
question mark and run a spellchecker. Here:

* :func:`repair_with_context` - ``mode="content"`` (NOUN, PROPN, ADJ tokens, as the artefacts
  define content words), ``"entities"`` (tokens the tagger labels as a *named* entity: PER, LOC,
  ORG and the other name types, not DATE/CARDINAL/... numbers), or ``"all"`` (every word).
  "Closest" = smallest CER, where CER = Levenshtein distance / length of the CONTEXT word (the
  context word is the presumed correct form, i.e. the reference; our reading). Comparison ignores
  case; ties go to the context word that occurs first. The replacement is written as it appears in
  the context.
* :func:`add_question_mark` - append the language's question mark when the question has none.
* :func:`spellcheck` - pyspellchecker (PyPI ``pyspellchecker``, word-frequency lists shipped in the
  wheel: en, es, fr, pt, de, it, ru, ar, eu, lv, nl, fa). Words with digits, or with a capital letter
  anywhere but at the start (acronyms: "HDTV"), and capitalised words other than the first word
  (likely names) are left alone - a frequency-list spellchecker would "correct" them into common words.

Every function returns a :class:`Repair` (the new text and the list of changes) so the UI can show
what was changed and why.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

from rapidfuzz.distance import Levenshtein

from core.perturb.base import Edit, splice
from core.perturb.nlp import WORD_RE, analyse, word_spans
from core.perturb.support import CONTENT_POS
from core.types import QAExample

MAX_CER = 0.5
MODES = ("content", "entities", "all")
# spaCy's numeric entity types are not names; everything else the tagger labels is.
NUMERIC_ENTITY_TYPES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
SPELLCHECK_LANGUAGES = ("ar", "de", "en", "es", "eu", "fa", "fr", "it", "lv", "nl", "pt", "ru")
QUESTION_MARK = {"zh": "？", "ja": "？", "ar": "؟", "el": ";"}
_ALL_QUESTION_MARKS = ("?", "？", "؟", ";", "\u037e")


@dataclass(frozen=True)
class Change:
    start: int          # offsets into the ORIGINAL question
    end: int
    old: str
    new: str
    reason: str         # e.g. "closest context word, CER 0.17"


@dataclass
class Repair:
    text: str
    changes: list[Change] = field(default_factory=list)


def _apply(text: str, changes: list[Change]) -> str:
    return splice(text, [Edit(c.start, c.end, c.new, "repair") for c in changes])


def word_cer(reference: str, hypothesis: str) -> float:
    """Character error rate of ``hypothesis`` against ``reference``, ignoring case."""
    if not reference:
        raise ValueError("empty reference word")
    return Levenshtein.distance(reference.lower(), hypothesis.lower()) / len(reference)


def closest_word(word: str, candidates: list[str]) -> tuple[str, float] | None:
    """The candidate with the smallest :func:`word_cer` against ``word`` (first one on ties)."""
    best: tuple[str, float] | None = None
    for candidate in candidates:
        cer = word_cer(candidate, word)
        if best is None or cer < best[1]:
            best = (candidate, cer)
    return best


# Quantifiers a tagger calls adjectives, left out of the content words repaired (our choice).
_QUANTIFIERS = {"en": frozenset({"many", "much", "few", "several", "more", "most", "less", "least"}),
                "de": frozenset({"viele", "viel", "wenige", "wenig", "mehr", "meisten", "mehrere"})}


def _question_targets(question: str, lang: str, mode: str) -> list[tuple[int, int]]:
    """The [start, end) spans of the question words ``mode`` selects, as whole words.

    The tagger splits "government-owned" and "Bronco's" into several tokens while the context's
    words (:func:`word_spans`) keep them whole; a selected token is therefore widened to the whole
    word it is part of, else "government" (absent from a context that has "government-owned")
    would be "repaired" into "government-owned", giving "government-owned-owned".
    """
    words = word_spans(question, lang)
    if mode == "all":
        return words
    tokens = analyse(question, lang).tokens
    if mode == "content":
        # quantifiers are tagged adjectives but say how much is asked, not what about: the "many" of
        # "how many" (its "how" perhaps mistyped) was "repaired" to a context's "Lane" (CER 0.5)
        quantifiers = _QUANTIFIERS.get(lang, frozenset())
        chosen = [(t.start, t.end) for t in tokens if t.pos in CONTENT_POS and t.text.lower() not in quantifiers]
    else:
        chosen = [(t.start, t.end) for t in tokens if t.ent and t.ent not in NUMERIC_ENTITY_TYPES]
    spans: list[tuple[int, int]] = []
    for start, end in chosen:
        whole = next(((s, e) for s, e in words if s <= start and end <= e), (start, end))
        if whole not in spans:
            spans.append(whole)
    return spans


def _repairable(word: str) -> bool:
    """Words the context repair may touch: with a letter and no digit.

    A word with a digit ("4th", "1960s", "B2") is a number or a code, not a misheard or mistyped
    word: replacing it by a near context word turned "4th" into "With" (CER 0.5). Our choice; the
    paper does not say.
    """
    return any(ch.isalpha() for ch in word) and not any(ch.isdigit() for ch in word)


def repair_with_context(question: str, context: str, lang: str = "en", mode: str = "content",
                        max_cer: float = MAX_CER) -> Repair:
    """Replace question words absent from ``context`` by their closest context word (CER <= max_cer)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if max_cer < 0:
        raise ValueError(f"max_cer must be >= 0, got {max_cer}")
    context_words = list(dict.fromkeys(context[s:e] for s, e in word_spans(context, lang)))
    present = {w.lower() for w in context_words}
    changes = []
    for start, end in _question_targets(question, lang, mode):
        word = question[start:end]
        if not _repairable(word) or word.lower() in present:
            continue
        best = closest_word(word, context_words)
        if best is not None and best[1] <= max_cer:
            changes.append(Change(start, end, word, best[0], f"closest context word, CER {best[1]:.2f}"))
    return Repair(_apply(question, changes), changes)


def add_question_mark(question: str, lang: str = "en") -> Repair:
    """Append the language's question mark ("?", "？" for zh/ja, "؟" for ar, ";" for el) if missing."""
    stripped = question.rstrip()
    if stripped.endswith(_ALL_QUESTION_MARKS) or not stripped:
        return Repair(question)
    mark = QUESTION_MARK.get(lang, "?")
    end = len(question)
    return Repair(stripped + mark, [Change(len(stripped), end, question[len(stripped):], mark,
                                           "added the final question mark")])


@functools.lru_cache(maxsize=None)
def _spellchecker(lang: str):
    from spellchecker import SpellChecker

    return SpellChecker(language=lang)


def _skip_for_spelling(word: str, is_first: bool) -> bool:
    if any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]):
        return True
    return word[:1].isupper() and not is_first


def spellcheck(question: str, lang: str = "en", keep: frozenset[str] | set[str] = frozenset()) -> Repair:
    """Correct misspelled words with pyspellchecker's most probable candidate (see module docstring).

    Words whose lower-case form is in ``keep`` (the context's words, when repairing against a
    context) are left alone: the context says they are spelled right.
    """
    if lang not in SPELLCHECK_LANGUAGES:
        raise ValueError(f"no spellchecker dictionary for {lang!r}; available: {', '.join(SPELLCHECK_LANGUAGES)}")
    checker = _spellchecker(lang)
    changes = []
    for i, m in enumerate(WORD_RE.finditer(question)):
        word = m.group()
        if _skip_for_spelling(word, i == 0) or word.lower() in keep or word.lower() in checker:
            continue
        correction = checker.correction(word.lower())
        if correction and correction != word.lower():
            fixed = correction[:1].upper() + correction[1:] if word[:1].isupper() else correction
            changes.append(Change(m.start(), m.end(), word, fixed, "spellchecker"))
    return Repair(_apply(question, changes), changes)


def repair_question(question: str, context: str, lang: str = "en", mode: str = "content",
                    spellcheck_words: bool = False, question_mark: bool = False,
                    max_cer: float = MAX_CER) -> Repair:
    """NoiseQA's repairs together, as one :class:`Repair` with offsets into the original question.

    In order: the context repair (``mode`` content / entities / all, or ``"none"`` to skip it),
    then the spellchecker on the words the context repair left alone and that do not occur in the
    context, then the final question mark. Each change keeps its reason.

    >>> r = repair_question("Who ownz the cat", "The cat is owned by Ann.", mode="all", question_mark=True)
    >>> r.text, [c.reason for c in r.changes]
    ('Who owned the cat?', ['closest context word, CER 0.40', 'added the final question mark'])
    """
    if mode not in MODES + ("none",):
        raise ValueError(f"mode must be one of {MODES + ('none',)}, got {mode!r}")
    changes = list(repair_with_context(question, context, lang, mode, max_cer).changes) if mode != "none" else []
    if spellcheck_words:
        present = frozenset(context[s:e].lower() for s, e in word_spans(context, lang))
        for c in spellcheck(question, lang, keep=present).changes:
            if not any(c.start < o.end and o.start < c.end for o in changes):
                changes.append(c)
    if question_mark:
        changes.extend(add_question_mark(question, lang).changes)
    changes.sort(key=lambda c: c.start)
    return Repair(_apply(question, changes), changes)


def repair_example(example: QAExample, method: str, **kwargs) -> tuple[QAExample, Repair]:
    """``example`` with its question repaired by ``method`` ("context", "question_mark", "spellcheck")."""
    if method != "context" and kwargs:
        raise ValueError(f"repair method {method!r} takes no options, got {sorted(kwargs)}")
    if method == "context":
        result = repair_with_context(example.question, example.context, example.lang, **kwargs)
    elif method == "question_mark":
        result = add_question_mark(example.question, example.lang)
    elif method == "spellcheck":
        result = spellcheck(example.question, example.lang)
    else:
        raise ValueError(f"unknown repair method {method!r}; use 'context', 'question_mark' or 'spellcheck'")
    return dataclasses.replace(example, question=result.text), result


__all__ = ["Change", "Repair", "repair_with_context", "repair_question", "add_question_mark", "spellcheck",
           "repair_example", "word_cer", "closest_word", "MODES", "MAX_CER"]
