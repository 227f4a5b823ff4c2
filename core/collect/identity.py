"""Who wrote what on a shared demo server: display names, their comparison keys, browser tokens.

Beat the AI (core/collect/) lets any visitor type a name. A name is NOT authentication: anyone can
type any name, and this module does not pretend otherwise. It only makes the two cheap tricks of a
visitor who wants to validate their own question fail:

* **look-alike names.** ``alice``, ``Alice``, ``a1ice``, ``al\u200bice`` (zero-width space),
  ``ａｌｉｃｅ`` (full-width), ``аlice`` (Cyrillic а) and ``alicé`` all have the same
  :func:`name_key`, so they count as one person. The key is a *skeleton* in the spirit of
  Unicode TR39: NFKC, invisible characters dropped, case-folded, accents dropped, common
  look-alike digits, symbols and Cyrillic/Greek letters mapped to the Latin letter they imitate
  (``0->o 1->l 3->e 5->s @->a ...``; ``i`` and ``l`` are merged, so are ``rn`` and ``m``), and
  everything but letters and digits removed. Two honest visitors whose names share a key merely
  cannot validate each other's questions: a small price for a comparison that errs on the safe side.
* **a second name in the same browser.** Each browser gets a random token (:func:`new_token`,
  kept in a cookie by the page, see pages/beat_the_ai.py); the store keeps only its hash
  (:func:`token_key`), so an export of the store never reveals a visitor's cookie. Same token or
  same name key = same person. Clearing cookies or using another browser defeats the token: that
  is what "not authentication" means.

The name is shown as typed (:func:`display_name`: NFKC, invisible characters removed, whitespace
collapsed), always escaped by the page (components/text.py).
"""
from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata

__all__ = ["MAX_NAME_CHARS", "TOKEN_COOKIE", "display_name", "name_key", "new_token",
           "valid_token", "token_key"]

MAX_NAME_CHARS = 60          # a display name, after normalisation; longer ones are cut
TOKEN_COOKIE = "qax_browser"  # the cookie that holds a browser's token
_TOKEN_RE = re.compile(r"[0-9a-f]{32}")

# Characters that render as nothing (or as a blank) but are not Unicode format characters (Cf):
# the Hangul fillers, the Braille blank, the Mongolian vowel separator (Cf only in some versions),
# the combining grapheme joiner and Khmer inherent vowels (Mn), the object replacement character.
_INVISIBLE = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E, 0x034F, 0x17B4, 0x17B5, 0xFFFC}

# Look-alikes, applied after NFKC, case folding and accent removal. Digits and symbols that stand
# in for letters (leetspeak), then Cyrillic and Greek letters that look like Latin ones.
_CONFUSABLES = str.maketrans({
    "0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
    "@": "a", "$": "s", "|": "l", "!": "l", "€": "e", "i": "l",
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "l", "ї": "l", "ј": "j", "ԁ": "d",
    "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "l", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ɡ": "g", "ı": "l", "ɩ": "l",
})
# Letter pairs that read as one letter in most fonts.
_DIGRAPHS = (("rn", "m"), ("vv", "w"), ("cl", "d"))


def _visible(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return not (cat in ("Cf", "Cc", "Cs", "Co", "Cn", "Zl", "Zp") and ch not in "\t\n\r"
                or ord(ch) in _INVISIBLE)


def display_name(name: object) -> str:
    """The name as shown and stored: NFKC, invisible characters removed, whitespace collapsed,
    at most :data:`MAX_NAME_CHARS` characters. Not escaped: the page escapes on output.

    >>> display_name("  Ada \\u200b Lovelace\\n")
    'Ada Lovelace'
    >>> display_name("ａｌｉｃｅ\\u2060"), display_name(None)
    ('alice', '')
    """
    if not isinstance(name, str):
        return ""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", name) if _visible(ch))
    return " ".join(text.split())[:MAX_NAME_CHARS].strip()


def name_key(name: object) -> str:
    """The comparison key of a name: equal keys = the same person (see the module docstring).
    "" for a name without any letter or digit.

    >>> {name_key(n) for n in ["alice", "Alice", "a1ice", "al\\u200bice", "ALICE ", "аlice",
    ...                        "alicé", "ａｌｉｃｅ", "@lice", "a l i c e"]}
    {'allce'}
    >>> name_key("Bob"), name_key("b0b"), name_key("rnary") == name_key("mary")
    ('bob', 'bob', True)
    >>> name_key("  ?-  "), name_key("张伟") == name_key("张 伟")
    ('', True)
    """
    text = display_name(name).casefold()
    # Accents: decompose, drop the combining marks (a visitor's "alicé" is "alice" to the eye).
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text)
                   if unicodedata.category(ch) != "Mn")
    text = text.translate(_CONFUSABLES)
    text = "".join(ch for ch in text if ch.isalnum())
    for pair, single in _DIGRAPHS:
        text = text.replace(pair, single)
    return unicodedata.normalize("NFC", text)


def new_token() -> str:
    """A fresh random browser token: 32 hex digits (128 bits from ``secrets``)."""
    return secrets.token_hex(16)


def valid_token(token: object) -> str | None:
    """``token`` when it is a well-formed browser token, else None (a cookie is visitor input).

    >>> valid_token("0123456789abcdef0123456789abcdef"), valid_token("x' OR 1=1"), valid_token(None)
    ('0123456789abcdef0123456789abcdef', None, None)
    """
    return token if isinstance(token, str) and _TOKEN_RE.fullmatch(token) else None


def token_key(token: str | None) -> str:
    """What the store keeps of a token: the first 32 hex digits of its SHA-256 ("" for none), so
    that exported records never reveal a cookie that would let someone pass for its owner.

    >>> token_key("0123456789abcdef0123456789abcdef")
    '3eb1bd439947eb762998e566ccc2e099'
    >>> token_key(None), token_key("")
    ('', '')
    """
    if not token:
        return ""
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()[:32]
