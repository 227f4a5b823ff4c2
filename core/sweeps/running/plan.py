"""Planning a sweep: its inputs resolved (data, sample, specs), then its identity and size.

:func:`resolve_inputs` loads and samples the data set and resolves every spec
(:mod:`core.sweeps.running.resolve`); :func:`plan_sweep` adds the models' fingerprints and gives the
configuration hash, the name and the number of result rows. Both are the same on every backend, so
a sweep started locally resumes on Ray and back. Examples without a gold answer (or marked
impossible) cannot be scored and are left out of the sweep (counted in the configuration's
``dropped_no_gold``).
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.budgets import MAX_REPEATS, BudgetError, clean_name
from core.datasets import Dataset, has_gold, load_dataset, sample_examples
from core.perturb.spec import FORMAT, PerturbationSpec, SpecError, canonical_json, parse_specs
from core.qa.engine import answerable_pair
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.keys import example_hash, sha
from core.sweeps.running.resolve import ResolvedSpec, resolve_spec
from core.types import QAExample

__all__ = ["SweepInputs", "SweepPlan", "resolve_inputs", "plan_sweep"]


@dataclass
class SweepInputs:
    """A sweep's configuration resolved against its data and the perturbation catalogue (no model
    yet): what every backend plans from (:func:`resolve_inputs`, then :func:`plan_sweep`)."""

    config: SweepConfig
    models: list[str]
    full: Dataset
    examples: list[QAExample]
    specs: list[ResolvedSpec]


@dataclass
class SweepPlan:
    """A sweep's identity and size once the models' fingerprints are known (:func:`plan_sweep`)."""

    inputs: SweepInputs
    fingerprints: dict[str, str]
    hashes: list[str]
    cfg_json: str
    cfg_hash: str
    name: str
    total: int


def resolve_inputs(config: SweepConfig, *, dataset: Dataset | None = None, data_dir: str | Path | None = None,
                   catalogue: Callable[[str], Any] | None = None) -> SweepInputs:
    """Check the configuration, load the data set (unless given), sample it and resolve every
    spec (SweepError names what is wrong). Shared by the local and the Ray backend."""
    if config.repeats < 1:
        raise SweepError(f"repeats must be at least 1, got {config.repeats}")
    try:
        MAX_REPEATS.check(config.repeats, "the sweep", "asks for")
        if config.name is not None:   # stored and shown to every visitor: normalised and bounded
            config = dataclasses.replace(config, name=clean_name(config.name, "the sweep name") or None)
    except BudgetError as e:
        raise SweepError(str(e)) from None
    models = list(dict.fromkeys(config.models))
    if not models:
        raise SweepError("no models given")
    if catalogue is None:
        from core.perturb import registry

        catalogue = registry.get

    full = dataset if dataset is not None else load_dataset(
        config.dataset, data_dir, lang=config.lang, on_ambiguous=config.on_ambiguous)
    # No model can answer a blank question or an empty passage: scored, it would read as a wrong answer.
    scorable = [ex for ex in full.examples if has_gold(ex) and answerable_pair(ex.question, ex.context)]
    examples = sample_examples(scorable, config.sample, config.seed)
    if not examples:
        raise SweepError(f"dataset {config.dataset!r} has no example with a gold answer")

    specs_in: list[PerturbationSpec] = []
    for s in config.perturbations:
        try:
            specs_in.extend(parse_specs(s) if isinstance(s, str) else [s])
        except SweepError:
            raise
        except SpecError as e:   # callers of a sweep catch SweepError
            raise SweepError(str(e)) from None
    if not specs_in:
        raise SweepError("no perturbations given")
    specs: list[ResolvedSpec] = []
    for s in specs_in:
        resolved = resolve_spec(s, config.repeats, catalogue, full, data_dir, pair_by=config.pair_by,
                                on_ambiguous=config.on_ambiguous)
        if any((r.id, r.params_json) == (resolved.id, resolved.params_json) for r in specs):
            continue  # the same spec written twice (e.g. DCRQ and DCRQ:n_words=1)
        specs.append(resolved)
    return SweepInputs(config, models, full, examples, specs)


def plan_sweep(inputs: SweepInputs, fingerprints: Mapping[str, str]) -> SweepPlan:
    """The sweep's configuration hash, name and size, from its inputs and model fingerprints
    (:func:`engine_fingerprint`): the same on every backend, so a sweep resumes on either."""
    config, examples, specs, models = inputs.config, inputs.examples, inputs.specs, inputs.models
    fps = {m: fingerprints[m] for m in models}
    hashes = [example_hash(ex) for ex in examples]
    cfg = {
        "format": FORMAT, "dataset": config.dataset, "examples_hash": sha(*hashes),
        "n_examples": len(examples), "sample": config.sample, "seed": config.seed,
        "repeats": config.repeats, "dropped_no_gold": len(inputs.full.examples) - len(
            [ex for ex in inputs.full.examples if has_gold(ex)]),
        "specs": [[s.id, s.params_json, s.repeats, s.key_salt] for s in specs],
        "models": [[m, fps[m]] for m in models],
    }
    for key, default in (("pair_by", "auto"), ("on_ambiguous", "error"), ("lang", None)):
        if getattr(config, key) != default:
            cfg[key] = getattr(config, key)
    cfg_json = canonical_json(cfg)
    cfg_hash = hashlib.sha256(cfg_json.encode()).hexdigest()
    name = config.name or f"{config.dataset}-{cfg_hash[:8]}"
    total = len(examples) * len(models) * (1 + sum(s.repeats for s in specs))
    return SweepPlan(inputs, fps, hashes, cfg_json, cfg_hash, name, total)
