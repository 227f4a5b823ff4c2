"""When a question typed on Ask is the dataset item's own question, so its gold answer applies.

A user's own question about the passage ("What year ...") has no gold answer: scoring it
against the item's gold ("308") says EM 0 / F1 0 about a question nobody wrote a gold answer for.
Ask scores only the item's own question (up to case, spacing and end punctuation), or a gold
answer the user types.
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["question_key", "same_question"]

# End marks of XQuAD's languages too: Arabic ؟, the Greek question mark ; (U+037E, or a plain ;),
# the Devanagari danda।
_EDGE = re.compile(r"^[\s¿¡\"'“”«»]+|[\s?？!！.。؟;;।\"'“”«»]+$")


def question_key(question: str) -> str:
    """Lower-cased, spaces collapsed, leading/trailing punctuation and spaces dropped.

    >>> question_key("  What year did  Beyoncé win?  ")
    'what year did beyoncé win'
    >>> question_key("¿Dónde está?")
    'dónde está'
    >>> question_key("Πόσους πόντους;") == question_key("πόσους πόντους"), question_key("كم نقطة؟")
    (True, 'كم نقطة')
    """
    text = unicodedata.normalize("NFC", question).casefold()
    return _EDGE.sub("", " ".join(text.split()))


def same_question(typed: str, own: str) -> bool:
    """Whether ``typed`` is the item's question ``own`` (case, spacing and end punctuation aside).

    >>> same_question("what is the capital of france", "What is the capital of France?")
    True
    >>> same_question("What year was it built?", "What is the capital of France?")
    False
    >>> same_question("", "")
    False
    """
    key = question_key(typed)
    return bool(key) and key == question_key(own)
