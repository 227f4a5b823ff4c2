"""ReplaceRQ (Satheesh et al. 2024, Table 6): replace a verb of the question by a contextual synonym.

The paper masks a verb and takes the masked language model's top prediction that differs from the
original word. Two sources of the replacement, chosen by ``source``:

* ``"mlm"`` - exactly the paper's method: a masked LM (transformers ``AutoModelForMaskedLM``)
  predicts the masked verb; the top whole-word prediction that differs (case-insensitively) is
  used. No masked LM ships on PyPI, so the model is a local directory (or a hub id already in the
  local cache) named by the environment variable ``QAX_MLM_MODEL`` or the ``mlm_model`` parameter,
  or one set in code with :func:`use_masked_lm`. Any language the model covers.
* ``"wordnet"`` - the offline substitute (our choice, English only): the verb's WordNet synonyms
  (:class:`core.perturb.lexicon.WordNet`, Debian ``wordnet-base``), inflected like the verb
  (lemminflect), each put into the question and scored by sentence-encoder similarity to the
  original question (all-MiniLM-L6-v2, :mod:`core.perturb.similarity`); the best-scoring one is
  used - the "top prediction that differs", with the encoder judging fit in context.
* ``"auto"`` (default) - ``mlm`` when a masked LM is configured, else ``wordnet``.

Verbs are tokens tagged VERB (not AUX) by :mod:`core.perturb.nlp`; in English, be/do/have are
skipped even when tagged VERB. The verb is chosen at random
(``rng.sample`` order); when the chosen verb has no replacement the next one is tried, and the
perturbation returns None when no verb of the question has one.
"""
from __future__ import annotations

import os
import random
from typing import Any

from core.perturb import lexicon, similarity
from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.registry import register
from core.perturb.targets import can_tag_verbs, candidate_words
from core.types import QAExample

MLM_ENV = "QAX_MLM_MODEL"
# WordNet source: synonyms from the verb's 3 most frequent senses, common words only (pyspellchecker
# frequency >= 500): a masked LM proposes frequent, context-fitting words; rare senses would not.
WORDNET_SENSES = 3
WORDNET_MIN_FREQUENCY = 500
LIGHT_VERBS = frozenset({"be", "do", "have"})
_masked_lm_override: lexicon.MaskedLMSource | None = None


def use_masked_lm(source: lexicon.MaskedLMSource | None) -> None:
    """Use ``source`` as the masked LM for ReplaceRQ (None: back to ``QAX_MLM_MODEL``)."""
    global _masked_lm_override
    _masked_lm_override = source


def configured_masked_lm(name_or_path: str = "") -> lexicon.MaskedLMSource | None:
    """The masked LM in use: the ``name_or_path`` given, else the one set in code, else QAX_MLM_MODEL."""
    if name_or_path:
        return lexicon.masked_lm(name_or_path)
    if _masked_lm_override is not None:
        return _masked_lm_override
    env = os.environ.get(MLM_ENV, "").strip()
    return lexicon.masked_lm(env) if env else None


def _mlm_is_configured() -> bool:
    return _masked_lm_override is not None or bool(os.environ.get(MLM_ENV, "").strip())


def wordnet_problem(lang: str) -> str | None:
    """Why the WordNet source cannot serve ``lang`` (None when it can)."""
    if lang != "en":
        return (f"WordNet synonyms cover English only; for {lang!r} ReplaceRQ needs a masked language "
                f"model (set {MLM_ENV} to a local model directory)")
    return lexicon.wordnet_error() or similarity.encoder_error()


@register
class ReplaceRQ(Perturbation):
    id = "ReplaceRQ"
    family = "word"
    field = "question"
    randomised = True
    description = "Replace a random verb of the question by a contextual synonym (masked LM, or WordNet + encoder)."
    parameters = (
        Param("source", "auto", "where the replacement comes from: a masked LM (the paper's), WordNet + "
              "a sentence encoder (English), or auto: the masked LM when one is configured",
              choices=("auto", "mlm", "wordnet")),
        Param("mlm_model", "", f"a local masked LM directory (default: {MLM_ENV}); set on the server"),
    )
    source = "German (Satheesh et al. 2024) Table 6, ReplaceRQ"

    @staticmethod
    def _source(params: dict[str, Any]) -> str:
        if params["source"] != "auto":
            return params["source"]
        return "mlm" if (params["mlm_model"] or _mlm_is_configured()) else "wordnet"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        if not can_tag_verbs(example.lang):
            return f"ReplaceRQ needs a POS tagger to find verbs; language {example.lang!r} has none"
        if self._source(params) == "wordnet":
            return wordnet_problem(example.lang)
        if not (params["mlm_model"] or _mlm_is_configured()):
            return f"ReplaceRQ source 'mlm' needs a masked LM: pass mlm_model or set {MLM_ENV}"
        return None

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        source = self._source(params)
        mlm = configured_masked_lm(params["mlm_model"]) if source == "mlm" else None
        question = example.question
        # be/do/have tagged VERB ("did" in "How many points did they score?") are auxiliaries in
        # all but name; replacing them breaks the question's syntax rather than its wording.
        verbs = [v for v in candidate_words(example, "question", "V", char_level=False)
                 if example.lang != "en" or lexicon.lemma_of(v.text, "VERB") not in LIGHT_VERBS]
        for verb in rng.sample(verbs, len(verbs)):
            if source == "mlm":
                replacement = mlm.replacement(question, verb.start, verb.end)
                detail = {"model": mlm.name}
            else:
                ranked = lexicon.wordnet_substitutes(question, verb.start, verb.end, "VERB",
                                                     max_senses=WORDNET_SENSES, min_frequency=WORDNET_MIN_FREQUENCY)
                replacement = ranked[0].replacement if ranked else None
                detail = {"similarity": ranked[0].similarity, "synonym_lemma": ranked[0].lemma,
                          "candidates": [s.replacement for s in ranked]} if ranked else {}
            if replacement is None:
                continue
            edit = Edit(verb.start, verb.end, replacement, "replace_verb")
            return [make_variant(self, example, self.field, [edit],
                                 {"verb": verb.text, "replacement": replacement, "source": source,
                                  "params": params, **detail})]
        return None
