"""Small helpers shared by the artefact, keyboard-by-word-class and repair perturbations.

* :func:`tagger_problem` - why a language has no real POS tagger (a reason for ``why_not``);
* word classes over Universal POS tags (function / content words, as NoiseQA's artefacts use them);
* :func:`deletion_edits` - delete a set of tokens together with the whitespace that separated them,
  so "What is the name of it?" minus {is, the, of} reads "What name it?" (no double spaces).
"""
from __future__ import annotations

from collections.abc import Sequence

from core.perturb.base import Edit
from core.perturb.nlp import Token, analyse

# Closed-class Universal POS tags (UD's closed classes, minus NUM which we treat on its own).
FUNCTION_POS = frozenset({"ADP", "AUX", "CCONJ", "DET", "PART", "PRON", "SCONJ"})
# NoiseQA's "content words (nouns, adjectives)"; proper nouns are nouns.
CONTENT_POS = frozenset({"NOUN", "PROPN", "ADJ"})
WORD_CLASSES = {"function": FUNCTION_POS, "content": CONTENT_POS}


def tagger_problem(lang: str) -> str | None:
    """Why the real POS tagger for ``lang`` is not in use (the heuristic fallback has no word classes)."""
    analysis = analyse("", lang)
    return analysis.warning


def tokens_of_class(text: str, lang: str, word_class: str) -> list[Token]:
    """The tokens of ``text`` in ``word_class`` ("function" or "content")."""
    tags = WORD_CLASSES[word_class]
    return [t for t in analyse(text, lang).tokens if t.pos in tags]


def deletion_edits(text: str, tokens: Sequence[Token], kind: str) -> list[Edit]:
    """Edits deleting ``tokens`` (a subset of the text's tokens) and the whitespace they leave.

    Tokens adjacent in the text (only whitespace between them) are deleted as one run. A run
    takes the whitespace before it with it; a run at the start of the text takes the whitespace
    after it instead. Runs are separated by kept text, so the edits never overlap.
    """
    runs: list[list[Token]] = []
    for token in sorted(tokens, key=lambda t: t.start):
        if runs and text[runs[-1][-1].end:token.start].strip() == "":
            runs[-1].append(token)
        else:
            runs.append([token])
    edits = []
    for run in runs:
        start, end = run[0].start, run[-1].end
        before = start
        while before > 0 and text[before - 1].isspace():
            before -= 1
        if before > 0 and before < start:
            start = before
        elif before == 0:
            while end < len(text) and text[end].isspace():
                end += 1
        edits.append(Edit(start, end, "", kind))
    return edits
