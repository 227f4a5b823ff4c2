"""Natural interface noise as a step of the spec language: ``natural_Q`` (spec alias ``natural:<source>``).

Not a generator: the question is replaced by the natural version of the same question id, as real
people produced it (:mod:`core.datasets.natural`): ``asr_human`` (HeySQuAD, spoken by a person
then transcribed), ``asr_tts`` (HeySQuAD, a TTS voice then ASR) or ``disfluent`` (Disfl-QA dev and
test). Deterministic: the seed plays no part. So one sweep holds natural and synthetic noise side
by side, on the same questions::

    python -m core.sweeps --dataset natural:heysquad --models minilm-squad-v2 \\
        --perturbations "natural:asr_human,natural:asr_tts,asr_Q,keyboard_Q,disfluency_Q"

A question is left out ('n/a', with the reason) when its id is not in the natural set, or when the
natural set's original question for that id is not this question (another file reusing SQuAD ids
for other questions): the natural version would then be of a different question.
"""
from __future__ import annotations

import random
import re
from typing import Any

from core.datasets import DatasetError
from core.datasets.natural import CONDITIONS, natural_questions
from core.perturb.base import Param, Perturbation, Variant, make_variant_from_text
from core.perturb.registry import register
from core.types import QAExample

SET_NAMES = {"heysquad": "HeySQuAD", "disfl-qa": "Disfl-QA"}


def _same_question(a: str, b: str) -> bool:
    """Equal up to case, punctuation and spacing (HeySQuAD's and SQuAD's copies differ in spacing)."""
    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    return norm(a) == norm(b)


@register
class NaturalQuestion(Perturbation):
    id = "natural_Q"
    family = "natural"
    field = "question"
    languages = ("en",)
    randomised = False
    depends_on_question = True
    description = ("Real interface noise: the question as a person spoke it (HeySQuAD, ASR-transcribed), as a TTS "
                   "voice spoke it, or as Disfl-QA rewrote it disfluently; only for the ids those sets hold.")
    parameters = (
        Param("source", "asr_human", "which natural version: " + "; ".join(
            f"{c.name}: {c.description}" for c in CONDITIONS.values()), choices=tuple(CONDITIONS)),
    )
    source = "HeySQuAD (Wu et al. 2023); Disfl-QA (Gupta et al. 2021)"

    def _lookup(self, params: dict[str, Any]) -> dict[str, tuple[str, str]] | str:
        try:
            return natural_questions(params["source"])
        except (DatasetError, OSError) as e:
            return f"natural_Q source={params['source']} cannot be read: {e}"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        found = self._lookup(params)
        if isinstance(found, str):
            return found
        set_name = SET_NAMES[CONDITIONS[params["source"]].natural_set]
        if example.id not in found:
            return f"{set_name} has no natural version of question {example.id!r}"
        if not _same_question(found[example.id][0], example.question):
            return f"{set_name}'s question {example.id!r} is another question ({found[example.id][0][:60]!r})"
        return None

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        natural = self._lookup(params)[example.id][1]
        meta = {"source": params["source"], "set": CONDITIONS[params["source"]].natural_set}
        return [make_variant_from_text(self, example, self.field, natural, meta, kind="natural")]
