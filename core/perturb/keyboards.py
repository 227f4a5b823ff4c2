"""Keyboard layouts as data, and the letter-neighbour maps typo perturbations draw from.

Two kinds of map:

* ``NOISEQA_ROWWISE_QWERTY`` - the exact *row-wise* QWERTY map of NoiseQA's synthetic keyboard
  noise (Ravichander et al. 2021), copied verbatim (order included, since it decides which
  neighbour a seeded draw picks).
* :func:`neighbours` - *full* adjacency for QWERTY (US), QWERTZ (German) and AZERTY (French):
  the keys left and right on the same row, plus the keys of the rows above and below whose centres
  are less than one key width away horizontally (physical row stagger below).

Russian (ЙЦУКЕН), Greek, Arabic (101), Hindi (InScript) and Thai (Kedmanee) keyboards carry the
Latin QWERTY letters on the same keys (:data:`SECOND_ALPHABET`), so a Latin word in a Russian
question is typed wrong as on QWERTY; Greek accented vowels are typed with a dead key on their
vowel's key (:data:`DEAD_KEY_LETTERS`); Hindi's vowel signs and Thai's above and below vowels and
tone marks are combining marks, not letters, so only the letters on those keyboards are replaced.
These layouts are our extension: NoiseQA types English only, the German paper German.

Only keys whose UNSHIFTED character is a letter take part (so QWERTZ keeps ü ö ä and ß, AZERTY keeps
é è ç à ù, and neither includes digits or punctuation): a letter is only ever replaced by a letter.
Maps are lower-case; callers map upper-case characters through their lower-case form and restore
the case (see :func:`replace_keeping_case`).
"""
from __future__ import annotations

import functools
import unicodedata

# NoiseQA, synthetic keyboard noise: "a chosen token gets one randomly chosen letter replaced by a
# row-wise QWERTY neighbour" - exactly this map (SEEDS.md §1).
NOISEQA_ROWWISE_QWERTY: dict[str, tuple[str, ...]] = {
    "a": ("s",), "b": ("v", "n"), "c": ("x", "v"), "d": ("s", "f"), "e": ("r", "w"), "f": ("g", "d"),
    "g": ("f", "h"), "h": ("g", "j"), "i": ("u", "o"), "j": ("h", "k"), "k": ("j", "l"), "l": ("k",),
    "m": ("n",), "n": ("m", "b"), "o": ("i", "p"), "p": ("o",), "q": ("w",), "r": ("t", "e"),
    "s": ("d", "a"), "t": ("r", "y"), "u": ("y", "i"), "v": ("c", "b"), "w": ("e", "q"), "x": ("z", "c"),
    "y": ("t", "u"), "z": ("x",),
}

# Rows as typed without shift, left to right, with the x offset (in key widths) of the row's first
# key relative to the digit row's first key. Offsets follow the usual staggered geometry
# (Tab 1.5 wide, Caps Lock 1.75, left Shift 1.25 + ISO "<" key or 2.25 on ANSI).
LAYOUTS: dict[str, tuple[tuple[float, str], ...]] = {
    "qwerty": (
        (0.0, "`1234567890-="),
        (1.5, "qwertyuiop[]\\"),
        (1.75, "asdfghjkl;'"),
        (2.25, "zxcvbnm,./"),
    ),
    "qwertz": (
        (0.0, "^1234567890ß´"),
        (1.5, "qwertzuiopü+"),
        (1.75, "asdfghjklöä#"),
        (1.25, "<yxcvbnm,.-"),
    ),
    "azerty": (
        (0.0, "²&é\"'(-è_çà)="),
        (1.5, "azertyuiop^$"),
        (1.75, "qsdfghjklmù*"),
        (1.25, "<wxcvbn,;:!"),
    ),
    "russian": (   # ЙЦУКЕН, as Windows and macOS lay it out on an ANSI board
        (0.0, "ё1234567890-="),
        (1.5, "йцукенгшщзхъ\\"),
        (1.75, "фывапролджэ"),
        (2.25, "ячсмитьбю."),
    ),
    "greek": (     # ΄ is the dead key for the accent
        (0.0, "`1234567890-="),
        (1.5, ";ςερτυθιοπ[]\\"),
        (1.75, "ασδφγηξκλ΄'"),
        (2.25, "ζχψωβνμ,./"),
    ),
    "arabic": (    # Arabic (101); the one key typing لا is kept as a gap (two letters, no one letter)
        (0.0, "ذ1234567890-="),
        (1.5, "ضصثقفغعهخحجد\\"),
        (1.75, "شسيبلاتنمكط"),
        (2.25, "ئءؤر ىةوزظ"),
    ),
    "hindi": (     # Devanagari InScript (Windows KBDINDEV); vowel signs are marks, not letters
        (0.0, "ॊ1234567890-ृ"),
        (1.5, "ौैाीूबहगदजड़ॉ"),
        (1.75, "ोे्िुपरकतचट"),
        (2.25, "ॆंमनवलस,./"),
    ),
    "thai": (      # Thai Kedmanee (TIS 820-2538); above and below vowels and tones are marks
        (0.0, "_ๅ/-ภถุึคตจขช"),
        (1.5, "ๆไำพะัีรนยบลฃ"),
        (1.75, "ฟหกดเ้่าสวง"),
        (2.25, "ผปแอิืทมใฝ"),
    ),
}
# The Latin letters printed on the same keys, typed when the text switches to Latin.
SECOND_ALPHABET: dict[str, str] = {"russian": "qwerty", "greek": "qwerty", "arabic": "qwerty", "hindi": "qwerty",
                                   "thai": "qwerty"}
# Letters typed with a dead key first, on the key of the letter they decompose to (ά: ΄ then α).
DEAD_KEY_LETTERS: dict[str, str] = {"greek": "άέήίόύώϊϋΐΰ"}
# How a layout is named to the user.
LAYOUT_NAMES: dict[str, str] = {"qwerty": "QWERTY", "qwertz": "QWERTZ", "azerty": "AZERTY",
                                "russian": "Russian (ЙЦУКЕН)", "greek": "Greek", "arabic": "Arabic (101)",
                                "hindi": "Hindi (InScript)", "thai": "Thai (Kedmanee)"}


def _with_other_keys(layout: str, own: dict[str, tuple[str, ...]],
                     second: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``own`` plus ``second`` (the map of the layout's :data:`SECOND_ALPHABET`, or {}) and the
    dead-key letters on their base letter's key."""
    result = {**second, **own}
    for letter in DEAD_KEY_LETTERS.get(layout, ""):
        base = unicodedata.normalize("NFD", letter)[0]
        if base in own:
            result[letter] = own[base]
    return result


@functools.lru_cache(maxsize=None)
def neighbours(layout: str) -> dict[str, tuple[str, ...]]:
    """Full letter adjacency of ``layout`` (a key of :data:`LAYOUTS`): letter -> sorted neighbours.

    >>> neighbours("russian")["ы"], neighbours("russian")["d"], neighbours("greek")["ά"]
    (('в', 'у', 'ф', 'ц', 'ч', 'я'), ('c', 'e', 'f', 'r', 's', 'x'), ('ζ', 'ς', 'σ'))
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown keyboard layout {layout!r}; known: {sorted(LAYOUTS)}")
    second = neighbours(SECOND_ALPHABET[layout]) if layout in SECOND_ALPHABET else {}
    return _with_other_keys(layout, _adjacency(layout), second)


def _adjacency(layout: str) -> dict[str, tuple[str, ...]]:
    keys = [(row, offset + col, ch) for row, (offset, chars) in enumerate(LAYOUTS[layout])
            for col, ch in enumerate(chars)]
    result: dict[str, tuple[str, ...]] = {}
    for row, x, ch in keys:
        if not ch.isalpha():
            continue
        near = {c for r, xx, c in keys
                if c != ch and c.isalpha() and (
                    (r == row and abs(xx - x) == 1) or (abs(r - row) == 1 and abs(xx - x) < 1))}
        result[ch] = tuple(sorted(near))
    return result


# The keyboard a speaker of the language types on: German QWERTZ, French AZERTY, Russian ЙЦУКЕН,
# Greek, Arabic, Hindi (InScript) and Thai (Kedmanee) their own (with QWERTY's Latin letters), else
# QWERTY.
LAYOUT_FOR_LANG: dict[str, str] = {"de": "qwertz", "fr": "azerty", "ru": "russian", "el": "greek", "ar": "arabic",
                                   "hi": "hindi", "th": "thai"}


@functools.lru_cache(maxsize=None)
def rowwise(layout: str) -> dict[str, tuple[str, ...]]:
    """Row-wise letter neighbours of ``layout`` (left key first, then right): NoiseQA's notion of a
    keyboard neighbour, on another layout. For "qwerty" it is :data:`NOISEQA_ROWWISE_QWERTY`
    itself (the paper's exact map, whose neighbour order the seeded draws depend on).

    >>> rowwise("qwertz")["z"], rowwise("qwertz")["y"], rowwise("azerty")["a"]
    (('t', 'u'), ('x',), ('z',))
    >>> rowwise("qwertz")["ö"]
    ('l', 'ä')
    >>> rowwise("russian")["к"], rowwise("russian")["k"], rowwise("arabic")["ر"]   # ر beside the لا key
    (('у', 'е'), ('j', 'l'), ('ؤ',))
    """
    if layout == "qwerty":
        return NOISEQA_ROWWISE_QWERTY
    if layout not in LAYOUTS:
        raise ValueError(f"unknown keyboard layout {layout!r}; known: {sorted(LAYOUTS)}")
    result: dict[str, tuple[str, ...]] = {}
    for _offset, chars in LAYOUTS[layout][1:]:   # the letter rows
        for i, ch in enumerate(chars):
            if ch.isalpha():
                near = [c for c in (chars[i - 1] if i else "", chars[i + 1: i + 2]) if c and c.isalpha()]
                result[ch] = tuple(near)
    second = rowwise(SECOND_ALPHABET[layout]) if layout in SECOND_ALPHABET else {}
    return _with_other_keys(layout, result, second)


def layout_for(lang: str) -> str:
    """The keyboard layout typed on for ``lang``.

    >>> layout_for("de"), layout_for("fr"), layout_for("en"), layout_for("zh"), layout_for("ru")
    ('qwertz', 'azerty', 'qwerty', 'qwerty', 'russian')
    """
    return LAYOUT_FOR_LANG.get(lang, "qwerty")


def are_adjacent(a: str, b: str, layout: str = "qwerty") -> bool:
    """Whether letters ``a`` and ``b`` (any case) sit on neighbouring keys of ``layout``."""
    return b.lower() in neighbours(layout).get(a.lower(), ())


def replace_keeping_case(original: str, replacement: str) -> str:
    """``replacement`` in the case of ``original`` (upper stays upper unless it has no 1-char upper form, like ß)."""
    if original.isupper():
        upper = replacement.upper()
        return upper if len(upper) == 1 else replacement
    return replacement
