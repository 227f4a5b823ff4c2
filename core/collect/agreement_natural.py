"""Synthetic against natural noise without a recording: the agreement of :mod:`core.collect.flip_agreement`
on a natural set (:mod:`core.datasets.natural`) instead of a speech trial.

On a seeded sample of the set's questions, the conditions are the set's natural versions
(``natural:asr_human`` and ``natural:asr_tts`` for HeySQuAD, ``natural:disfluent`` for Disfl-QA)
beside the synthetic channels: TTS -> ASR per voice and engine (``tts:<voice>><engine>``), keyboard
noise (``keyboard:p=<p>``) and the disfluency perturbation (``disfluency:n=<n>``), each drawn with
the seed as a sweep's repeat 0. :func:`core.collect.flip_agreement.compare` then gives per question the
flips under each, Cohen's kappa of every pair with its bootstrap interval and the 2x2 tables.
``xquad_ids`` in the settings names the questions on XQuAD's paragraphs, so flip rates can be
given for them apart (:func:`flip_rates_by_subset`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.collect.flip_agreement import (
    DEFAULT_VOICE,
    KEYBOARD_P,
    Agreement,
    AgreementError,
    Progress,
    keyboard_condition,
    tts_condition,
)
from core.types import QAExample

__all__ = ["NATURAL_SETS", "natural_set_conditions", "disfluency_condition", "flip_rates_by_subset",
           "everything"]

# natural set -> its natural conditions (core.datasets.natural.CONDITIONS)
NATURAL_SETS = {"heysquad": ("asr_human", "asr_tts"), "disfl-qa": ("disfluent",)}


def disfluency_condition(examples: Sequence[QAExample], n: int, seed: int) -> list[str]:
    """Each question with ``n`` disfluencies (``disfluency_Q``, kind any), drawn under ``seed`` (repeat 0)."""
    from core.perturb.compose import build
    from core.perturb.spec import PerturbationSpec, rng_for

    spec = PerturbationSpec.make("disfluency_Q", {"n": n})
    pert, params = build(spec)
    out = []
    for ex in examples:
        variants = pert.apply(ex, rng_for(seed, ex, spec, 0), **params) if pert.why_not(ex, params) is None else None
        out.append(variants[0].text if variants else ex.question)
    return out


def natural_set_conditions(name: str, *, sample: int | None = 200, tts_engines: Sequence[str] = (),
                           voice: str = DEFAULT_VOICE, keyboard_p: float | None = KEYBOARD_P,
                           disfluency_n: int | None = 1, seed: int = 0, data_dir=None,
                           progress: Progress | None = None) -> tuple[list[QAExample], dict[str, list[str]], dict]:
    """(examples, condition name -> questions, settings) for a natural set: ``heysquad`` or
    ``disfl-qa`` (its dev and test splits), on a seeded sample of ``sample`` questions (None: all)."""
    from core.collect.noise_profiles import natural_pairs
    from core.datasets import sample_examples
    from core.datasets.natural import xquad_ids
    from core.speech import asr

    if name not in NATURAL_SETS:
        raise AgreementError(f"no natural set {name!r}; known: {', '.join(NATURAL_SETS)}")
    for engine in tts_engines:
        if engine not in asr.ENGINE_NAMES:
            raise AgreementError(f"unknown ASR engine {engine!r}; known: {', '.join(asr.ENGINE_NAMES)}")
    examples: list[QAExample] = []
    natural: dict[str, dict[str, str]] = {}
    if progress:   # the first read of a natural set takes ~12 s here; later ones are cached
        progress(0, 1, f"Reading the natural set {name} and its original questions…")
    for condition in NATURAL_SETS[name]:
        originals, noisy = natural_pairs(condition, data_dir)
        natural[condition] = {ex.id: q for ex, q in zip(originals, noisy)}
        examples = examples or originals
    examples = sample_examples([ex for ex in examples if all(ex.id in v for v in natural.values())], sample, seed)
    if not examples:
        raise AgreementError(f"natural set {name}: no question to compare")
    conditions = {f"natural:{c}": [natural[c][ex.id] for ex in examples] for c in NATURAL_SETS[name]}
    for engine in tts_engines:
        conditions[f"tts:{voice}>{engine}"] = tts_condition(examples, voice, engine, progress)
    if keyboard_p is not None:
        conditions[f"keyboard:p={keyboard_p:g}"] = keyboard_condition(examples, keyboard_p, seed)
    if disfluency_n:
        conditions[f"disfluency:n={disfluency_n}"] = disfluency_condition(examples, disfluency_n, seed)
    settings: dict[str, Any] = {"natural set": name, "sample": sample, "voice": voice, "keyboard_p": keyboard_p,
                                "disfluency_n": disfluency_n, "xquad_ids": sorted(xquad_ids(examples, data_dir))}
    return examples, conditions, settings


def flip_rates_by_subset(result: Agreement) -> list[dict[str, Any]]:
    """Per model, condition and paragraph subset (XQuAD's 240 paragraphs, the others): questions,
    flips and the flip rate (percent)."""
    from core.datasets.natural import SUBSETS, subset_name

    xquad = frozenset(result.settings.get("xquad_ids") or ())
    out = []
    for model in result.models:
        rows = [r for r in result.rows if r["model"] == model]
        for subset in SUBSETS:
            part = [r for r in rows if subset_name(r["id"], xquad) == subset]
            for name in result.conditions:
                flips = sum(bool(r[f"{name} flip"]) for r in part)
                out.append({"model": model, "questions on": subset, "condition": name, "questions": len(part),
                            "flips": flips, "flip %": round(100 * flips / len(part), 1) if part else None})
    return out


def everything(result: Agreement) -> dict[str, Any]:
    """The comparison as JSON (:meth:`Agreement.as_dict`), with, on a natural set, the flip rates by
    paragraph (``flip_rates_by_paragraph``: XQuAD's and the rest, :func:`flip_rates_by_subset`) that
    the command line prints and the page shows: what ``--json`` and the page's JSON hold."""
    out = result.as_dict()
    if "natural set" in result.settings:
        out["flip_rates_by_paragraph"] = flip_rates_by_subset(result)
    return out
