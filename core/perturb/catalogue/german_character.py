"""Character-level perturbations of Satheesh et al. (2024), "German extractive QA robustness", Table 6.

Twenty ids: operation x target x field.

* operation: **D** delete the character, **I** insert a random letter before it, **Repeat** it
  (doubled), **Replace** it with a random *different* letter (always a change), **S** swap it with
  the next character;
* target: **R** a random word, **V** a random verb (POS tag VERB, see :mod:`core.perturb.targets`);
* field: **Q** question, **C** context (gold-answer words never touched, answer offsets kept exact).

So ``DCRQ`` = Delete a Character of a Random word of the Question; ``SCVC`` = Swap Characters in a
Verb of the Context. A word qualifies when it is all letters and longer than 2; the character
position is ``rng.randint(1, n - 2)`` (n = current word length), so the first letter is never
touched (and neither is the last, as in the paper's formula).

Parameters: ``n_words`` (1..4) distinct words are chosen with ``rng.sample``; if fewer qualify, all
of them are perturbed (``meta["n_words_applied"]`` says how many). ``n_chars`` (1..4) distinct
characters of each chosen word are perturbed (capped at n - 2, the positions available), each
position drawn with ``randint(1, n - 2)`` on the original word; the operations are applied right to
left so every position names an original character. (Our choice: the paper does not say whether
several characters of one word may coincide; distinct positions make ``n_chars`` mean what it says,
whereas successive operations could undo each other, e.g. two swaps at one position.)

A random letter comes from :func:`core.perturb.targets.letter_alphabet` (a-z; German adds äöüß)
and takes the case of the character at the chosen position.
"""
from __future__ import annotations

import random
from typing import Any

from core.perturb.base import Edit, Param, Variant, make_variant
from core.perturb.keyboards import replace_keeping_case
from core.perturb.registry import register
from core.perturb.targets import WordTargetedPerturbation, candidate_words, define_grid, letter_alphabet
from core.types import QAExample

SOURCE = "German QA robustness (Satheesh et al. 2024), Table 6"

# op code -> (edit kind, human description)
OPERATIONS = {
    "D": ("delete_char", "delete a character"),
    "I": ("insert_char", "insert a random letter"),
    "Repeat": ("repeat_char", "repeat a character"),
    "Replace": ("replace_char", "replace a character by a random letter"),
    "S": ("swap_chars", "swap a character with the next one"),
}


def choose_positions(word: str, n_chars: int, rng: random.Random) -> list[int]:
    """``min(n_chars, len(word) - 2)`` distinct positions, each drawn as ``rng.randint(1, n - 2)``
    (redrawn when already taken), in the order drawn."""
    if len(word) < 3:
        raise ValueError(f"character operations need a word of more than 2 letters, got {word!r}")
    positions: list[int] = []
    while len(positions) < min(n_chars, len(word) - 2):
        i = rng.randint(1, len(word) - 2)
        if i not in positions:
            positions.append(i)
    return positions


def perturb_characters(op: str, word: str, positions: list[int], rng: random.Random, alphabet: str) -> str:
    """Apply character operation ``op`` at each of ``positions`` (offsets into the ORIGINAL ``word``).

    Positions are processed right to left so that each one still names the original character;
    random letters are drawn in that order too.
    """
    if op not in OPERATIONS:
        raise ValueError(f"unknown character operation {op!r}; known: {sorted(OPERATIONS)}")
    chars = list(word)
    for i in sorted(positions, reverse=True):
        if not 1 <= i <= len(word) - 2:
            raise ValueError(f"position {i} outside [1, {len(word) - 2}] for word {word!r}")
        if op == "D":
            del chars[i]
        elif op == "I":
            chars.insert(i, replace_keeping_case(word[i], rng.choice(alphabet)))
        elif op == "Repeat":
            chars.insert(i, word[i])
        elif op == "Replace":
            choices = [c for c in alphabet if c != word[i].lower()]
            chars[i] = replace_keeping_case(word[i], rng.choice(choices))
        else:  # "S": chars[i] and chars[i + 1] still hold original letters, or earlier swaps' results
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


class CharacterPerturbation(WordTargetedPerturbation):
    """Shared implementation; the concrete classes below only set op / target / field."""

    op: str
    family = "character"
    randomised = True
    parameters = (
        Param("n_words", 1, "how many distinct words to perturb (all of them when fewer qualify)", min=1, max=4),
        Param("n_chars", 1, "how many distinct characters of each word (at most its length - 2)", min=1, max=4),
    )
    source = SOURCE

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        words = candidate_words(example, self.field, self.target, char_level=True)
        if not words:
            return None
        text = getattr(example, self.field)
        alphabet = letter_alphabet(example.lang, text)
        chosen = rng.sample(words, min(params["n_words"], len(words)))
        kind = OPERATIONS[self.op][0]
        edits, changes = [], []
        for word in chosen:
            positions = choose_positions(word.text, params["n_chars"], rng)
            perturbed = perturb_characters(self.op, word.text, positions, rng, alphabet)
            edits.append(Edit(word.start, word.end, perturbed, kind))
            changes.append({"start": word.start, "end": word.end, "original": word.text,
                            "perturbed": perturbed, "positions": sorted(positions)})
        meta = {"params": params, "n_words_applied": len(chosen), "words": changes}
        return [make_variant(self, example, self.field, edits, meta)]


for _class in define_grid(CharacterPerturbation, __name__,
                          {op: text.capitalize() for op, (_, text) in OPERATIONS.items()}, "{op}C{target}{field}",
                          "{op_text} (not the first letter) in {target_text} of the {field_text}"):
    register(_class)
