"""NoiseQA's question repair (mitigation (a), SEEDS.md §1) as a step of the spec language: ``repair_Q``.

Not a corruption but the inverse: it rewrites a (noisy) question with :func:`core.perturb.repair.
repair_question`, so a sweep can measure the mitigation the way NoiseQA's Table 4 does, chained
after the noise that made the question noisy::

    python -m core.sweeps --dataset xquad/xquad.en --models minilm-squad \\
        --perturbations "keyboard_Q,keyboard_Q+repair_Q:mode=content|entities|all"

The chain's first step is computed exactly as on its own (same seed), so ``keyboard_Q`` and
``keyboard_Q+repair_Q`` score the same noisy questions before and after repair (paired).

Parameters: ``mode`` (content / entities / all: which question words absent from the context may
be replaced by their closest context word, CER <= ``max_cer``; ``none`` skips this), ``spellcheck``
(pyspellchecker, languages in :data:`core.perturb.repair.SPELLCHECK_LANGUAGES`) and
``question_mark`` (add a missing final question mark). A question nothing applies to comes back
unchanged (``changed`` False), never as "does not apply": a repaired set must keep every question,
or the comparison with the unrepaired one would be on fewer examples.
"""
from __future__ import annotations

import random
from typing import Any

from core.perturb.base import Edit, Param, Perturbation, Variant, make_variant
from core.perturb.nlp import can_segment
from core.perturb.registry import register
from core.perturb.repair import MAX_CER, MODES, SPELLCHECK_LANGUAGES, repair_question
from core.perturb.support import tagger_problem
from core.types import QAExample


@register
class RepairQuestion(Perturbation):
    id = "repair_Q"
    family = "repair"
    field = "question"
    randomised = False
    description = ("NoiseQA's question repair: question words absent from the context become their closest "
                   "context word (CER <= 0.5), optionally a spellchecker and a final question mark.")
    parameters = (
        Param("mode", "content", "which question words absent from the context may become their closest "
              "context word (none: skip this step)", choices=MODES + ("none",)),
        Param("spellcheck", False, "correct the remaining words with a spellchecker"),
        Param("question_mark", False, "add a missing final question mark"),
        Param("max_cer", MAX_CER, "the largest character error rate between a word and its replacement",
              min=0.0, max=1.0),
    )
    source = "NoiseQA (Ravichander et al. 2021) §6, question repair"

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        lang = example.lang
        if not can_segment(lang):
            return f"repair_Q needs words, and {lang!r} is written without spaces between them"
        if params["mode"] in ("content", "entities"):
            problem = tagger_problem(lang)
            if problem:
                return f"repair_Q mode={params['mode']} needs a POS/entity tagger: {problem}"
        if params["spellcheck"] and lang not in SPELLCHECK_LANGUAGES:
            return (f"repair_Q spellcheck has no dictionary for {lang!r} "
                    f"(available: {', '.join(SPELLCHECK_LANGUAGES)})")
        return None

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        repair = repair_question(example.question, example.context, example.lang, params["mode"],
                                 params["spellcheck"], params["question_mark"], params["max_cer"])
        edits = [Edit(c.start, c.end, c.new, "repair") for c in repair.changes]
        meta = {"changes": [{"old": c.old, "new": c.new, "reason": c.reason, "start": c.start, "end": c.end}
                            for c in repair.changes]}
        return [make_variant(self, example, self.field, edits, meta)]
