"""The perturbation spec language: one syntax for the sweep CLI, the pages, training and challenge sets.

A *spec* names one perturbation run: a registered perturbation id with parameters
(``DCRQ:n_chars=2``), a natural challenge set ``file:<path under the data dir>``, or a chain
``A+B`` (B applied to what A made). :func:`parse_specs` reads the comma-separated text form that
``python -m core.sweeps --perturbations``, ``python -m core.training --augment``,
``python -m core.perturb.make_challenge --perturbation`` and the Sweeps page's free-text field
accept; ``str(spec)`` (:func:`spec_label`) is its readable name on heatmap axes.

:func:`rng_for` is the ONE random generator a spec draws from for one example and repeat: the
sweep, the Variants page and make_challenge all call it, so the same (seed, example, spec,
repeat) gives the same variant everywhere. Its derivation is the sweep's from before this module
existed (a variant's cache key, hashed once more), so stored sweeps keep their meaning.
"""
from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The stored identities (format tag, keys, generators) live in core.compat; imported here under
# the names this module has always exported.
from core.compat import (  # noqa: F401 (re-exported)
    FORMAT,
    answers_json,
    canonical_json,
    example_hash,
    key_rng,
    sha,
    step_rng,
    variant_key,
)
from core.types import QAExample

FILE_PREFIX = "file:"


class SpecError(ValueError):
    """A spec that does not parse or resolve; the message names the problem."""


# ------------------------------------------------------------------------------------------ specs


@dataclass(frozen=True)
class PerturbationSpec:
    """A perturbation id (or ``file:<path>``) with its parameters."""

    id: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def make(cls, id: str, params: Mapping[str, Any] | None = None) -> "PerturbationSpec":
        return cls(id, tuple(sorted((params or {}).items())))

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def is_file(self) -> bool:
        return self.id.startswith(FILE_PREFIX) and not self.is_chain

    @property
    def is_chain(self) -> bool:
        """``A+B``: B applied to what A made (see :func:`chain_steps`)."""
        return len(chain_steps(self.id)) > 1

    def __str__(self) -> str:
        return spec_label(self.id, self.params_dict)

    @property
    def text(self) -> str:
        """The spec written in the language :func:`parse_specs` reads (``str()`` is the label):
        a chain's ``STEP.name`` parameters are written after their step.

        >>> PerturbationSpec.make("keyboard_Q+DPQ", {"keyboard_Q.p": 0.5}).text
        'keyboard_Q:p=0.5+DPQ'
        >>> PerturbationSpec.make("asr_Q", {"voice": "flite:kal16", "engine": "whisper"}).text
        'asr_Q:engine=whisper:voice=flite:kal16'
        """
        steps = chain_steps(self.id)
        own: dict[str, list[str]] = {step: [] for step in steps}
        for key, value in self.params:
            step, dot, name = key.rpartition(".")
            if not (dot and step in own):
                step, name = steps[0], key   # a flat name: parsing routes it to its step again
            own[step].append(f":{name}={_value_text(value)}")
        return "+".join(step + "".join(own[step]) for step in steps)


# A chain step begins after a "+" followed by a perturbation id or "file:".
_CHAIN_SPLIT = re.compile(r"\+(?=\s*(?:file:|[A-Za-z_]))")


def chain_steps(pid: str) -> list[str]:
    """The step ids of a chain id: ``"keyboard_Q+repair_Q"`` -> ``["keyboard_Q", "repair_Q"]``.

    >>> chain_steps("file:noiseqa/Synthetic/xquad-asr-synthetic+repair_Q")
    ['file:noiseqa/Synthetic/xquad-asr-synthetic', 'repair_Q']
    >>> chain_steps("DCRQ")
    ['DCRQ']
    """
    return [part.strip() for part in _CHAIN_SPLIT.split(pid)]


def spec_label(pid: str, params: Mapping[str, Any]) -> str:
    """``DCRQ`` or ``DCRQ(n_chars=2, n_words=1)``: the name shown on heatmap axes."""
    if not params:
        return pid
    return f"{pid}({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})"


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _value_text(value: Any) -> str:
    """A parameter value as spec text: as it is where it reads back as itself, else JSON."""
    if isinstance(value, str):
        plain = _parse_value(value) == value and not any(c in value for c in ",|+") and ".." not in value
        return value if plain and value.strip() == value and value else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _value_range(key: str, text: str) -> range | None:
    """``1..4`` -> range(1, 5) (nothing built yet); None when ``text`` is not a range."""
    if ".." not in text:
        return None
    lo, _, hi = text.partition("..")
    try:
        low, high = int(lo), int(hi)
    except ValueError:
        raise SpecError(f"parameter {key}: range {text!r} must be two integers, like 1..4") from None
    if high < low:
        raise SpecError(f"parameter {key}: empty range {text!r}")
    return range(low, high + 1)


def _count_values(key: str, text: str) -> int:
    """How many values :func:`_expand_values` gives, without building them.

    >>> _count_values("n", "1..2000"), _count_values("n", "a|b|c"), _count_values("n", "3")
    (2000, 3, 1)
    """
    values = _value_range(key, text)
    return len(values) if values is not None else text.count("|") + 1


def _expand_values(key: str, text: str) -> list[Any]:
    """``1..4`` -> [1, 2, 3, 4]; ``a|b`` -> ["a", "b"]; otherwise one JSON-or-string value."""
    values = _value_range(key, text)
    if values is not None:
        return list(values)
    return [_parse_value(v) for v in text.split("|")]


def _check_expansion(n: int, text: str) -> None:
    """SpecError before expanding when ``n`` specs are over the budget (core.budgets.MAX_SPECS)."""
    from core.budgets import MAX_SPECS, BudgetError

    try:
        MAX_SPECS.check(n, f"{text[:60]!r}" + ("…" if len(text) > 60 else ""))
    except BudgetError as e:
        raise SpecError(str(e)) from None


# A parameter begins at ":key="; any other colon belongs to the value before it.
_PARAM_START = re.compile(r":(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")
# ``natural:<source>`` (a step of a chain too) is the natural_Q perturbation with that source
# (core.perturb.catalogue.natural): real spoken or disfluent questions, by question id.
NATURAL_PREFIX = "natural:"
_NATURAL_ALIAS = re.compile(r"(^|\+)\s*natural:\s*([A-Za-z_|]+)")


def natural_alias(item: str) -> str:
    """An item with each ``natural:<source>`` written as the perturbation it names.

    >>> natural_alias("natural:asr_human+repair_Q")
    'natural_Q:source=asr_human+repair_Q'
    >>> natural_alias("natural:asr_human|disfluent")
    'natural_Q:source=asr_human|disfluent'
    """
    return _NATURAL_ALIAS.sub(lambda m: f"{m.group(1)}natural_Q:source={m.group(2)}", item)


def parse_specs(text: str) -> list[PerturbationSpec]:
    """Parse the CLI's ``--perturbations`` value into specs.

    Comma-separated items. Each item is ``ID``, ``ID:key=value[:key=value...]`` or
    ``file:PATH`` (a SQuAD file under the data directory, ``.json`` optional). Values are JSON
    (``2``, ``0.1``, ``true``) or plain strings; ``a..b`` is an integer range and ``x|y`` a list,
    and several keys expand to their product: ``DCRQ:n_chars=1..4`` gives four specs.
    ``family:NAME`` expands to every registered perturbation of that family; ``natural:SOURCE``
    is ``natural_Q:source=SOURCE`` (:func:`natural_alias`). A value may hold
    colons (TTS voice ids do: ``flite:kal16``): a new parameter starts only at ``:key=``.

    >>> [str(s) for s in parse_specs("TLQ, DCRQ:n_chars=1..2, file:noiseqa/x.json")]
    ['TLQ', 'DCRQ(n_chars=1)', 'DCRQ(n_chars=2)', 'file:noiseqa/x']
    >>> [str(s) for s in parse_specs("asr_Q:voice=flite:slt|espeak-ng:en-us:engine=whisper")]
    ['asr_Q(engine=whisper, voice=flite:slt)', 'asr_Q(engine=whisper, voice=espeak-ng:en-us)']
    """
    specs: list[PerturbationSpec] = []
    for item in (natural_alias(part.strip()) for part in text.split(",")):
        if not item:
            continue
        steps = _split_chain(item)
        if len(steps) > 1:
            specs.extend(_parse_chain(item, steps, budget_used=len(specs)))
            _check_expansion(len(specs), text)
            continue
        if item.startswith(FILE_PREFIX):
            path = item[len(FILE_PREFIX):].strip().removesuffix(".json")
            if not path:
                raise SpecError(f"{item!r}: file: needs a path under the data directory")
            specs.append(PerturbationSpec(FILE_PREFIX + path))
            continue
        if item.startswith("family:"):
            from core.perturb import registry

            family = item[len("family:"):]
            members = registry.by_family().get(family)
            if not members:
                raise SpecError(f"no registered perturbation of family {family!r}; families: "
                                 f"{', '.join(registry.by_family())}")
            _check_expansion(len(specs) + len(members), text)
            specs.extend(PerturbationSpec(p.id) for p in members)
            continue
        pid, *assignments = _PARAM_START.split(item)
        if ":" in pid:
            raise SpecError(f"{item!r}: parameters are written key=value, got "
                             f"{pid.partition(':')[2]!r}")
        parts: list[tuple[str, str]] = []
        for assignment in assignments:
            key, eq, value = assignment.partition("=")
            if not eq or not key.strip():
                raise SpecError(f"{item!r}: parameters are written key=value, got {assignment!r}")
            parts.append((key.strip(), value.strip()))
        # counted before anything is built: 1..4 x 1..2000 x 1..1000 is refused, not expanded
        _check_expansion(len(specs) + math.prod(_count_values(k, v) for k, v in parts), text)
        grid = [[(k, v) for v in _expand_values(k, value)] for k, value in parts]
        for combo in itertools.product(*grid):
            specs.append(PerturbationSpec.make(pid.strip(), dict(combo)))
    if not specs:
        raise SpecError("no perturbations given")
    return specs


_STEP_START = re.compile(r"\+\s*(file:|[A-Za-z_][A-Za-z0-9_]*(?=\s*(?::|\+|$)))")


def _split_chain(item: str) -> list[str]:
    """An item's chain steps: a "+" starts a step only before ``file:`` or a registered perturbation
    id, so a "+" inside a value stays there (``asr_Q:voice=espeak-ng:en-us+f3`` is one step).

    >>> _split_chain("keyboard_Q:p=0.5+repair_Q:mode=all")
    ['keyboard_Q:p=0.5', 'repair_Q:mode=all']
    >>> _split_chain("asr_Q:voice=espeak-ng:en-us+f3")
    ['asr_Q:voice=espeak-ng:en-us+f3']
    """
    if "+" not in item:
        return [item]
    from core.perturb import registry

    registry.load_all()
    known = {p.id for p in registry.all_perturbations()}
    cuts = [m.start() for m in _STEP_START.finditer(item) if m.group(1) == "file:" or m.group(1) in known]
    bounds = [0, *cuts, len(item)]
    return [item[a:b].lstrip("+").strip() for a, b in zip(bounds, bounds[1:])]


def _parse_chain(item: str, steps: list[str], budget_used: int = 0) -> list[PerturbationSpec]:
    """``A:x=1+B:y=2|3`` -> chain specs ``A+B`` with flat parameters (x=1, y=2), (x=1, y=3).

    Each step's parameters are written after it; the chain keeps them in one flat dict, and at
    resolution a flat parameter goes to the step that accepts it (:func:`chain_step_specs`). A name
    written on two steps is kept apart as ``STEP_ID.name``.
    """
    parsed: list[list[PerturbationSpec]] = []
    for step in steps:
        if not step:
            raise SpecError(f"{item!r}: empty step in the chain")
        if step.startswith("family:"):
            raise SpecError(f"{item!r}: a chain step is one perturbation or file:, not a family")
        parsed.append(parse_specs(step))
    _check_expansion(budget_used + math.prod(len(group) for group in parsed), item)
    ids = [group[0].id for group in parsed]
    if len(set(ids)) != len(ids):
        raise SpecError(f"{item!r}: a chain cannot repeat a step")
    counts: dict[str, int] = {}
    for group in parsed:
        for key in {k for spec in group for k in spec.params_dict}:
            counts[key] = counts.get(key, 0) + 1
    out = []
    for combo in itertools.product(*parsed):
        flat: dict[str, Any] = {}
        for spec in combo:
            for key, value in spec.params:
                flat[f"{spec.id}.{key}" if counts[key] > 1 else key] = value
        out.append(PerturbationSpec.make("+".join(ids), flat))
    return out



def parse_spec(text: str) -> PerturbationSpec:
    """Exactly one spec (a chain counts as one): ``keyboard_Q:p=0.5+DPQ``; SpecError for a list,
    a family or a value list that would expand to several.

    >>> str(parse_spec("keyboard_Q:p=0.5+DPQ"))
    'keyboard_Q+DPQ(p=0.5)'
    """
    specs = parse_specs(text)
    if len(specs) != 1:
        raise SpecError(f"{text!r} names {len(specs)} perturbation runs; give exactly one")
    return specs[0]


def chain_step_specs(spec: PerturbationSpec, catalogue=None) -> list[PerturbationSpec]:
    """A chain's steps, each with the parameters written for it (not yet resolved).

    A chain keeps its parameters in one flat dict; a flat name goes to the step whose perturbation
    declares it (``catalogue(id).default_params``), ``STEP_ID.name`` to that step outright. A name
    two steps declare must be qualified; a name no step declares is an error. A ``file:`` step
    takes none. ``catalogue``: id -> Perturbation (default: the registry).
    """
    ids = chain_steps(spec.id)
    if len(set(ids)) != len(ids):
        raise SpecError(f"{spec.id}: a chain cannot repeat a step")
    if any(i.startswith(FILE_PREFIX) for i in ids[1:]):
        raise SpecError(f"{spec.id}: a file: step can only be the first of a chain")
    if catalogue is None:
        from core.perturb import registry

        catalogue = registry.get
    perturbations = {}
    for i in ids:
        if not i.startswith(FILE_PREFIX):
            try:
                perturbations[i] = catalogue(i)
            except KeyError as e:
                raise SpecError(str(e.args[0]) if e.args else str(e)) from None
    given: dict[str, dict[str, Any]] = {i: {} for i in ids}
    for key, value in spec.params:
        step, dot, name = key.rpartition(".")
        if dot and step in given:
            owners = [step]
        else:
            name = key
            owners = [i for i, p in perturbations.items() if name in p.default_params]
        if not owners:
            raise SpecError(f"{spec.id}: no step accepts parameter {key!r}")
        if len(owners) > 1:
            raise SpecError(f"{spec.id}: parameter {key!r} is accepted by {' and '.join(owners)}; "
                            f"write it as STEP.{key}, e.g. {owners[-1]}.{key}")
        given[owners[0]][name] = value
    return [PerturbationSpec.make(i, given[i]) for i in ids]


# ------------------------------------------------------------------------------ keys and rng


def rng_for(seed: int, example: QAExample, spec: PerturbationSpec | str, repeat: int, *,
            catalogue=None, salt: str = "") -> random.Random:
    """THE generator of ``spec`` on ``example`` for ``repeat`` under ``seed``.

    The sweep, the Variants page and make_challenge draw from it, so the same four give the same
    variant in all three. It is the sweep's derivation (:func:`key_rng` of the variant's cache
    key, with the perturbation's resolved parameters), so every stored sweep keeps its variants.
    A deterministic perturbation's generator ignores seed and repeat. A chain's is its first
    step's (:func:`step_rng` derives the later steps' from it), keyed by seed and repeat when any
    step is randomised: ``keyboard_Q+repair_Q`` draws keyboard_Q's own numbers, and the repeats of
    ``TLQ+keyboard_Q`` differ (before issue 25 a deterministic first step made every repeat of
    its chain draw the same numbers). ``salt``: a ``file:`` first step's key salt
    (:func:`core.sweeps.running.resolve.file_spec`; it only matters for the steps after it).
    ``catalogue``: id -> Perturbation (default: the registry).

    >>> from core.types import Answer, QAExample
    >>> ex = QAExample("q1", "Who wrote it?", "Ann wrote it.", (Answer("Ann", 0),))
    >>> rng_for(0, ex, "keyboard_Q", 1).random() == rng_for(0, ex, "keyboard_Q:p=0.25", 1).random()
    True
    >>> rng_for(0, ex, "keyboard_Q+DPQ", 1).random() == rng_for(0, ex, "keyboard_Q", 1).random()
    True
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if catalogue is None:
        from core.perturb import registry

        catalogue = registry.get
    randomised = None   # a chain's first step draws with the chain's randomisation
    if spec.is_chain:
        steps = chain_step_specs(spec, catalogue)
        randomised = any(catalogue(s.id).randomised for s in steps if not s.is_file)
        spec = steps[0]
    ex_hash = example_hash(example)
    if spec.is_file:
        return key_rng(variant_key(spec.id, "{}", seed, repeat, ex_hash, randomised=bool(randomised), salt=salt))
    p = catalogue(spec.id)
    params = p.resolve_params(spec.params_dict)
    return key_rng(variant_key(p.id, canonical_json(params), seed, repeat, ex_hash,
                               randomised=bool(p.randomised if randomised is None else randomised)))
