"""Trap sentences for over-stability analysis (DuReader-robust, Tang et al. 2021; SEEDS.md §3).

A *trap* is a context sentence that contains an entity of the gold answer's type which is not the
answer. Over-stable models latch onto the sentence that shares most words with the question, so
F1 falls as question-trap similarity rises. Similarity = token F1 between the trap sentence and
the question (:func:`question_similarity`: SQuAD token F1, character-level F1 for Chinese).

How entities and their types are found (our choices; the paper does not fix them):
  * NER where :mod:`core.perturb.nlp` has it (English: spaCy, Chinese: jieba's nr/ns/nt). An
    entity is a run of consecutive tokens with the same label (PER, LOC, ORG, DATE, CARDINAL,
    ...). The answer's type is the label of the first entity overlapping the first gold answer.
  * Otherwise (German via HanTa, other languages, or an answer that overlaps no named entity):
    the heuristic types NUM (a run of number tokens, e.g. "1963") and PROPN (a run of proper
    nouns; under the regex fallback a capitalised word that does not start a sentence). The
    answer's type is NUM if it contains a number token, else PROPN if it contains a proper noun,
    else it has no type and the example has no trap.
  * Sentences are split after ``. ! ? ؟`` followed by whitespace, and after ``。！？`` and the
    danda ``।`` (so "U.S. Army" splits wrongly; the similarity then covers half a sentence, a
    small error for a bucket plot).
  * The sentence holding the gold answer is never a trap (it would measure the answer sentence),
    nor is an entity whose normalised text equals the answer's.
  * When several sentences are traps, the one most similar to the question is *the* trap.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from core.metrics.rules import scoring_rule
from core.perturb import nlp

__all__ = ["Trap", "sentence_spans", "question_similarity", "find_trap"]

# Latin and Arabic marks before a space; CJK marks and the Devanagari danda (XQuAD-hi) anywhere.
_SENTENCE_END = re.compile(r"[.!?؟]+(?=\s|$)|[。！？।॥]+")


@dataclass(frozen=True)
class Trap:
    sentence: str
    start: int            # sentence offsets in the context
    end: int
    entity: str           # the distracting entity
    entity_type: str
    similarity: float     # token F1 between the sentence and the question
    method: str           # "ner" or "heuristic"


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence (leading/trailing whitespace excluded).

    >>> t = "It opened in 1889. It is 300 m tall! Why?"
    >>> [t[s:e] for s, e in sentence_spans(t)]
    ['It opened in 1889.', 'It is 300 m tall!', 'Why?']
    >>> t = "पुल 1907 में बना। यह 86 मीटर लंबा है।"
    >>> [t[s:e] for s, e in sentence_spans(t)]
    ['पुल 1907 में बना।', 'यह 86 मीटर लंबा है।']
    """
    spans, start = [], 0
    cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
    if not cuts or cuts[-1] < len(text):
        cuts.append(len(text))
    for end in cuts:
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            trail = len(piece) - len(piece.rstrip())
            spans.append((start + lead, end - trail))
        start = end
    return spans


def question_similarity(a: str, b: str, lang: str = "en") -> float:
    """Token F1 of two texts in [0, 1]: SQuAD tokens, characters for Chinese (symmetric).

    >>> question_similarity("When was the tower built?", "When was the tower completed?")
    0.75
    """
    return float(scoring_rule(lang).module.f1_score(a, b))


def _entity_runs(tokens, key) -> list[tuple[int, int, str]]:
    """Maximal runs of consecutive tokens with the same non-empty ``key(token)``: (start, end, label)."""
    runs: list[list] = []
    last = -2
    for i, t in enumerate(tokens):
        label = key(t)
        if not label:
            continue
        if runs and runs[-1][2] == label and last == i - 1:
            runs[-1][1] = t.end
        else:
            runs.append([t.start, t.end, label])
        last = i
    return [(s, e, lab) for s, e, lab in runs]


def _heuristic_type(token) -> str:
    return token.pos if token.pos in ("NUM", "PROPN") else ""


def _overlaps(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    return a_start < b_end and b_start < a_end


def _normal(text: str, lang: str) -> str:
    return scoring_rule(lang).module.normalize_answer(text)


def find_trap(context: str, question: str, answer_text: str, answer_start: int, lang: str) -> Trap | None:
    """The trap of an example (the most question-like one), or None when there is none."""
    return _find_trap(context, question, answer_text, answer_start, lang)


@functools.lru_cache(maxsize=8192)
def _find_trap(context: str, question: str, answer_text: str, answer_start: int, lang: str) -> Trap | None:
    try:
        analysis = nlp.analyse(context, lang)
    except ValueError:
        return None
    tokens = analysis.tokens
    a_start, a_end = answer_start, answer_start + len(answer_text)
    answer_norm = _normal(answer_text, lang)

    candidates: list[tuple[str, list[tuple[int, int, str]]]] = []
    if any(t.ent for t in tokens):
        ner = _entity_runs(tokens, lambda t: t.ent)
        typed = [lab for s, e, lab in ner if _overlaps(s, e, a_start, a_end)]
        if typed:
            candidates.append(("ner", [r for r in ner if r[2] == typed[0]]))
    if not candidates:
        heur = _entity_runs(tokens, _heuristic_type)
        kinds = {lab for s, e, lab in heur if _overlaps(s, e, a_start, a_end)}
        kind = "NUM" if "NUM" in kinds else ("PROPN" if "PROPN" in kinds else None)
        if kind is None:
            return None
        candidates.append(("heuristic", [r for r in heur if r[2] == kind]))
    method, entities = candidates[0]

    best: Trap | None = None
    for s_start, s_end in sentence_spans(context):
        if _overlaps(s_start, s_end, a_start, a_end):
            continue
        inside = [(s, e, lab) for s, e, lab in entities
                  if s >= s_start and e <= s_end and _normal(context[s:e], lang) != answer_norm]
        if not inside:
            continue
        sentence = context[s_start:s_end]
        sim = question_similarity(sentence, question, lang)
        if best is None or sim > best.similarity:
            s, e, lab = inside[0]
            best = Trap(sentence, s_start, s_end, context[s:e], lab, sim, method)
    return best
