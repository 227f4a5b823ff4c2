"""Turning specs into runnable perturbations: the registry, challenge files, chains.

:func:`resolve_spec` turns a :class:`core.perturb.spec.PerturbationSpec` into a
:class:`ResolvedSpec`: its resolved parameters, label, family, field, whether it is randomised,
how often it runs, and ``make(example, rng) -> Outcome``, the variant of one unit.

Our choices where the papers leave it open:
  * a perturbation that does not apply to an example (returns None, unsupported language, or
    raises PerturbationError/ValueError, e.g. word perturbations on Thai) gives an Outcome with
    status 'n/a' / 'error' and no score; cells compare clean and perturbed scores on the same
    examples, those where the perturbation applied (see core.sweeps.analysis.sweep_cells);
  * a perturbation returning several variants contributes its first (every catalogue entry
    returns one).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.compat import RESEEDED_SALT
from core.datasets import Dataset, DatasetError, legacy_rule, load_squad, pair_challenge, resolve_data_file
from core.perturb.base import PerturbationError, error_rates
from core.perturb.spec import (
    FILE_PREFIX,
    PerturbationSpec,
    SpecError,
    canonical_json,
    chain_step_specs,
    chain_steps,
    key_rng,
    spec_label,
    step_rng,
    variant_key,
)
from core.sweeps.config import SweepError
from core.types import QAExample

__all__ = ["Outcome", "ResolvedSpec", "registry_spec", "file_spec", "chain_spec", "pair_file", "resolve_spec"]



@dataclass
class Outcome:
    """A computed variant, ready to store."""

    status: str                       # ok | n/a | error
    note: str | None = None
    example: QAExample | None = None  # the perturbed example (status ok)
    field: str | None = None
    changed: bool | None = None
    cer: float | None = None
    wer: float | None = None
    meta: dict = dataclasses.field(default_factory=dict)


@dataclass
class ResolvedSpec:
    """A spec resolved against the registry or the data directory."""

    id: str
    params: dict[str, Any]
    params_json: str
    label: str
    family: str
    field: str
    randomised: bool
    repeats: int
    source: str
    make: Callable[[QAExample, random.Random], Outcome]
    key_salt: str                     # file specs: the file's sha256; registry specs: ""
    pairing: Any = None               # file specs (and chains starting with one): the core.datasets.Pairing
    first: "ResolvedSpec | None" = None      # chains: the first step, whose rng the chain uses

    @property
    def rng_reseeded(self) -> bool:
        """A randomised chain whose first step is deterministic: its generator is keyed by seed
        and repeat (:func:`core.perturb.spec.rng_for`), unlike the code before
        issue 25, where every repeat drew the same numbers. Its variants get their own cache keys,
        so none stored by that code is reused; a stored sweep's configuration is unchanged."""
        return self.first is not None and self.randomised and not self.first.randomised

    def variant_key(self, ex_hash: str, seed: int, repeat: int) -> str:
        salt = self.key_salt + (RESEEDED_SALT if self.rng_reseeded else "")
        return variant_key(self.id, self.params_json, seed, repeat, ex_hash, randomised=self.randomised, salt=salt)

    def rng(self, ex_hash: str, seed: int, repeat: int) -> random.Random:
        """:func:`core.perturb.spec.rng_for`, from the resolved parts."""
        if self.first is not None:
            # A chain's first step draws exactly what it draws on its own: "keyboard_Q" and
            # "keyboard_Q+repair_Q" score the same noisy questions, before and after repair.
            first = self.first
            return key_rng(variant_key(first.id, first.params_json, seed, repeat, ex_hash,
                                       randomised=self.randomised, salt=first.key_salt))
        return key_rng(self.variant_key(ex_hash, seed, repeat))


def registry_spec(spec: PerturbationSpec, repeats: int, catalogue) -> ResolvedSpec:
    try:
        p = catalogue(spec.id)
    except KeyError as e:
        raise SweepError(str(e.args[0]) if e.args else str(e)) from None
    try:
        params = p.resolve_params(spec.params_dict)
    except PerturbationError as e:
        raise SweepError(str(e)) from None

    def make(example: QAExample, rng: random.Random) -> Outcome:
        reason = p.why_not(example, params)   # the language, a missing backend, voice or word list
        if reason is not None:
            return Outcome("n/a", reason)
        try:
            variants = p.apply(example, rng, **params)
        except (PerturbationError, ValueError) as e:
            return Outcome("error", f"{type(e).__name__}: {e}")
        if not variants:
            return Outcome("n/a", p.nothing_to_change(example, params) or f"{p.id} does not apply to this example")
        v = variants[0]
        meta = {k: val for k, val in v.meta.items() if _jsonable(val)}
        return Outcome("ok", None, v.example, v.field, bool(v.meta.get("changed", v.text != getattr(example, v.field))),
                        v.cer, v.wer, meta)

    randomised = bool(p.randomised)
    return ResolvedSpec(p.id, params, canonical_json(params), spec_label(p.id, params), p.family, p.field,
                 randomised, repeats if randomised else 1, p.source or "", make, "")


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


_FILE_FAMILIES = (("keyboard", "keyboard"), ("asr", "asr"), ("translation", "mt"),
                  ("paraphras", "paraphrase"))


def file_spec(spec: PerturbationSpec, original: Dataset, data_dir: str | Path | None,
               pair_by: str = "auto", on_ambiguous: str = "error") -> ResolvedSpec:
    """A natural (or pre-generated) challenge file as a deterministic perturbation, paired with
    ``original`` by :func:`core.datasets.pair_challenge` (which refuses pairs that are not the
    same items). The resolved spec's ``pairing`` says how; its ``source`` (stored with the sweep)
    gives the rule and the counts."""
    if spec.params:
        raise SweepError(f"{spec.id}: file specs take no parameters")
    rel = spec.id[len(FILE_PREFIX):]
    try:
        path = resolve_data_file(rel, data_dir, what=spec.id)
    except DatasetError as e:
        raise SweepError(str(e)) from None
    raw = path.read_bytes()
    try:
        challenge = load_squad(path, lang=original.lang, name=rel, on_ambiguous=on_ambiguous)
        pairing = pair_challenge(original, challenge, pair_by)
    except DatasetError as e:
        raise SweepError(f"{spec.id}: {e}") from None
    partner = {o.id: c for o, c in pairing.pairs}
    lowered = rel.lower()
    family = next((fam for word, fam in _FILE_FAMILIES if word in lowered), "natural")
    field_name = "both" if pairing.context_mismatches else "question"

    def make(example: QAExample, rng: random.Random) -> Outcome:
        c = partner.get(example.id)
        if c is None:
            return Outcome("n/a", f"question id {example.id!r} is not paired in {rel}")
        answers = c.answers or example.answers
        new = dataclasses.replace(example, question=c.question, context=c.context, answers=answers)
        q_changed, c_changed = c.question != example.question, c.context != example.context
        what = "both" if q_changed and c_changed else ("context" if c_changed else "question")
        reference, hypothesis = (example.context, c.context) if what == "context" else (example.question, c.question)
        cer, wer = error_rates(reference, hypothesis)
        return Outcome("ok", None, new, what, q_changed or c_changed, cer, wer,
                        {"id": spec.id, "pairing": pairing.rule})

    # The cache key of a variant holds the file's hash; where pairing now joins other items than
    # it did before pairs were checked (or drops some), the rule joins the key, so no stale
    # variant is reused. Unchanged pairings keep their keys: stored sweeps stay valid.
    salt = hashlib.sha256(raw).hexdigest()
    if pairing.rule != legacy_rule(original, challenge) or pairing.mismatched:
        salt += f":pair={pairing.rule}:{len(pairing.mismatched)}"
    return ResolvedSpec(spec.id, {}, "{}", FILE_PREFIX + Path(rel).name, family, field_name, False, 1,
                 f"challenge file {path.name} ({pairing.summary()})", make, salt, pairing)


def pair_file(spec_id: str, original: Dataset, data_dir: str | Path | None = None, pair_by: str = "auto",
              on_ambiguous: str = "error"):
    """How the challenge file of a ``file:`` spec pairs with ``original`` (a
    :class:`core.datasets.Pairing`: rule and counts), checked as a sweep would before it starts;
    SweepError (naming the first mismatches) when it does not pair."""
    return file_spec(PerturbationSpec(spec_id), original, data_dir, pair_by, on_ambiguous).pairing


def chain_spec(spec: PerturbationSpec, repeats: int, catalogue, original: Dataset | None,
                data_dir: str | Path | None, pair_by: str = "auto", on_ambiguous: str = "error") -> ResolvedSpec:
    """``A+B+...``: each step applied to what the step before it made.

    A ``file:`` step may only come first (it replaces the question, undoing any step before it).
    Flat parameters go to the step that accepts them (``STEP.name`` names the step outright); the
    stored parameters are always qualified (``{"repair_Q.mode": "all", "keyboard_Q.p": 0.25}``) so
    each step's settings can be read back without the registry. The first step draws its random
    numbers as it does on its own (:meth:`ResolvedSpec.rng`); later steps draw from a generator seeded
    by it (:func:`core.perturb.spec.step_rng`). The chain's CER/WER compare the final text with the original.
    """
    ids = chain_steps(spec.id)
    try:
        step_specs = chain_step_specs(spec, catalogue)
    except SpecError as e:
        raise SweepError(str(e)) from None
    perturbations = {i: catalogue(i) for i in ids if not i.startswith(FILE_PREFIX)}
    steps: list[ResolvedSpec] = []
    for step in step_specs:
        if step.is_file:
            if original is None:
                raise SweepError(f"{spec.id}: a file: step needs the data set it pairs with")
            steps.append(file_spec(step, original, data_dir, pair_by, on_ambiguous))
        else:
            steps.append(registry_spec(step, repeats, catalogue))
    qualified = {f"{st.id}.{k}": v for st in steps for k, v in st.params.items()}
    names = [k for st in steps for k in st.params]
    shown = {}
    for st in steps:
        defaults = perturbations[st.id].default_params if st.id in perturbations else {}
        for k, v in st.params.items():
            if v != defaults.get(k):
                shown[f"{st.id}.{k}" if names.count(k) > 1 else k] = v
    randomised = any(st.randomised for st in steps)
    fields = {st.field for st in steps}

    def make(example: QAExample, rng: random.Random) -> Outcome:
        current, metas, outcome = example, [], None
        for n, st in enumerate(steps):
            outcome = st.make(current, step_rng(rng, n))
            if outcome.status != "ok":
                note = f"step {n + 1} ({st.label}): {outcome.note}"
                return Outcome(outcome.status, note)
            current = outcome.example
            metas.append(outcome.meta)
        q_changed = current.question != example.question
        c_changed = current.context != example.context
        what = "both" if q_changed and c_changed else ("context" if c_changed else "question")
        reference, hypothesis = ((example.context, current.context) if what == "context"
                                 else (example.question, current.question))
        cer, wer = error_rates(reference, hypothesis)
        return Outcome("ok", None, current, what, q_changed or c_changed, cer, wer,
                        {"id": spec.id, "steps": metas})

    short = "+".join(FILE_PREFIX + Path(i[len(FILE_PREFIX):]).name if i.startswith(FILE_PREFIX) else i for i in ids)
    return ResolvedSpec(spec.id, qualified, canonical_json(qualified), spec_label(short, shown), steps[0].family,
                 fields.pop() if len(fields) == 1 else "both", randomised, repeats if randomised else 1,
                 " then ".join(st.source for st in steps), make,
                 "+".join(st.key_salt for st in steps) if any(st.key_salt for st in steps) else "",
                 pairing=steps[0].pairing, first=steps[0])


def resolve_spec(spec: PerturbationSpec, repeats: int, catalogue, original: Dataset | None,
                 data_dir: str | Path | None = None, *, pair_by: str = "auto",
                 on_ambiguous: str = "error") -> ResolvedSpec:
    """A spec resolved: a chain, a challenge file or a registered perturbation. ``pair_by`` and
    ``on_ambiguous``: how a challenge file is read and paired (:func:`file_spec`)."""
    if spec.is_chain:
        return chain_spec(spec, repeats, catalogue, original, data_dir, pair_by, on_ambiguous)
    if spec.is_file:
        if original is None:
            raise SweepError(f"{spec.id}: a file spec needs the data set it pairs with")
        return file_spec(spec, original, data_dir, pair_by, on_ambiguous)
    return registry_spec(spec, repeats, catalogue)

