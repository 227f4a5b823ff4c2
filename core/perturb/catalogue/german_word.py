"""Word-level perturbations of Satheesh et al. (2024), "German extractive QA robustness", Table 6.

* **D** (DRQ, DRC, DVQ, DVC): delete the word, with one adjacent space (the following one, else the
  preceding one) so no double space is left behind;
* **Repeat** (RepeatRQ/RC/VQ/VC): the word is written twice ("the the");
* **Split** (SplitRQ/RC/VQ/VC): a space is inserted inside the word at ``rng.choice`` of its
  split points, so both halves are non-empty: every position 1 .. n - 1 (``randint(1, n - 1)``'s
  draw) except one before a combining mark, which would leave a Thai tone mark or a Hindi vowel
  sign on its own after the space (a word with no split point is not chosen);
* **SwapRQ**: swap two words. Our choice (the paper says only "swap two words"): a random word and
  the word right after it, as nlpaug's word-swap augmenter does; punctuation stays in place
  ("capital of France?" -> "capital France of?").

R = a random word, V = a random verb (POS tag VERB); Q = question, C = context (gold-answer words
are never touched and answer offsets stay exact). ``n_words`` (1..4) distinct words are chosen
with ``rng.sample`` (all of them when fewer qualify). Words: see :mod:`core.perturb.targets`.
(ReplaceRQ, the masked-LM synonym replacement, lives in another module.)
"""
from __future__ import annotations

import random
import unicodedata
from typing import Any

from core.perturb import nlp
from core.perturb.base import Edit, Param, Variant, make_variant
from core.perturb.registry import register
from core.perturb.targets import WordSpan, WordTargetedPerturbation, candidate_words, define_grid
from core.types import QAExample

SOURCE = "German QA robustness (Satheesh et al. 2024), Table 6"


def split_points(word: str) -> list[int]:
    """Where a space may go inside ``word``: not first, not before a combining mark.

    >>> split_points("Bälle"), split_points("कितने"), split_points("ที่")
    ([1, 2, 3, 4], [2, 3], [])
    """
    return [i for i in range(1, len(word)) if not unicodedata.category(word[i]).startswith("M")]


def word_separator(lang: str) -> str:
    """What separates words: nothing in languages written without spaces, a space elsewhere."""
    return "" if lang in nlp.UNSEGMENTED_LANGUAGES else " "


def deletion_edits(text: str, words: list[WordSpan]) -> list[Edit]:
    """Edits deleting ``words`` plus one adjacent whitespace each (following, else preceding, if free)."""
    edits: list[Edit] = []
    for word in sorted(words, key=lambda w: w.start):
        start, end = word.start, word.end
        if end < len(text) and text[end].isspace():
            end += 1
        elif start > 0 and text[start - 1].isspace() and (not edits or edits[-1].end <= start - 1):
            start -= 1
        edits.append(Edit(start, end, "", "delete_word"))
    return edits


class WordPerturbation(WordTargetedPerturbation):
    """Delete / repeat / split ``n_words`` chosen words; concrete classes set op, target, field."""

    op: str
    family = "word"
    randomised = True
    parameters = (Param("n_words", 1, "how many distinct words (all of them when fewer qualify)", min=1, max=4),)
    source = SOURCE

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        words = candidate_words(example, self.field, self.target, char_level=False,
                                min_len=2 if self.op == "Split" else 1)
        if self.op == "Split":
            words = [w for w in words if split_points(w.text)]
        if not words:
            return None
        text = getattr(example, self.field)
        chosen = rng.sample(words, min(params["n_words"], len(words)))
        changes: list[dict] = [{"start": w.start, "end": w.end, "word": w.text} for w in chosen]
        if self.op == "D":
            edits = deletion_edits(text, chosen)
        elif self.op == "Repeat":
            sep = word_separator(example.lang)
            edits = [Edit(w.end, w.end, sep + w.text, "repeat_word") for w in chosen]
        elif self.op == "Split":
            edits = []
            for w, change in zip(chosen, changes):
                cut = rng.choice(split_points(w.text))   # the draw of randint(1, n - 1) where all are
                change["split_at"] = cut
                edits.append(Edit(w.start + cut, w.start + cut, " ", "split_word"))
        else:
            raise ValueError(f"unknown word operation {self.op!r}")
        meta = {"params": params, "n_words_applied": len(chosen), "words": changes}
        return [make_variant(self, example, self.field, edits, meta)]


_OPS = {"D": "Delete", "Repeat": "Repeat", "Split": "Insert a space inside"}
for _class in define_grid(WordPerturbation, __name__, _OPS, "{op}{target}{field}",
                          "{op_text} {target_text} of the {field_text}"):
    register(_class)


@register
class SwapRQ(WordTargetedPerturbation):
    id = "SwapRQ"
    family = "word"
    field = "question"
    target = "R"
    randomised = True
    description = "Swap a random word of the question with the next word"
    source = SOURCE

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        words = candidate_words(example, self.field, "R", char_level=False)
        if len(words) < 2:
            return None
        i = rng.randint(0, len(words) - 2)
        left, right = words[i], words[i + 1]
        edits = [Edit(left.start, left.end, right.text, "swap_words"),
                 Edit(right.start, right.end, left.text, "swap_words")]
        meta = {"params": params, "swapped": [left.text, right.text], "index": i}
        return [make_variant(self, example, self.field, edits, meta)]
