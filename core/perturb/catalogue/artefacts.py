"""NoiseQA's isolated interface artefacts (Ravichander et al. 2021), one perturbation each.

Each isolates one thing that speech, keyboard or translation interfaces do to a question:

  drop_punct_Q        delete every punctuation character (Unicode category P*), as ASR output has none;
                      a mark between two digits ("3,000", "2.5") is kept as part of the number
  drop_qmark_Q        delete only the final question mark (?, ？, ؟, Greek ;)
  drop_function_Q     delete every function word (closed-class POS: ADP AUX CCONJ DET PART PRON SCONJ)
  drop_content_Q      delete every content word (NOUN, PROPN, ADJ - the paper's "nouns, adjectives")
  entity_placeholder_Q  replace one named entity (PER/LOC/ORG, chosen at random) by a placeholder
  spell_numerals_Q    write numerals out with num2words ("1963" -> "nineteen sixty-three")

Keyboard noise restricted to function / content words is in ``keyboard_words.py``.
Word classes come from the POS tagger of ``core.perturb.nlp``; where only its heuristic fallback is
available the word-class perturbations report themselves incompatible (the fallback has no classes).
"""
from __future__ import annotations

import random
import re
import unicodedata
from typing import Any

from num2words import CONVERTER_CLASSES, num2words

from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.nlp import analyse
from core.perturb.registry import register
from core.perturb.support import deletion_edits, tagger_problem, tokens_of_class
from core.types import QAExample

NOISEQA = "NoiseQA (Ravichander et al. 2021) §5, isolated artefacts"


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


@register
class DropPunctuation(Perturbation):
    id = "drop_punct_Q"
    family = "artefact"
    field = "question"
    randomised = False
    description = "Delete all punctuation from the question (as speech recognisers output none)."
    source = NOISEQA

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        text = example.question
        edits = []
        for m in re.finditer(r"\S+", text):
            word = m.group()
            if all(_is_punct(ch) for ch in word):
                # A standalone mark ("Paris ?"): delete it with the space before it (or after it at the start).
                start, end = m.start(), m.end()
                if start > 0 and text[start - 1].isspace():
                    start -= 1
                elif end < len(text) and text[end].isspace():
                    end += 1
                edits.append(Edit(start, end, "", "drop_punct"))
                continue
            # A mark between two digits is a decimal / thousands separator, part of the number.
            edits.extend(Edit(m.start() + i, m.start() + i + 1, "", "drop_punct")
                         for i, ch in enumerate(word) if _is_punct(ch)
                         and not (0 < i < len(word) - 1 and word[i - 1].isdigit() and word[i + 1].isdigit()))
        if not edits:
            return None
        edits = _merge_overlaps(edits)
        return [make_variant(self, example, self.field, edits, {"n_removed": len(edits)})]


def _merge_overlaps(edits: list[Edit]) -> list[Edit]:
    """Standalone marks separated by one space ("? !") would claim that space twice: keep it once."""
    out: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if out and edit.start < out[-1].end:
            out[-1] = Edit(out[-1].start, max(out[-1].end, edit.end), "", out[-1].kind)
        else:
            out.append(edit)
    return out


# Question marks by script; Greek uses ";" (U+003B) or the Greek question mark U+037E.
_QUESTION_MARKS = {"?", "？", "؟", "\u037e"}


@register
class DropQuestionMark(Perturbation):
    id = "drop_qmark_Q"
    family = "artefact"
    field = "question"
    randomised = False
    description = "Delete only the final question mark of the question."
    source = NOISEQA

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        text = example.question
        end = len(text.rstrip())
        marks = _QUESTION_MARKS | ({";"} if example.lang == "el" else set())
        if end == 0 or text[end - 1] not in marks:
            return None
        start = end - 1
        while start > 0 and text[start - 1] in " \t":  # "Paris ?" -> "Paris"
            start -= 1
        return [make_variant(self, example, self.field, [Edit(start, end, "", "drop_qmark")],
                             {"mark": text[end - 1]})]


class _DropWordClass(Perturbation):
    """Delete every word of one class (function or content words); the concrete classes are below."""

    family = "artefact"
    field = "question"
    randomised = False
    source = NOISEQA
    word_class: str

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return tagger_problem(example.lang)

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        tokens = tokens_of_class(example.question, example.lang, self.word_class)
        if not tokens:
            return None
        tokens = with_attached_clitics(example.question, example.lang, tokens)
        edits = deletion_edits(example.question, tokens, f"drop_{self.word_class}_word")
        return [make_variant(self, example, self.field, edits,
                             {"words": [t.text for t in tokens], "word_class": self.word_class})]


@register
class DropFunctionWords(_DropWordClass):
    id = "drop_function_Q"
    word_class = "function"
    description = "Delete all function words (determiners, prepositions, pronouns, auxiliaries, ...)."


@register
class DropContentWords(_DropWordClass):
    id = "drop_content_Q"
    word_class = "content"
    description = "Delete all content words (nouns, proper nouns, adjectives)."


_CLITICS = {"'s", "’s", "'", "’"}


def with_attached_clitics(text: str, lang: str, tokens: list) -> list:
    """``tokens`` plus any possessive clitic glued to one of them ("Obama" + "'s"): it goes too."""
    chosen = {(t.start, t.end) for t in tokens}
    out = list(tokens)
    all_tokens = analyse(text, lang).tokens
    for prev, token in zip(all_tokens, all_tokens[1:]):
        if token.text in _CLITICS and token.start == prev.end and (prev.start, prev.end) in chosen \
                and (token.start, token.end) not in chosen:
            out.append(token)
    return sorted(out, key=lambda t: t.start)


# Placeholders (our choice): noun phrases, so that "born in Paris" -> "born in some place" still parses.
PLACEHOLDERS = {
    "generic": {
        "en": {"PER": "someone", "LOC": "some place", "ORG": "some organisation"},
        "zh": {"PER": "某人", "LOC": "某地", "ORG": "某机构"},
    },
    "tag": {"PER": "[PER]", "LOC": "[LOC]", "ORG": "[ORG]"},
}
NER_LANGUAGES = ("en", "zh")   # the languages core.perturb.nlp has NER for


@register
class EntityPlaceholder(Perturbation):
    id = "entity_placeholder_Q"
    family = "artefact"
    field = "question"
    languages = NER_LANGUAGES
    randomised = True
    description = ("Replace one named entity (person, place, organisation) by a placeholder: "
                   "'someone' / 'some place' / 'some organisation', or '[PER]' / '[LOC]' / '[ORG]'.")
    parameters = (Param("style", "generic", "generic: 'someone', 'some place'; tag: '[PER]', '[LOC]'",
                        choices=("generic", "tag")),)
    source = NOISEQA

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return tagger_problem(example.lang)

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        style = params["style"]
        spans = entity_spans(example.question, example.lang)
        if not spans:
            return None
        start, end, label = spans[rng.randrange(len(spans))]
        table = PLACEHOLDERS["tag"] if style == "tag" else PLACEHOLDERS["generic"][example.lang]
        edit = Edit(start, end, table[label], "entity_placeholder")
        return [make_variant(self, example, self.field, [edit],
                             {"entity": example.question[start:end], "label": label, "style": style})]


def entity_spans(text: str, lang: str) -> list[tuple[int, int, str]]:
    """(start, end, label) of the PER/LOC/ORG entities of ``text``: runs of tokens with one label.

    A trailing possessive ("Obama's") is left out of the span, so "someone's wife" stays grammatical.
    """
    spans: list[list] = []
    previous = None
    for token in analyse(text, lang).tokens:
        if token.ent in ("PER", "LOC", "ORG") and token.text.lower() not in ("'s", "’s", "'"):
            if previous is not None and previous.ent == token.ent and spans and spans[-1][1] == previous.end:
                spans[-1][1] = token.end
            else:
                spans.append([token.start, token.end, token.ent])
        previous = token
    return [tuple(s) for s in spans]


# Languages writing decimals with a comma (and thousands with a dot or space).
_DECIMAL_COMMA = {"de", "es", "ro", "ru", "tr", "el", "vi", "fr", "it", "pt", "nl", "pl", "cs", "da",
                  "fi", "id", "no", "sv", "uk"}
_NUMBER_POINT = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(st|nd|rd|th)?(?![\w])")
_NUMBER_COMMA = re.compile(r"(?<![\w.,])(\d{1,3}(?:\.\d{3})+|\d+)(,\d+)?(?![\w])")


def spell_number(match: re.Match, lang: str) -> str:
    """The words for one matched numeral in ``lang``.

    Rules (our reading of "spell numerals out"): a bare 4-digit integer from 1000 to 2099 is read
    as a year where num2words has year reading for the language ("1963" -> "nineteen sixty-three");
    an English ordinal suffix gives an ordinal ("19th" -> "nineteenth"); a decimal part gives a
    decimal reading; everything else is a cardinal. Thousands separators are removed first.
    """
    integer, fraction = match.group(1), match.group(2)
    suffix = match.group(3) if match.re is _NUMBER_POINT else None
    thousands = "," if match.re is _NUMBER_POINT else "."
    value = int(integer.replace(thousands, ""))
    if fraction:
        number = float(f"{value}.{fraction[1:]}")
        return num2words(number, lang=lang)
    if suffix:
        return num2words(value, lang=lang, to="ordinal")
    if thousands not in integer and len(integer) == 4 and 1000 <= value <= 2099:
        try:
            return num2words(value, lang=lang, to="year")
        except (NotImplementedError, AttributeError):
            pass  # no year reading in this language: a cardinal is still a correct reading
    return num2words(value, lang=lang)


@register
class SpellNumerals(Perturbation):
    id = "spell_numerals_Q"
    family = "artefact"
    field = "question"
    languages = tuple(sorted(code for code in CONVERTER_CLASSES if "_" not in code))
    randomised = False
    description = "Write numerals out as words (num2words): '1963' -> 'nineteen sixty-three'."
    source = NOISEQA

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        pattern = _NUMBER_COMMA if example.lang in _DECIMAL_COMMA else _NUMBER_POINT
        edits = [Edit(m.start(), m.end(), spell_number(m, example.lang), "spell_numeral")
                 for m in pattern.finditer(example.question)]
        if not edits:
            return None
        return [make_variant(self, example, self.field, edits,
                             {"numerals": [example.question[e.start:e.end] for e in edits]})]
