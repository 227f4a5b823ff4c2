"""Round-trip machine translation of the question (interface noise from an MT system).

* ``translate_question`` (Satheesh et al. 2024, sentence level): the question is translated into a
  pivot language and back, de -> en -> de in the paper. Generalised: language X -> pivot -> X,
  pivot "auto" = English for a non-English question, else the first of German / Spanish / Catalan
  that the backend covers.
* ``backtranslate_Q`` (NoiseQA, synthetic MT noise): English -> pivot -> English; the paper's pivot
  is German. pivot "auto" = German when the backend has en<->de, else Spanish, else Catalan, and
  ``meta["pivot"]`` says which was used.

Translation goes through :mod:`core.translate` (offline: the Apertium engine from Debian). It
covers English <-> Spanish / Catalan here, NOT German or Chinese: where no backend covers both
directions the perturbation cannot run and ``why_not`` says so. Translations are
cached per (backend, src, tgt, text); :meth:`_RoundTrip.prepare` translates a whole set in two
batched calls (one process per direction), which the challenge-set CLI uses.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from core.perturb.base import Param, Perturbation, Variant, make_variant_from_text
from core.perturb.registry import register
from core.translate import translators
from core.types import QAExample

_translator_override: translators.Translator | None = None
_cache: dict[tuple[str, str, str, str], str] = {}


def use_translator(translator: translators.Translator | None) -> None:
    """Use ``translator`` for round-trip perturbations (None: back to the default offline backend)."""
    global _translator_override
    _translator_override = translator
    _cache.clear()


def current_translator() -> translators.Translator | None:
    return _translator_override if _translator_override is not None else translators.default_translator()


def _translate_cached(translator: translators.Translator, texts: list[str], src: str, tgt: str) -> list[str]:
    missing = list(dict.fromkeys(t for t in texts if (translator.name, src, tgt, t) not in _cache))
    if missing:
        for text, out in zip(missing, translator.translate(missing, src, tgt)):
            _cache[(translator.name, src, tgt, text)] = out
    return [_cache[(translator.name, src, tgt, t)] for t in texts]


class _RoundTrip(Perturbation):
    """X -> pivot -> X for the question; subclasses set the pivot preference."""

    field = "question"
    randomised = False
    parameters = (Param("pivot", "auto", "the language translated into and back from (a language code), "
                        "or auto"),)
    pivot_preference: tuple[str, ...]

    def pivot_for(self, lang: str, requested: str, translator: translators.Translator | None) -> str:
        if requested != "auto":
            return requested
        preference = ("en",) if lang != "en" else self.pivot_preference
        if translator is not None:
            for pivot in preference:
                if translator.supports(lang, pivot) and translator.supports(pivot, lang):
                    return pivot
        return preference[0]

    def _problem(self, lang: str, requested: str) -> str | None:
        translator = current_translator()
        pivot = self.pivot_for(lang, requested, translator)
        if pivot == lang:
            return f"{self.id}: the pivot language must differ from the question's language ({lang})"
        reason = translators.no_backend_reason([(lang, pivot), (pivot, lang)], translator)
        return f"{self.id} cannot run on {lang!r} questions: {reason}" if reason else None

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        return self._problem(example.lang, params["pivot"])

    def prepare(self, examples: Iterable[QAExample], **params: Any) -> None:
        """Translate all questions in batches (per language) so that :meth:`apply` hits the cache."""
        params = self.resolve_params(params)
        by_lang: dict[str, list[str]] = {}
        for example in examples:
            if self._problem(example.lang, params["pivot"]) is None:
                by_lang.setdefault(example.lang, []).append(example.question)
        translator = current_translator()
        for lang, questions in by_lang.items():
            pivot = self.pivot_for(lang, params["pivot"], translator)
            forward = _translate_cached(translator, questions, lang, pivot)
            _translate_cached(translator, forward, pivot, lang)

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        translator = current_translator()
        pivot = self.pivot_for(example.lang, params["pivot"], translator)
        [forward] = _translate_cached(translator, [example.question], example.lang, pivot)
        [back] = _translate_cached(translator, [forward], pivot, example.lang)
        meta = {"pivot": pivot, "pivot_text": forward, "backend": translator.name, "params": params}
        return [make_variant_from_text(self, example, self.field, back, meta, kind="translate")]


@register
class TranslateQuestion(_RoundTrip):
    id = "translate_question"
    family = "sentence"
    pivot_preference = ("de", "es", "ca")
    description = "Translate the question into a pivot language and back (de -> en -> de in the paper)."
    source = "German (Satheesh et al. 2024) Table 6, translate_question"


@register
class BacktranslateQ(_RoundTrip):
    id = "backtranslate_Q"
    family = "mt"
    languages = ("en",)
    pivot_preference = ("de", "es", "ca")
    description = "NoiseQA synthetic MT noise: English question -> pivot (German in the paper) -> English."
    source = "NoiseQA (Ravichander et al. 2021), synthetic translation noise"
