"""NoiseQA's synthetic keyboard noise (Ravichander et al. 2021, §1 of SEEDS.md).

* **keyboard_Q** - split the question on whitespace; each token is chosen with probability ``p``
  (0.25); a chosen token longer than one character gets ONE randomly chosen letter replaced by a
  random *row-wise* QWERTY neighbour from NoiseQA's exact map
  (:data:`core.perturb.keyboards.NOISEQA_ROWWISE_QWERTY`), so a chosen token always changes.
  Eligible characters are the ones whose lower-case form is in the map (a-z); an upper-case
  letter is looked up lower-case and the neighbour is upper-cased back. A chosen token without
  any eligible character ("1963", "?") stays as it is. One ``rng.random()`` is drawn per token,
  then, for a chosen token, ``rng.choice`` of the position and ``rng.choice`` of the neighbour.
  Other languages type on their own keyboard (:func:`core.perturb.keyboards.layout_for`: QWERTZ
  for German, AZERTY for French, the Russian, Greek, Arabic, Hindi and Thai layouts), row-wise as
  NoiseQA's map; our extension, as NoiseQA's noise is English.
* **misspell_Q** - replace words by human misspellings from Wikipedia's list of common
  misspellings, filtered to interface errors (:mod:`core.perturb.misspellings`). Every word that
  has such a misspelling is replaced with probability ``p`` (default 1.0: all of them, as in
  Belinkov & Bisk's "natural noise"; the rate is our choice, NoiseQA does not give one) by a
  random one of its misspellings, in the word's case pattern.
"""
from __future__ import annotations

import random
import re
from typing import Any

from core.perturb import misspellings
from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.keyboards import LAYOUT_NAMES, layout_for, replace_keeping_case, rowwise
from core.perturb.nlp import WORD_RE
from core.perturb.registry import register
from core.types import QAExample

SOURCE = "NoiseQA (Ravichander et al. 2021), synthetic keyboard noise"
_TOKEN_RE = re.compile(r"\S+")


def _eligible_positions(token: str, keys: dict[str, tuple[str, ...]]) -> list[int]:
    return [i for i, ch in enumerate(token) if ch.lower() in keys and keys[ch.lower()]]


def _any_typeable(tokens: list[re.Match], keys: dict[str, tuple[str, ...]]) -> bool:
    """Whether a word of more than one character has a letter on the keyboard ``keys``."""
    return any(len(t.group()) > 1 and _eligible_positions(t.group(), keys) for t in tokens)


@register
class KeyboardQ(Perturbation):
    id = "keyboard_Q"
    family = "keyboard"
    field = "question"
    randomised = True
    description = ("NoiseQA keyboard noise: 1 in 4 words gets one letter replaced by a row-wise keyboard "
                   "neighbour (QWERTY; QWERTZ for German, AZERTY for French, their own layouts for Russian, "
                   "Greek, Arabic, Hindi and Thai)")
    parameters = (Param("p", 0.25, "probability that a word gets one keyboard typo", min=0.0, max=1.0, step=0.05),)
    source = SOURCE

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        layout = layout_for(example.lang)
        if _any_typeable(list(_TOKEN_RE.finditer(example.question)), rowwise(layout)):
            return None
        return (f"keyboard_Q types on a {LAYOUT_NAMES[layout]} keyboard, and no word of this question (split at "
                "spaces) has a letter of it")

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        # NoiseQA's exact QWERTY map for English; a German speaker types on QWERTZ (no y/z swap
        # in its typos on QWERTY), a French one on AZERTY.
        keys = rowwise(layout_for(example.lang))
        tokens = list(_TOKEN_RE.finditer(example.question))
        if not _any_typeable(tokens, keys):   # what _nothing_to_change says, on tokens split once
            return None
        edits, changed = [], []
        for token in tokens:
            if rng.random() >= params["p"] or len(token.group()) <= 1:
                continue
            positions = _eligible_positions(token.group(), keys)
            if not positions:
                continue
            i = rng.choice(positions)
            original = token.group()[i]
            new = replace_keeping_case(original, rng.choice(keys[original.lower()]))
            edits.append(Edit(token.start() + i, token.start() + i + 1, new, "keyboard"))
            changed.append({"token": token.group(), "position": i, "from": original, "to": new})
        return [make_variant(self, example, self.field, edits,
                             {"params": params, "n_tokens": len(tokens), "changed_tokens": changed})]


def match_case(model: str, word: str) -> str:
    """``word`` in the case pattern of ``model``: ALL CAPS, Capitalised, or left as it is."""
    if len(model) > 1 and model.isupper():
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


@register
class MisspellQ(Perturbation):
    id = "misspell_Q"
    family = "keyboard"
    field = "question"
    languages = ("en",)
    randomised = True
    description = "Replace words by common human misspellings (Wikipedia list, typing errors only)"
    parameters = (Param("p", 1.0, "probability that a word with a known misspelling is misspelt",
                        min=0.0, max=1.0, step=0.05),)
    source = "NoiseQA (Ravichander et al. 2021); Wikipedia list of common misspellings"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return misspellings.missing_data_reason()

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        table = misspellings.load_interface_misspellings()
        candidates = []
        for m in WORD_RE.finditer(example.question):
            word = m.group()
            options = table.get(word) or (table.get(word.lower()) if word[:1].isupper() else None)
            if options:
                candidates.append((m, options))
        if not candidates:
            return None
        edits, replaced = [], []
        for m, options in candidates:
            if rng.random() >= params["p"]:
                continue
            typo = match_case(m.group(), rng.choice(options))
            edits.append(Edit(m.start(), m.end(), typo, "misspelling"))
            replaced.append({"word": m.group(), "misspelling": typo,
                             "error": misspellings.classify_interface_error(m.group(), typo)})
        return [make_variant(self, example, self.field, edits,
                             {"params": params, "n_candidates": len(candidates), "replaced": replaced})]
