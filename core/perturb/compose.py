"""Composition: several perturbations applied in sequence (e.g. translate, then keyboard noise).

``Composite(["TLQ", "keyboard_Q"])`` applies each registered perturbation to the previous step's
perturbed example. Step i draws from :func:`core.perturb.spec.step_rng` (the first step from
``rng`` itself, each later one from a generator seeded by it), exactly as a sweep's chain does, so a
seeded composite is reproducible and gives the sweep's variant for the same generator. A step that
returns several variants contributes its first one; a step that does not apply (None) makes the
whole composite not apply (None) - a chain is only reported when every link ran.

Edits of the result refer to the ORIGINAL text, as for any variant. Each step's edits are mapped
back through the earlier steps' edits when they touch only text the earlier steps left alone (the
edit kinds are kept); when a step edits text that an earlier step produced (keyboard noise on a
lower-cased letter), the offsets no longer line up and the edits are recomputed from the original
and final texts with difflib (:func:`core.perturb.base.diff_edits`, kind ``"composite"``).
``meta["edits_from"]`` says which ("steps" or "diff"); ``meta["chain"]`` holds each step's meta.

All steps must perturb the same field. A composite is not registered (it is built on demand);
its id is the step ids joined by "+", and :attr:`Composite.spec` its spec in the language of
:mod:`core.perturb.spec` (``keyboard_Q+DPQ``, step parameters as ``STEP.name``). :func:`build`
turns any spec text (``keyboard_Q:p=0.5+DPQ``) into the perturbation and the parameters to apply.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from core.perturb import registry
from core.perturb.base import Edit, Perturbation, PerturbationError, Variant, diff_edits, error_rates, splice
from core.perturb.spec import PerturbationSpec, SpecError, chain_step_specs, parse_spec, step_rng
from core.types import QAExample


def _map_back(accumulated: list[Edit], edit: Edit) -> Edit | None:
    """``edit`` (offsets into the text after ``accumulated``) in original offsets, or None on a conflict.

    ``accumulated`` holds non-overlapping edits in original offsets. A conflict is an edit that
    changes text an accumulated edit produced, an insertion strictly inside such text, or an
    insertion at the very point of an accumulated insertion (their order would be ambiguous).
    Edits merely adjacent to earlier ones map cleanly.
    """
    shift = 0
    inserting = edit.start == edit.end
    for a in sorted(accumulated, key=lambda e: (e.start, e.end)):
        cur_start = a.start + shift
        cur_end = cur_start + len(a.replacement)
        if (edit.start < cur_end and edit.end > cur_start) \
                or (inserting and cur_start < edit.start < cur_end) \
                or (inserting and a.start == a.end and cur_start <= edit.start <= cur_end):
            return None
        if cur_end <= edit.start:
            shift += len(a.replacement) - (a.end - a.start)
        else:
            break
    return Edit(edit.start - shift, edit.end - shift, edit.replacement, edit.kind)


def _spliced(text: str, edits: list[Edit]) -> str | None:
    """``text`` with the mapped-back ``edits`` written in, or None if they overlap after all."""
    try:
        return splice(text, edits)
    except PerturbationError:
        return None


class Composite(Perturbation):
    """Several registered perturbations in sequence; ``params`` maps a step id to its parameters.

    It cannot run where one of its steps cannot (that step's reason, with the step's parameters).
    """

    family = "sentence"
    field = "question"
    description = "A chain of perturbations applied one after the other."
    source = "composition of the perturbations named in the id"

    def __init__(self, ids: Sequence[str], params: dict[str, dict[str, Any]] | None = None) -> None:
        if isinstance(ids, str) or len(ids) < 2:
            raise PerturbationError(f"a composite needs a list of at least 2 perturbation ids, got {ids!r}")
        self.steps = [registry.get(pid) for pid in ids]
        fields = {p.field for p in self.steps}
        if len(fields) != 1:
            raise PerturbationError(f"composite steps must perturb one field, got {sorted(fields)} for {list(ids)}")
        self.step_params = dict(params or {})   # as given: they make the chain's spec
        unknown = set(self.step_params) - set(ids)
        if unknown:
            raise PerturbationError(f"params given for ids not in the chain: {sorted(unknown)}")
        # resolved (validated) now, not halfway through a data set
        self._resolved = {p.id: p.resolve_params(self.step_params.get(p.id, {})) for p in self.steps}
        self.id = "+".join(ids)
        self.field = fields.pop()
        self.family = self.steps[-1].family
        self.randomised = any(p.randomised for p in self.steps)
        self.description = " then ".join(f"{p.id} ({p.description})" for p in self.steps)
        self.source = "; ".join(dict.fromkeys(p.source for p in self.steps))

    @property
    def spec(self) -> PerturbationSpec:
        """This chain as a spec: its id with each step's parameters as ``STEP.name``."""
        return PerturbationSpec.make(self.id, {f"{step}.{k}": v for step, values in self.step_params.items()
                                               for k, v in values.items()})

    def resolve_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if params:
            raise PerturbationError(f"{self.id}: pass step parameters to Composite(params=...), got {sorted(params)}")
        return {}

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        for p in self.steps:   # each step says why not in its own words
            reason = p.why_not(example, self._resolved[p.id])
            if reason is not None:
                return reason
        return None

    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        original = getattr(example, self.field)
        current, chain, accumulated, mapped = example, [], [], True
        for n, p in enumerate(self.steps):
            variants = p.apply(current, step_rng(rng, n), **self._resolved[p.id])
            if not variants:
                return None
            step = variants[0]
            chain.append(step.meta)
            if mapped:
                for edit in step.edits:
                    back = _map_back(accumulated, edit)
                    if back is None:
                        mapped = False
                        break
                    accumulated.append(back)
            current = step.example
        final = getattr(current, self.field)
        if mapped and _spliced(original, accumulated) == final:
            edits = sorted(accumulated, key=lambda e: (e.start, e.end))
        else:
            mapped = False
            edits = diff_edits(original, final, "composite")
        cer, wer = error_rates(original, final)
        meta = {"id": self.id, "chain": chain, "edits_from": "steps" if mapped else "diff",
                "changed": final != original}
        return [Variant(text=final, field=self.field, example=current, edits=edits, meta=meta, cer=cer, wer=wer)]


def compose(ids: Sequence[str], params: dict[str, dict[str, Any]] | None = None) -> Composite:
    """A :class:`Composite` of the registered perturbations ``ids`` (at least two)."""
    return Composite(ids, params)


def resolve(spec: str) -> Perturbation:
    """A registered perturbation by id, or a composite for "ID1+ID2+..." (used by the CLI and UI);
    spec text with parameters (``keyboard_Q:p=0.5+DPQ``) builds the composite with them."""
    ids = [part.strip() for part in spec.split("+")]
    if any(not part for part in ids):
        raise PerturbationError(f"empty id in perturbation spec {spec!r}")
    if len(ids) == 1 and ":" not in spec:
        return registry.get(ids[0])
    return build(spec)[0]


def build(spec: PerturbationSpec | str) -> tuple[Perturbation, dict[str, Any]]:
    """The perturbation a spec names and the parameters to pass to its ``apply``: a registered
    perturbation with the spec's parameters, or a :class:`Composite` (its step parameters inside it,
    none to pass). SpecError for text that is not one spec (a list, a family, a ``file:``).

    >>> p, params = build("keyboard_Q:p=0.5")
    >>> p.id, params
    ('keyboard_Q', {'p': 0.5})
    >>> c, params = build("TLQ+keyboard_Q:p=1")
    >>> c.id, c.step_params, params, str(c.spec)
    ('TLQ+keyboard_Q', {'TLQ': {}, 'keyboard_Q': {'p': 1}}, {}, 'TLQ+keyboard_Q(keyboard_Q.p=1)')
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if spec.is_file or any(step.is_file for step in ([spec] if not spec.is_chain else chain_step_specs(spec))):
        raise SpecError(f"{spec.id}: a challenge file is data, not a perturbation")
    if not spec.is_chain:
        return registry.get(spec.id), spec.params_dict
    steps = chain_step_specs(spec)
    return Composite([s.id for s in steps], {s.id: s.params_dict for s in steps}), {}
