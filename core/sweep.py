"""Sweeps: evaluate models x perturbations over a data set, keep every prediction, resume for free.

A sweep is
  * a data set, or a seeded sample of ``n`` of its examples (:func:`sample_examples`: the sample
    for n=200 contains the one for n=100, so growing a sample reuses the work done);
  * perturbation specs: a registered perturbation id with parameters (``DCRQ:n_chars=2``), or a
    natural challenge set ``file:<path under the data dir>`` paired with the data set by id, else
    by position, only where both are the same item (:func:`core.datasets.pair_challenge`; the
    config's ``pair_by`` forces a rule), e.g. ``file:noiseqa/Synthetic/xquad-keyboard-synthetic``
    (kept inside the data directory, or an absolute path inside the other roots of core.config:
    :func:`resolve_data_file` refuses ``..`` escapes, symlinks and paths elsewhere);
    randomised perturbations run ``repeats`` times with independent seeds, deterministic ones and
    files once;
  * models, passed in as ``{name: engine}`` (anything with ``QAEngine.predict``'s signature), so
    the CLI loads them from the model registry and tests inject tiny ones.

Every (spec, repeat, example) is one *unit*. Work is done in chunks of units: the chunk's variants
are computed (or read from the cache), then for each model one batched ``engine.predict`` call
answers every (question, context) pair the cache does not hold yet, then all of it (variants,
predictions, EM/F1 rows) is written in ONE transaction. A sweep killed at any moment loses at most
the chunk in flight; re-running the same command skips every unit that has its rows. The clean
(unperturbed) predictions are a first phase of the same kind.

Cache keys (``core.store`` has the tables; both caches are shared by all sweeps in a file):
  * variant: sha256 of (FORMAT, perturbation id, resolved params as canonical JSON, seed, repeat,
    example content hash). Deterministic perturbations leave seed and repeat out (their output
    does not depend on them, so sweeps with other seeds share them); file specs use the file's
    sha256 instead. The ``random.Random`` handed to the perturbation is seeded from the same parts,
    so a unit's variant does not depend on which other units run, or in what order.
  * prediction: sha256 of (model name, model fingerprint, question, context sha256). The
    fingerprint (:func:`engine_fingerprint`) hashes the weights, the tokenizer and the engine
    settings that change answers, so a retrained model never reuses stale answers.
A code change inside a perturbation is not seen by its key: after changing one, bump FORMAT or use
a new database file.

Our choices where the papers leave it open:
  * a perturbation that does not apply to an example (returns None, unsupported language, or
    raises PerturbationError/ValueError, e.g. word perturbations on Thai) gives a row with status
    'n/a' / 'error' and no score; cells compare clean and perturbed scores on the same examples,
    those where the perturbation applied (see core.sweep_report);
  * a perturbation returning several variants contributes its first (every catalogue entry
    returns one);
  * examples without a gold answer (or marked impossible) cannot be scored and are left out of
    the sweep (counted in the config's ``dropped_no_gold``).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import random
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core import cli
from core import config as qax_config
from core.datasets import Dataset, DatasetError, demo_dataset, legacy_rule, load_squad, pair_challenge
from core.metrics import score_answer
from core.perturb.base import PerturbationError, error_rates
from core.store import Store, canonical_json, text_hash
from core.types import Answer, QAExample

__all__ = [
    "FORMAT", "SweepError", "PerturbationSpec", "SweepConfig", "SweepRun", "parse_specs",
    "load_dataset", "sample_examples", "example_hash", "engine_fingerprint", "run_sweep", "main", "pair_file",
]

FORMAT = "qax-sweep-1"
DEFAULT_DB = "runs/sweeps.sqlite"
FILE_PREFIX = "file:"

ProgressFn = Callable[[int, int], None]


class SweepError(ValueError):
    """A sweep that cannot run as configured; the message names the problem."""


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


def _expand_values(key: str, text: str) -> list[Any]:
    """``1..4`` -> [1, 2, 3, 4]; ``a|b`` -> ["a", "b"]; otherwise one JSON-or-string value."""
    if ".." in text:
        lo, _, hi = text.partition("..")
        try:
            low, high = int(lo), int(hi)
        except ValueError:
            raise SweepError(f"parameter {key}: range {text!r} must be two integers, like 1..4") from None
        if high < low:
            raise SweepError(f"parameter {key}: empty range {text!r}")
        return list(range(low, high + 1))
    return [_parse_value(v) for v in text.split("|")]


# A parameter begins at ":key="; any other colon belongs to the value before it.
_PARAM_START = re.compile(r":(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")


def parse_specs(text: str) -> list[PerturbationSpec]:
    """Parse the CLI's ``--perturbations`` value into specs.

    Comma-separated items. Each item is ``ID``, ``ID:key=value[:key=value...]`` or
    ``file:PATH`` (a SQuAD file under the data directory, ``.json`` optional). Values are JSON
    (``2``, ``0.1``, ``true``) or plain strings; ``a..b`` is an integer range and ``x|y`` a list,
    and several keys expand to their product: ``DCRQ:n_chars=1..4`` gives four specs.
    ``family:NAME`` expands to every registered perturbation of that family. A value may hold
    colons (TTS voice ids do: ``flite:kal16``): a new parameter starts only at ``:key=``.

    >>> [str(s) for s in parse_specs("TLQ, DCRQ:n_chars=1..2, file:noiseqa/x.json")]
    ['TLQ', 'DCRQ(n_chars=1)', 'DCRQ(n_chars=2)', 'file:noiseqa/x']
    >>> [str(s) for s in parse_specs("asr_Q:voice=flite:slt|espeak-ng:en-us:engine=whisper")]
    ['asr_Q(engine=whisper, voice=flite:slt)', 'asr_Q(engine=whisper, voice=espeak-ng:en-us)']
    """
    specs: list[PerturbationSpec] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        steps = _split_chain(item)
        if len(steps) > 1:
            specs.extend(_parse_chain(item, steps))
            continue
        if item.startswith(FILE_PREFIX):
            path = item[len(FILE_PREFIX):].strip().removesuffix(".json")
            if not path:
                raise SweepError(f"{item!r}: file: needs a path under the data directory")
            specs.append(PerturbationSpec(FILE_PREFIX + path))
            continue
        if item.startswith("family:"):
            from core.perturb import registry

            family = item[len("family:"):]
            members = registry.by_family().get(family)
            if not members:
                raise SweepError(f"no registered perturbation of family {family!r}; families: "
                                 f"{', '.join(registry.by_family())}")
            specs.extend(PerturbationSpec(p.id) for p in members)
            continue
        pid, *assignments = _PARAM_START.split(item)
        if ":" in pid:
            raise SweepError(f"{item!r}: parameters are written key=value, got "
                             f"{pid.partition(':')[2]!r}")
        grid: list[list[tuple[str, Any]]] = []
        for assignment in assignments:
            key, eq, value = assignment.partition("=")
            if not eq or not key.strip():
                raise SweepError(f"{item!r}: parameters are written key=value, got {assignment!r}")
            grid.append([(key.strip(), v) for v in _expand_values(key.strip(), value.strip())])
        for combo in itertools.product(*grid):
            specs.append(PerturbationSpec.make(pid.strip(), dict(combo)))
    if not specs:
        raise SweepError("no perturbations given")
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


def _parse_chain(item: str, steps: list[str]) -> list[PerturbationSpec]:
    """``A:x=1+B:y=2|3`` -> chain specs ``A+B`` with flat parameters (x=1, y=2), (x=1, y=3).

    Each step's parameters are written after it; the chain keeps them in one flat dict, and at
    resolution a flat parameter goes to the step that accepts it (:func:`_chain_spec`). A name
    written on two steps is kept apart as ``STEP_ID.name``.
    """
    parsed: list[list[PerturbationSpec]] = []
    for step in steps:
        if not step:
            raise SweepError(f"{item!r}: empty step in the chain")
        if step.startswith("family:"):
            raise SweepError(f"{item!r}: a chain step is one perturbation or file:, not a family")
        parsed.append(parse_specs(step))
    ids = [group[0].id for group in parsed]
    if len(set(ids)) != len(ids):
        raise SweepError(f"{item!r}: a chain cannot repeat a step")
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


# ---------------------------------------------------------------------------------------- config


@dataclass
class SweepConfig:
    """What to sweep. ``dataset`` names the data (see :func:`load_dataset`) or labels an injected one."""

    dataset: str
    perturbations: Sequence[PerturbationSpec | str]
    models: Sequence[str]
    repeats: int = 1
    seed: int = 0
    sample: int | None = None
    name: str | None = None
    # Loader and pairing options (core.datasets); stored in the configuration only when they
    # differ from these defaults, so sweeps stored before they existed keep their hashes.
    pair_by: str = "auto"
    on_ambiguous: str = "error"
    lang: str | None = None


@dataclass
class SweepRun:
    """What :func:`run_sweep` did."""

    sweep_id: int
    name: str
    status: str                    # done | cancelled
    total_units: int               # result rows of the complete sweep (clean + perturbed, all models)
    done_units: int                # rows present at the end
    resumed_units: int             # rows that were already there at the start
    model_calls: int = 0           # engine.predict calls
    predictions_computed: int = 0  # (question, context) pairs answered by a model in this run
    predictions_cached: int = 0    # pairs found in the cache
    variants_computed: int = 0
    variants_cached: int = 0
    elapsed_s: float = 0.0


# --------------------------------------------------------------------------------------- hashing


def _sha(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def _answers_json(answers: Sequence[Answer]) -> str:
    return json.dumps([[a.text, a.answer_start] for a in answers], ensure_ascii=False)


def example_hash(ex: QAExample) -> str:
    """Content hash of an example: id, language, question, context and gold answers (not title)."""
    return _sha("example", ex.id, ex.lang, ex.question, ex.context, _answers_json(ex.answers))


def prediction_key(model: str, fingerprint: str, question: str, context_hash: str, tag: str = "") -> str:
    """The cache key of one model's answer. ``tag``: the engine's window shape for a long context
    (``QAEngine.long_context_tag``), "" (left out of the key) for ordinary ones."""
    if tag:
        return _sha("prediction", model, fingerprint, question, context_hash, tag)
    return _sha("prediction", model, fingerprint, question, context_hash)


# engine -> sha256 state after its weights and tokenizer: the settings are hashed on every call,
# since they may change after the first (a cached digest would then key stale answers).
_fingerprints: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def engine_fingerprint(engine: Any) -> str:
    """A hash that changes whenever the engine could answer differently.

    An engine with a ``fingerprint`` str attribute supplies its own. A ``QAEngine`` is hashed
    from its weights (every tensor of the state dict, in name order), its tokenizer (the fast
    tokenizer's JSON) and the settings that change answers (max_length, stride,
    max_answer_tokens, top_k, and the backend when it is not torch: every field of EngineSettings
    but two). ``batch_size`` and
    ``threads`` only change speed: minilm-squad on 300 XQuAD-en questions gives the same 300 spans
    at batch sizes 1, 8 and 32 (scores within 2e-6), so sweeps run at any batch size share their
    cache. ``n_best`` is not a setting: the sweep always keeps the best span. Invalid settings
    cannot be hashed: EngineSettings refuses them when they are set. The weights are hashed once
    per engine object (~0.1 s per 100 MB), the settings on every call: a setting changed after
    the first call changes the fingerprint. max_length and stride are the values the engine
    windows with (cut to what the model allows, as at construction).
    """
    own = getattr(engine, "fingerprint", None)
    if isinstance(own, str) and own:
        return own
    try:
        h = _fingerprints[engine].copy()
    except (KeyError, TypeError):
        h = _weights_hash(engine)
        try:
            _fingerprints[engine] = h.copy()
        except TypeError:
            pass
    s = getattr(engine, "settings", None)
    if s is not None:
        shape = getattr(engine, "_window_shape", None)
        max_length, stride = shape() if callable(shape) else (s.max_length, s.stride)
        h.update(f"{max_length}:{stride}:{s.max_answer_tokens}:{s.top_k}".encode())
        # Long contexts' window shape: its threshold hashed only when not the default (stored
        # fingerprints stay); the shape itself joins the key of each long context's prediction
        # (:func:`prediction_key`), since before it existed long contexts were read like short ones.
        threshold = getattr(s, "long_context_chars", 8000)
        if threshold != 8000:
            h.update(f":long_from={threshold}".encode())
        # The backend that answers (an ONNX one that fell back is torch), hashed only when not
        # torch: every fingerprint from before backends existed, and their stored sweeps, stay.
        resolve = getattr(engine, "resolve_backend", None)
        backend = resolve() if callable(resolve) else getattr(s, "backend", "torch")
        if backend != "torch":
            from core.qa.onnx_backend import FINGERPRINT_TAGS

            h.update(f":backend={FINGERPRINT_TAGS.get(backend, backend)}".encode())
    return h.hexdigest()[:20]


def _weights_hash(engine: Any):
    """sha256 over an engine's weights (every tensor, in name order) and its tokenizer."""
    import torch

    model = getattr(engine, "model", None)
    if model is None or not hasattr(model, "state_dict"):
        raise SweepError(f"cannot fingerprint engine {engine!r}: it has neither a 'fingerprint' "
                         "attribute nor a torch 'model'")
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    tokenizer = getattr(engine, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    # as loaded (QAEngine.tokenizer_json), not as the last call left its truncation state
    loaded = getattr(engine, "tokenizer_json", None)
    h.update((loaded or (backend.to_str() if backend is not None else repr(tokenizer))).encode())
    return h


# --------------------------------------------------------------------------------------- datasets


def resolve_data_file(name: str, data_dir: str | Path | None = None, *, what: str = "file") -> Path:
    """The SQuAD file a ``file:`` spec (or a confined data set name) means, kept inside the roots.

    A relative name is looked up under the data directory (``data_dir``, else the configured one),
    with or without ``.json``, and may not climb out of it (``..``, a symlink pointing outside).
    An absolute name must lie inside :func:`core.config.read_roots` (the data directory, the runs
    folder, the speech trials' folder, QAX_EXTRA_ROOTS): core.natural_mt and the speech trials
    print such paths. Anything else is a SweepError naming the allowed folders; nothing is read.
    """
    rel = name.strip().removesuffix(".json")
    if not rel:
        raise SweepError(f"{what}: needs a path under the data directory")
    root = Path(data_dir).expanduser().resolve() if data_dir is not None else qax_config.data_dir()
    try:
        if Path(rel).expanduser().is_absolute():
            roots = qax_config.read_roots(root)
            candidates = [qax_config.confine(Path(rel + ".json").expanduser(), roots, "the file"),
                          qax_config.confine(Path(rel).expanduser(), roots, "the file")]
        elif root is None:
            raise SweepError(f"no data directory to find {rel}.json in (set QAX_DATA_DIR)")
        else:
            candidates = [qax_config.under(root, rel + ".json", "the path"),
                          qax_config.under(root, rel, "the path")]
    except ValueError as e:   # ConfinementError; a NUL byte in the name
        raise SweepError(f"{what}: {e}") from None
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise SweepError(f"{what}: no file {rel}.json under the data directory {root}"
                         if not Path(rel).is_absolute() else f"{what}: no file {rel}.json")
    return path


def load_dataset(name: str, data_dir: str | Path | None = None, *, confined: bool = False,
                 lang: str | None = None, on_ambiguous: str = "error") -> Dataset:
    """A data set by name: ``demo.<lang>`` (the bundled demo set), ``file:<path>`` or a path under
    the data directory with or without ``.json`` (``xquad/xquad.en``), both kept inside the
    roots (:func:`resolve_data_file`), or, unless ``confined`` (the web UI), any existing file
    path (the CLI is the administrator's tool). ``lang`` and ``on_ambiguous``: see
    :func:`core.datasets.load_squad` (the demo set has its own languages)."""
    opts = {"lang": lang, "on_ambiguous": on_ambiguous}
    if name.startswith(FILE_PREFIX):
        path = resolve_data_file(name[len(FILE_PREFIX):], data_dir, what=f"dataset {name!r}")
        return load_squad(path, name=name[len(FILE_PREFIX):].strip().removesuffix(".json"), **opts)
    if name.startswith("demo.") and "/" not in name:
        return demo_dataset(name.split(".", 1)[1])
    path = Path(name).expanduser()
    if not confined and path.is_file():
        return load_squad(path, **opts)
    if path.is_absolute():
        if not confined:
            raise SweepError(f"dataset {name!r}: no such file")
        return load_squad(resolve_data_file(name, data_dir, what=f"dataset {name!r}"), **opts)
    root = Path(data_dir) if data_dir is not None else qax_config.data_dir()
    if root is None:
        raise SweepError(f"dataset {name!r}: no such file, and no data directory "
                         "(set QAX_DATA_DIR)")
    for rel in (name, f"{name}.json"):
        try:
            candidate = qax_config.under(root, rel, "the path")
        except ValueError as e:   # ConfinementError; a NUL byte in the name
            raise SweepError(f"dataset {name!r}: {e}") from None
        if candidate.is_file():
            return load_squad(candidate, name=name.removesuffix(".json"), **opts)
    raise SweepError(f"dataset {name!r}: neither a file nor found under the data directory {root}")


def sample_examples(examples: Sequence[QAExample], n: int | None, seed: int) -> list[QAExample]:
    """``n`` examples chosen by seed, in data set order (all of them when n is None or too big).

    Each example is ranked by sha256(seed, id) and the n lowest ranks are kept, so the sample of
    size n is a subset of the sample of size n + k with the same seed: extending a sweep's sample
    reuses everything already computed.
    """
    if n is None or n >= len(examples):
        return list(examples)
    if n < 1:
        raise SweepError(f"sample size must be at least 1, got {n}")
    ranked = sorted(range(len(examples)), key=lambda i: _sha("sample", seed, examples[i].id))
    keep = set(ranked[:n])
    return [ex for i, ex in enumerate(examples) if i in keep]


# ------------------------------------------------------------------------------ resolved specs


@dataclass
class _Outcome:
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
class _Spec:
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
    make: Callable[[QAExample, random.Random], _Outcome]
    key_salt: str                     # file specs: the file's sha256; registry specs: ""
    pairing: Any = None               # file specs (and chains starting with one): the core.datasets.Pairing
    first: "_Spec | None" = None      # chains: the first step, whose rng the chain uses

    def variant_key(self, ex_hash: str, seed: int, repeat: int) -> str:
        if self.randomised:
            return _sha("variant", FORMAT, self.id, self.params_json, seed, repeat, ex_hash, self.key_salt)
        return _sha("variant", FORMAT, self.id, self.params_json, "-", 0, ex_hash, self.key_salt)

    def rng(self, ex_hash: str, seed: int, repeat: int) -> random.Random:
        if self.first is not None:
            # A chain's first step draws exactly what it draws on its own: "keyboard_Q" and
            # "keyboard_Q+repair_Q" score the same noisy questions, before and after repair.
            return self.first.rng(ex_hash, seed, repeat)
        digest = hashlib.sha256(("rng" + self.variant_key(ex_hash, seed, repeat)).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))


def _registry_spec(spec: PerturbationSpec, repeats: int, catalogue) -> _Spec:
    try:
        p = catalogue(spec.id)
    except KeyError as e:
        raise SweepError(str(e.args[0]) if e.args else str(e)) from None
    try:
        params = p.resolve_params(spec.params_dict)
    except PerturbationError as e:
        raise SweepError(str(e)) from None

    def make(example: QAExample, rng: random.Random) -> _Outcome:
        reason = p.why_not(example, params)   # the language, a missing backend, voice or word list
        if reason is not None:
            return _Outcome("n/a", reason)
        try:
            variants = p.apply(example, rng, **params)
        except (PerturbationError, ValueError) as e:
            return _Outcome("error", f"{type(e).__name__}: {e}")
        if not variants:
            return _Outcome("n/a", f"{p.id} does not apply to this example")
        v = variants[0]
        meta = {k: val for k, val in v.meta.items() if _jsonable(val)}
        return _Outcome("ok", None, v.example, v.field, bool(v.meta.get("changed", v.text != getattr(example, v.field))),
                        v.cer, v.wer, meta)

    randomised = bool(p.randomised)
    return _Spec(p.id, params, canonical_json(params), spec_label(p.id, params), p.family, p.field,
                 randomised, repeats if randomised else 1, p.source or "", make, "")


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


_FILE_FAMILIES = (("keyboard", "keyboard"), ("asr", "asr"), ("translation", "mt"),
                  ("paraphras", "paraphrase"))


def _file_spec(spec: PerturbationSpec, original: Dataset, data_dir: str | Path | None,
               pair_by: str = "auto", on_ambiguous: str = "error") -> _Spec:
    """A natural (or pre-generated) challenge file as a deterministic perturbation, paired with
    ``original`` by :func:`core.datasets.pair_challenge` (which refuses pairs that are not the
    same items). The resolved spec's ``pairing`` says how; its ``source`` (stored with the sweep)
    gives the rule and the counts."""
    if spec.params:
        raise SweepError(f"{spec.id}: file specs take no parameters")
    rel = spec.id[len(FILE_PREFIX):]
    path = resolve_data_file(rel, data_dir, what=spec.id)
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

    def make(example: QAExample, rng: random.Random) -> _Outcome:
        c = partner.get(example.id)
        if c is None:
            return _Outcome("n/a", f"question id {example.id!r} is not paired in {rel}")
        answers = c.answers or example.answers
        new = dataclasses.replace(example, question=c.question, context=c.context, answers=answers)
        q_changed, c_changed = c.question != example.question, c.context != example.context
        what = "both" if q_changed and c_changed else ("context" if c_changed else "question")
        reference, hypothesis = (example.context, c.context) if what == "context" else (example.question, c.question)
        cer, wer = error_rates(reference, hypothesis)
        return _Outcome("ok", None, new, what, q_changed or c_changed, cer, wer,
                        {"id": spec.id, "pairing": pairing.rule})

    # The cache key of a variant holds the file's hash; where pairing now joins other items than
    # it did before pairs were checked (or drops some), the rule joins the key, so no stale
    # variant is reused. Unchanged pairings keep their keys: stored sweeps stay valid.
    salt = hashlib.sha256(raw).hexdigest()
    if pairing.rule != legacy_rule(original, challenge) or pairing.mismatched:
        salt += f":pair={pairing.rule}:{len(pairing.mismatched)}"
    return _Spec(spec.id, {}, "{}", FILE_PREFIX + Path(rel).name, family, field_name, False, 1,
                 f"challenge file {path.name} ({pairing.summary()})", make, salt, pairing)


def pair_file(spec_id: str, original: Dataset, data_dir: str | Path | None = None, pair_by: str = "auto",
              on_ambiguous: str = "error"):
    """How the challenge file of a ``file:`` spec pairs with ``original`` (a
    :class:`core.datasets.Pairing`: rule and counts), checked as a sweep would before it starts;
    SweepError (naming the first mismatches) when it does not pair."""
    return _file_spec(PerturbationSpec(spec_id), original, data_dir, pair_by, on_ambiguous).pairing


def _chain_spec(spec: PerturbationSpec, repeats: int, catalogue, original: Dataset | None,
                data_dir: str | Path | None, pair_by: str = "auto", on_ambiguous: str = "error") -> _Spec:
    """``A+B+...``: each step applied to what the step before it made.

    A ``file:`` step may only come first (it replaces the question, undoing any step before it).
    Flat parameters go to the step that accepts them (``STEP.name`` names the step outright); the
    stored parameters are always qualified (``{"repair_Q.mode": "all", "keyboard_Q.p": 0.25}``) so
    each step's settings can be read back without the registry. The first step draws its random
    numbers as it does on its own (:meth:`_Spec.rng`); later steps draw from a generator seeded
    by it. The chain's CER/WER compare the final text with the original.
    """
    ids = chain_steps(spec.id)
    if len(set(ids)) != len(ids):
        raise SweepError(f"{spec.id}: a chain cannot repeat a step")
    if any(i.startswith(FILE_PREFIX) for i in ids[1:]):
        raise SweepError(f"{spec.id}: a file: step can only be the first of a chain")
    perturbations = {}
    for i in ids:
        if not i.startswith(FILE_PREFIX):
            try:
                perturbations[i] = catalogue(i)
            except KeyError as e:
                raise SweepError(str(e.args[0]) if e.args else str(e)) from None
    given: dict[str, dict[str, Any]] = {i: {} for i in ids}
    for key, value in spec.params:
        step, dot, name = key.rpartition(".")
        if dot and step in given:
            owners = [step]
        else:
            name = key
            owners = [i for i, p in perturbations.items() if name in p.default_params]
        if not owners:
            raise SweepError(f"{spec.id}: no step accepts parameter {key!r}")
        if len(owners) > 1:
            raise SweepError(f"{spec.id}: parameter {key!r} is accepted by {' and '.join(owners)}; "
                             f"write it as STEP.{key}, e.g. {owners[-1]}.{key}")
        given[owners[0]][name] = value
    steps: list[_Spec] = []
    for i in ids:
        if i.startswith(FILE_PREFIX):
            if original is None:
                raise SweepError(f"{spec.id}: a file: step needs the data set it pairs with")
            steps.append(_file_spec(PerturbationSpec(i), original, data_dir, pair_by, on_ambiguous))
        else:
            steps.append(_registry_spec(PerturbationSpec.make(i, given[i]), repeats, catalogue))
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

    def make(example: QAExample, rng: random.Random) -> _Outcome:
        current, metas, outcome = example, [], None
        for n, st in enumerate(steps):
            step_rng = rng if n == 0 else random.Random(rng.getrandbits(64))
            outcome = st.make(current, step_rng)
            if outcome.status != "ok":
                note = f"step {n + 1} ({st.label}): {outcome.note}"
                return _Outcome(outcome.status, note)
            current = outcome.example
            metas.append(outcome.meta)
        q_changed = current.question != example.question
        c_changed = current.context != example.context
        what = "both" if q_changed and c_changed else ("context" if c_changed else "question")
        reference, hypothesis = ((example.context, current.context) if what == "context"
                                 else (example.question, current.question))
        cer, wer = error_rates(reference, hypothesis)
        return _Outcome("ok", None, current, what, q_changed or c_changed, cer, wer,
                        {"id": spec.id, "steps": metas})

    short = "+".join(FILE_PREFIX + Path(i[len(FILE_PREFIX):]).name if i.startswith(FILE_PREFIX) else i for i in ids)
    return _Spec(spec.id, qualified, canonical_json(qualified), spec_label(short, shown), steps[0].family,
                 fields.pop() if len(fields) == 1 else "both", randomised, repeats if randomised else 1,
                 " then ".join(st.source for st in steps), make,
                 "+".join(st.key_salt for st in steps) if any(st.key_salt for st in steps) else "",
                 pairing=steps[0].pairing, first=steps[0])


def resolve_spec(spec: PerturbationSpec, repeats: int, catalogue, original: Dataset | None,
                 data_dir: str | Path | None = None, *, pair_by: str = "auto",
                 on_ambiguous: str = "error") -> _Spec:
    """A spec resolved: a chain, a challenge file or a registered perturbation. ``pair_by`` and
    ``on_ambiguous``: how a challenge file is read and paired (:func:`_file_spec`)."""
    if spec.is_chain:
        return _chain_spec(spec, repeats, catalogue, original, data_dir, pair_by, on_ambiguous)
    if spec.is_file:
        if original is None:
            raise SweepError(f"{spec.id}: a file spec needs the data set it pairs with")
        return _file_spec(spec, original, data_dir, pair_by, on_ambiguous)
    return _registry_spec(spec, repeats, catalogue)


# ----------------------------------------------------------------------------------------- running


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Unit:
    spec: _Spec
    repeat: int
    example: QAExample
    ex_hash: str
    variant_key: str


@dataclass
class _VariantRecord:
    status: str
    question: str | None
    context_hash: str | None
    golds: list[str]


# What a chunk's steps ask of whoever runs them (see _Runner): the sweep's logic (caches, keys,
# rows, transactions) is the same generator on every backend; only who computes differs.
@dataclass
class ComputeVariants:
    """Compute these units' variants: answer with one :class:`_Outcome` per unit, in order."""

    units: list[_Unit]


@dataclass
class Predict:
    """Answer these (question, context) pairs with ``model``: one Prediction per pair, in order."""

    model: str
    questions: list[str]
    contexts: list[str]


ChunkSteps = Generator[Any, Any, int]   # yields requests, is sent their answers, returns rows written


def context_tagger(engine: Any) -> Callable[[str], str] | None:
    """The engine's ``long_context_tag`` (a long context's window shape, part of its prediction
    key), or None for an engine without one."""
    tag_of = getattr(engine, "long_context_tag", None)
    return tag_of if callable(tag_of) else None


def compute_locally(unit: _Unit, seed: int) -> _Outcome:
    """A unit's variant, computed here with the unit's own RNG (the same on every backend)."""
    return unit.spec.make(unit.example, unit.spec.rng(unit.ex_hash, seed, unit.repeat))


def drive(steps: ChunkSteps, serve: Callable[[Any], Any]) -> int:
    """Run a chunk's steps to the end, answering each request with ``serve``; rows written."""
    try:
        request = next(steps)
        while True:
            request = steps.send(serve(request))
    except StopIteration as stop:
        return stop.value or 0


class _Runner:
    """One execution of a sweep against an open store (see run_sweep).

    :meth:`chunks` yields each chunk of pending work as a generator of steps: it asks for variants
    (:class:`ComputeVariants`) and model answers (:class:`Predict`) it does not find in the caches,
    and ends by writing the chunk in one transaction. The local backend answers the requests in
    this process, one chunk after the other (:func:`drive`); core.sweep_ray answers them on a Ray
    cluster with several chunks in flight. Only the process driving the steps writes the store.
    """

    def __init__(self, store: Store, sweep_id: int, examples: list[QAExample], specs: list[_Spec],
                 fingerprints: dict[str, str], seed: int, run: SweepRun, progress: ProgressFn | None,
                 taggers: Mapping[str, Callable[[str], str] | None] | None = None):
        self.store, self.sweep_id, self.examples, self.specs = store, sweep_id, examples, specs
        self.fingerprints, self.seed, self.run = fingerprints, seed, run
        # model -> its engine's long_context_tag (part of a long context's prediction key)
        self.taggers = dict(taggers or {})
        self.models = list(fingerprints)
        self.progress = progress
        self.hashes = {ex.id: example_hash(ex) for ex in examples}
        # Context texts by hash: the data set's, plus perturbed ones as they are met; and those
        # committed to the store (a chunk writes a new context it uses unless one is committed:
        # with several chunks in flight, the chunk that met it first may not be committed yet).
        self.contexts: dict[str, str] = {text_hash(ex.context): ex.context for ex in examples}
        self.stored_contexts: set[str] = set(self.contexts)

    def _context(self, context_hash: str) -> str:
        if context_hash not in self.contexts:
            self.contexts[context_hash] = self.store.context_text(context_hash)
            self.stored_contexts.add(context_hash)
        return self.contexts[context_hash]

    def _key(self, model: str, question: str, context_hash: str) -> str:
        tag_of = self.taggers.get(model)
        tag = tag_of(self._context(context_hash)) if tag_of is not None else ""
        return prediction_key(model, self.fingerprints[model], question, context_hash, tag)

    def _heartbeat(self) -> None:
        """Inside a chunk's transaction: ``updated_at`` tells a live sweep from a killed one."""
        self.store.conn.execute("UPDATE sweeps SET updated_at = ? WHERE id = ?", (_now(), self.sweep_id))

    def _tick(self) -> None:
        if self.progress:
            self.progress(self.run.done_units, self.run.total_units)

    def _answer(self, model: str, pairs: dict[str, tuple[str, str]]):
        """Steps: best span for each prediction key in ``pairs`` ({key: (question, context_hash)}):
        from the cache, or from ONE batched Predict request for the missing ones. Returns
        ({key: (answer, start, end)}, new prediction rows)."""
        found = {k: (r["answer"], r["span_start"], r["span_end"])
                 for k, r in self.store.fetch_by_keys(
                     "predictions", "key", pairs, "key, answer, span_start, span_end").items()}
        missing = [k for k in pairs if k not in found]
        self.run.predictions_cached += len(pairs) - len(missing)
        rows: list[dict] = []
        if missing:
            questions = [pairs[k][0] for k in missing]
            contexts = [self._context(pairs[k][1]) for k in missing]
            preds = yield Predict(model, questions, contexts)
            self.run.model_calls += 1
            self.run.predictions_computed += len(missing)
            for k, pred in zip(missing, preds):
                best = pred.best
                start, end = (best.start, best.end) if best is not None else (None, None)
                score = float(best.score) if best is not None else None
                found[k] = (pred.text, start, end)
                rows.append({"key": k, "model": model, "fingerprint": self.fingerprints[model],
                             "question": pairs[k][0], "context_hash": pairs[k][1], "answer": pred.text,
                             "span_start": start, "span_end": end, "score": score})
        return found, rows

    def _commit(self, rows_written: int) -> int:
        self.run.done_units += rows_written
        self._tick()
        return rows_written

    def chunks(self, chunk_size: int) -> Iterator[ChunkSteps]:
        """Every chunk of pending work, clean ones first, as steps (see the class doc). The pending
        perturbed units are read from the store when the first perturbed chunk is asked for."""
        yield from self.clean_chunks(chunk_size)
        yield from self.perturbed_chunks(chunk_size)

    # -------------------------------------------------------------------------------- clean

    def clean_chunks(self, chunk_size: int) -> Iterator[ChunkSteps]:
        done = {(r[0], r[1]) for r in self.store.conn.execute(
            "SELECT model, example_hash FROM clean_results WHERE sweep_id = ?", (self.sweep_id,))}
        pending = [ex for ex in self.examples
                   if any((m, self.hashes[ex.id]) not in done for m in self.models)]
        for start in range(0, len(pending), chunk_size):
            yield self._clean_chunk(pending[start:start + chunk_size], done)

    def _clean_chunk(self, chunk: list[QAExample], done: set) -> ChunkSteps:
        predictions, results = [], []
        for model in self.models:
            todo = [ex for ex in chunk if (model, self.hashes[ex.id]) not in done]
            pairs = {}
            for ex in todo:
                ch = text_hash(ex.context)
                pairs[self._key(model, ex.question, ch)] = (ex.question, ch)
            answers, rows = yield from self._answer(model, pairs)
            predictions += rows
            for ex in todo:
                k = self._key(model, ex.question, text_hash(ex.context))
                em, f1 = score_answer(answers[k][0], ex.answer_texts, ex.lang)
                results.append({"sweep_id": self.sweep_id, "model": model,
                                "example_hash": self.hashes[ex.id], "prediction_key": k,
                                "em": em, "f1": f1})
        with self.store.transaction():
            self.store.insert_many("predictions", predictions)
            self.store.insert_many("clean_results", results)
            self._heartbeat()
        return self._commit(len(results))

    # ----------------------------------------------------------------------------- perturbed

    def units(self) -> list[_Unit]:
        return [_Unit(s, r, ex, self.hashes[ex.id], s.variant_key(self.hashes[ex.id], self.seed, r))
                for s in self.specs for r in range(s.repeats) for ex in self.examples]

    def perturbed_chunks(self, chunk_size: int) -> Iterator[ChunkSteps]:
        done = {tuple(r) for r in self.store.conn.execute(
            "SELECT model, perturbation, params_json, repeat, example_hash FROM results "
            "WHERE sweep_id = ?", (self.sweep_id,))}

        def missing_models(u: _Unit) -> list[str]:
            return [m for m in self.models
                    if (m, u.spec.id, u.spec.params_json, u.repeat, u.ex_hash) not in done]

        pending = [(u, mm) for u in self.units() if (mm := missing_models(u))]
        for start in range(0, len(pending), chunk_size):
            yield self._perturbed_chunk(pending[start:start + chunk_size])

    def _perturbed_chunk(self, chunk: list[tuple[_Unit, list[str]]]) -> ChunkSteps:
        cached = self.store.fetch_by_keys(
            "variants", "key", [u.variant_key for u, _ in chunk],
            "key, status, question, context_hash, answers_json")
        records: dict[str, _VariantRecord] = {}
        for u, _ in chunk:
            row = cached.get(u.variant_key)
            if row is not None and u.variant_key not in records:
                golds = [a[0] for a in json.loads(row["answers_json"])] if row["answers_json"] else []
                records[u.variant_key] = _VariantRecord(row["status"], row["question"], row["context_hash"], golds)
                self.run.variants_cached += 1
        todo = list({u.variant_key: u for u, _ in chunk if u.variant_key not in records}.values())
        outcomes = (yield ComputeVariants(todo)) if todo else []
        new_variants: list[dict] = []
        new_contexts: dict[str, str] = {}
        for u, outcome in zip(todo, outcomes):
            self.run.variants_computed += 1
            row_out = {"key": u.variant_key, "perturbation": u.spec.id, "params_json": u.spec.params_json,
                       "seed": self.seed if u.spec.randomised else None,
                       "repeat": u.repeat if u.spec.randomised else 0, "example_hash": u.ex_hash,
                       "status": outcome.status, "note": outcome.note, "field": None, "question": None,
                       "context_hash": None, "answers_json": None, "changed": None, "cer": None,
                       "wer": None, "meta_json": None}
            if outcome.status == "ok":
                v = outcome.example
                if not v.answers:
                    outcome = _Outcome("error", "the perturbed example has no gold answer")
                    row_out.update(status="error", note=outcome.note)
                else:
                    ch = text_hash(v.context)
                    self.contexts.setdefault(ch, v.context)
                    if ch not in self.stored_contexts:
                        new_contexts[ch] = v.context
                    row_out.update(field=outcome.field, question=v.question, context_hash=ch,
                                   answers_json=_answers_json(v.answers), changed=int(bool(outcome.changed)),
                                   cer=_finite(outcome.cer), wer=_finite(outcome.wer),
                                   meta_json=canonical_json(outcome.meta))
            new_variants.append(row_out)
            records[u.variant_key] = _VariantRecord(
                row_out["status"], row_out["question"], row_out["context_hash"],
                [a.text for a in outcome.example.answers] if row_out["status"] == "ok" else [])

        predictions, results = [], []
        for model, fp in self.fingerprints.items():
            mine = [u for u, models in chunk if model in models]
            pairs = {}
            for u in mine:
                rec = records[u.variant_key]
                if rec.status == "ok":
                    pairs[self._key(model, rec.question, rec.context_hash)] = (rec.question, rec.context_hash)
            answers, rows = (yield from self._answer(model, pairs)) if pairs else ({}, [])
            predictions += rows
            for u in mine:
                rec = records[u.variant_key]
                row = {"sweep_id": self.sweep_id, "model": model, "perturbation": u.spec.id,
                       "params_json": u.spec.params_json, "repeat": u.repeat, "example_hash": u.ex_hash,
                       "variant_key": u.variant_key, "status": rec.status, "prediction_key": None,
                       "em": None, "f1": None}
                if rec.status == "ok":
                    k = self._key(model, rec.question, rec.context_hash)
                    em, f1 = score_answer(answers[k][0], rec.golds, u.example.lang)
                    row.update(prediction_key=k, em=em, f1=f1)
                results.append(row)
        with self.store.transaction():
            self.store.insert_many("contexts", [{"hash": h, "text": t} for h, t in new_contexts.items()])
            self.store.insert_many("variants", new_variants)
            self.store.insert_many("predictions", predictions)
            self.store.insert_many("results", results)
            self._heartbeat()
        self.stored_contexts.update(new_contexts)
        return self._commit(len(results))


def _finite(x: float | None) -> float | None:
    return x if x is not None and x == x and abs(x) != float("inf") else None


def _open_store(db: str | Path | Store) -> tuple[Store, bool]:
    return (db, False) if isinstance(db, Store) else (Store(db), True)


@dataclass
class SweepInputs:
    """A sweep's configuration resolved against its data and the perturbation catalogue (no model
    yet): what every backend plans from (:func:`resolve_inputs`, then :func:`plan_sweep`)."""

    config: SweepConfig
    models: list[str]
    full: Dataset
    examples: list[QAExample]
    specs: list[_Spec]


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
    models = list(dict.fromkeys(config.models))
    if not models:
        raise SweepError("no models given")
    if catalogue is None:
        from core.perturb import registry

        catalogue = registry.get

    full = dataset if dataset is not None else load_dataset(
        config.dataset, data_dir, lang=config.lang, on_ambiguous=config.on_ambiguous)
    scorable = [ex for ex in full.examples if ex.answers and not ex.is_impossible]
    examples = sample_examples(scorable, config.sample, config.seed)
    if not examples:
        raise SweepError(f"dataset {config.dataset!r} has no example with a gold answer")

    specs_in: list[PerturbationSpec] = []
    for s in config.perturbations:
        specs_in.extend(parse_specs(s) if isinstance(s, str) else [s])
    if not specs_in:
        raise SweepError("no perturbations given")
    specs: list[_Spec] = []
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
        "format": FORMAT, "dataset": config.dataset, "examples_hash": _sha(*hashes),
        "n_examples": len(examples), "sample": config.sample, "seed": config.seed,
        "repeats": config.repeats, "dropped_no_gold": len(inputs.full.examples) - len(
            [ex for ex in inputs.full.examples if ex.answers and not ex.is_impossible]),
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


def execute_plan(plan: SweepPlan, db: str | Path | Store, run_chunks: Callable[[_Runner], bool], *,
                 t0: float, progress: ProgressFn | None = None,
                 on_start: Callable[[SweepRun], None] | None = None,
                 taggers: Mapping[str, Callable[[str], str] | None] | None = None) -> SweepRun:
    """Create or resume the planned sweep in ``db`` and let ``run_chunks(runner)`` do its chunks
    (True when all were done, False when cancelled); records the final status either way."""
    inputs = plan.inputs
    store, owned = _open_store(db)
    try:
        sweep_id = _create_or_resume(store, plan.name, plan.cfg_hash, plan.cfg_json, inputs.config.dataset,
                                     inputs.examples, plan.hashes, inputs.specs, inputs.models,
                                     plan.fingerprints, plan.total)
        already = store.done_units(sweep_id)
        run = SweepRun(sweep_id, plan.name, "running", plan.total, already, already)
        runner = _Runner(store, sweep_id, inputs.examples, inputs.specs, plan.fingerprints,
                         inputs.config.seed, run, progress, taggers)
        if on_start is not None:
            on_start(run)
        runner._tick()
        try:
            finished = run_chunks(runner)
        except BaseException as e:
            status = "cancelled" if isinstance(e, KeyboardInterrupt) else "failed"
            store.set_status(sweep_id, status, f"{type(e).__name__}: {e}"[:500], _now())
            raise
        run.status = "done" if finished else "cancelled"
        store.set_status(sweep_id, run.status, None, _now())
        run.done_units = store.done_units(sweep_id)
        run.elapsed_s = time.perf_counter() - t0
        return run
    finally:
        if owned:
            store.close()


def run_sweep(config: SweepConfig, engines: Mapping[str, Any], db: str | Path | Store = DEFAULT_DB, *,
              dataset: Dataset | None = None, data_dir: str | Path | None = None,
              progress: ProgressFn | None = None, cancel: threading.Event | None = None,
              chunk_size: int = 256, catalogue: Callable[[str], Any] | None = None,
              on_start: Callable[[SweepRun], None] | None = None) -> SweepRun:
    """Run (or resume, or finish) a sweep; every result lands in the database ``db``.

    ``engines``: {model name: engine} for every name in ``config.models``. ``dataset``: an already
    loaded data set (else :func:`load_dataset` resolves ``config.dataset``). ``progress(done,
    total)`` is called after each committed chunk, counting result rows (clean + perturbed, all
    models); ``cancel`` is checked between chunks: when set the sweep stops with status
    'cancelled' and a later call resumes it. ``catalogue``: id -> Perturbation (default: the
    perturbation registry). ``on_start(run)`` is called once, before the first chunk, with the
    sweep's resolved name and totals (a caller that left the name to the default learns it).

    The sweep is identified by ``config.name`` (default: ``<dataset>-<config hash>``): the same
    configuration resumes; a different configuration under an existing name is an error.
    """
    t0 = time.perf_counter()
    if chunk_size < 1:
        raise SweepError(f"chunk_size must be at least 1, got {chunk_size}")
    if config.repeats < 1:
        raise SweepError(f"repeats must be at least 1, got {config.repeats}")
    models = list(dict.fromkeys(config.models))
    if not models:
        raise SweepError("no models given")
    absent = [m for m in models if m not in engines]
    if absent:
        raise SweepError(f"no engine for model(s) {absent}; engines given: {sorted(engines)}")
    engines = {m: engines[m] for m in models}
    inputs = resolve_inputs(config, dataset=dataset, data_dir=data_dir, catalogue=catalogue)
    plan = plan_sweep(inputs, {m: engine_fingerprint(engines[m]) for m in models})

    def serve(request: ComputeVariants | Predict) -> list:
        if isinstance(request, Predict):
            return engines[request.model].predict(request.questions, request.contexts, n_best=1,
                                                  skip_invalid=True)
        return [compute_locally(u, config.seed) for u in request.units]

    def run_chunks(runner: _Runner) -> bool:
        for steps in runner.chunks(chunk_size):
            if cancel is not None and cancel.is_set():
                steps.close()
                return False
            drive(steps, serve)
        return True

    return execute_plan(plan, db, run_chunks, t0=t0, progress=progress, on_start=on_start,
                        taggers={m: context_tagger(engines[m]) for m in models})


def _create_or_resume(store: Store, name: str, cfg_hash: str, cfg_json: str, dataset: str,
                      examples: list[QAExample], hashes: list[str], specs: list[_Spec],
                      models: list[str], fingerprints: dict[str, str], total: int) -> int:
    existing = store.sweep_by_name(name)
    if existing is not None:
        if existing["config_hash"] != cfg_hash:
            raise SweepError(
                f"a sweep named {name!r} already exists with a different configuration (data, "
                "sample, seed, repeats, perturbations or model weights differ); choose another "
                "name, or drop the name to get one derived from the configuration")
        store.set_status(int(existing["id"]), "running", None, _now())
        return int(existing["id"])
    now = _now()
    with store.transaction() as conn:
        store.insert_many("contexts", [{"hash": h, "text": t} for h, t in
                                       {text_hash(ex.context): ex.context for ex in examples}.items()])
        store.insert_many("examples", [
            {"hash": h, "id": ex.id, "title": ex.title, "lang": ex.lang, "question": ex.question,
             "context_hash": text_hash(ex.context), "answers_json": _answers_json(ex.answers)}
            for ex, h in zip(examples, hashes)])
        cur = conn.execute(
            "INSERT INTO sweeps (name, config_hash, config_json, dataset, n_examples, total_units, "
            "status, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?)",
            (name, cfg_hash, cfg_json, dataset, len(examples), total, now, now))
        sweep_id = int(cur.lastrowid)
        store.set_owner(sweep_id)   # this process: a reader tells a killed sweep from a live one
        store.insert_many("sweep_examples", [{"sweep_id": sweep_id, "example_hash": h, "position": i}
                                             for i, h in enumerate(hashes)])
        store.insert_many("sweep_models", [{"sweep_id": sweep_id, "model": m, "fingerprint": fingerprints[m],
                                            "position": i} for i, m in enumerate(models)])
        store.insert_many("sweep_specs", [
            {"sweep_id": sweep_id, "perturbation": s.id, "params_json": s.params_json, "label": s.label,
             "family": s.family, "field": s.field, "randomised": int(s.randomised), "repeats": s.repeats,
             "source": s.source, "position": i} for i, s in enumerate(specs)])
    return sweep_id


# ---------------------------------------------------------------------------------------------- CLI


PROG = "python -m core.sweep"


def _build_parser() -> argparse.ArgumentParser:
    ap = cli.ArgumentParser(
        prog=PROG,
        description="Evaluate QA models under question/context perturbations over a data set. "
                    "Re-run the same command to resume an interrupted sweep.")
    ap.add_argument("--dataset", help="file path, demo.<lang>, or a path under the data dir "
                                      "(e.g. xquad/xquad.en)")
    ap.add_argument("--perturbations", help="comma-separated: ID, ID:key=1..4, file:PATH, family:NAME")
    ap.add_argument("--models", help="comma-separated model names from the model registry (models.toml)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each randomised perturbation (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="base seed for sampling and perturbing (default 0)")
    ap.add_argument("--sample", type=int, default=None, help="use a seeded sample of N examples")
    ap.add_argument("--name", default=None, help="sweep name (default: <dataset>-<config hash>)")
    ap.add_argument("--db", default=DEFAULT_DB, help=f"SQLite results file (default {DEFAULT_DB})")
    ap.add_argument("--data-dir", default=None, help="data directory (default: QAX_DATA_DIR or ../shared/data)")
    ap.add_argument("--chunk-size", type=int, default=256, help="units per committed chunk (default 256)")
    ap.add_argument("--batch-size", type=int, default=None, help="engine batch size")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads for the engines (0: torch's choice)")
    ap.add_argument("--backend", default="local", metavar="{local,ray}",
                    help="where the sweep runs: local (this process, the default) or ray (a Ray cluster, see "
                         "--address and --workers; core.sweep_ray). The forward-pass names torch, onnx and "
                         "onnx-int8 are still accepted here and mean --engine-backend")
    ap.add_argument("--engine-backend", default=None, help="forward pass: torch, onnx (ONNX Runtime fp32) or "
                                                           "onnx-int8 (default torch); part of the prediction cache key")
    ap.add_argument("--address", default=None, help="with --backend ray: the cluster to join (printed by `ray start "
                                                    "--head`, or auto); default: start a local Ray")
    ap.add_argument("--workers", type=int, default=None, help="with --backend ray: workers (one actor per model "
                                                              "each; default: the cluster's GPUs, else its CPUs)")
    ap.add_argument("--metric", choices=("f1", "em"), default="f1", help="metric of the printed table")
    ap.add_argument("--list", action="store_true", help="list the sweeps stored in --db and exit")
    ap.add_argument("--show", metavar="NAME", help="print the table of a stored sweep and exit")
    ap.add_argument("--compare", metavar="A,B", help="with --show: model B - model A in F1 per spec, with a 95%% "
                                                     "paired-bootstrap interval over examples")
    ap.add_argument("--repair", action="store_true", help="with --show: NoiseQA's question repair table (each "
                    "A+repair_Q spec against A, gain with a 95%% paired-bootstrap interval)")
    ap.add_argument("--slice", metavar="NAME", help="with --show: the table per slice group: wh, answer, qlen, "
                                                    "clen, overlap or cer (N per cell)")
    ap.add_argument("--calibration", action="store_true", help="with --show: answer scores clean vs perturbed "
                    "and the abstention threshold that keeps 90%% of clean F1")
    ap.add_argument("--list-perturbations", action="store_true", help="list registered perturbations and exit")
    cli.add_loader_options(ap, pairing=True)
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def _backends(args: argparse.Namespace) -> tuple[str, str]:
    """(where the sweep runs, the forward pass) from --backend and --engine-backend. --backend
    named the forward pass before the Ray backend existed: those names still mean it."""
    from core.qa.onnx_backend import BACKENDS

    where, engine = args.backend, args.engine_backend
    if where in BACKENDS:
        if engine is not None and engine != where:
            raise cli.CLIError(f"--backend {where} (the old spelling of --engine-backend) contradicts "
                               f"--engine-backend {engine}")
        where, engine = "local", where
    if where not in ("local", "ray"):
        raise cli.CLIError(f"--backend must be one of local, ray, {', '.join(BACKENDS)}, got {where!r}")
    if engine is not None and engine not in BACKENDS:
        raise cli.CLIError(f"--engine-backend must be one of {', '.join(BACKENDS)}, got {engine!r}")
    if where != "ray":
        given = [flag for flag, value in (("--address", args.address), ("--workers", args.workers)) if value is not None]
        if given:
            raise cli.CLIError(f"{' and '.join(given)} go with --backend ray")
    if args.workers is not None and args.workers < 1:
        raise cli.CLIError(f"--workers must be at least 1, got {args.workers}")
    return where, engine or "torch"


@cli.command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Bad input (flags, settings, names, files, a database that is not a sweep store) ends in one
    line on stderr and exit status 2 (core.cli), before anything is written."""
    from core import sweep_report as report

    args = _build_parser().parse_args(argv)
    if args.list_perturbations:
        from core.perturb import registry

        for p in registry.all_perturbations():
            kind = "randomised" if p.randomised else "deterministic"
            print(f"{p.id:22s} {p.family:12s} {p.field:9s} {kind:13s} {p.default_params}")
        return 0
    views = [flag for flag, on in (("--compare", args.compare), ("--repair", args.repair),
                                   ("--slice", args.slice), ("--calibration", args.calibration)) if on]
    if views and not args.show:
        raise cli.CLIError(f"{views[0]} goes with --show NAME")
    if len(views) > 1:
        raise cli.CLIError(f"choose one of {', '.join(views)}")
    if args.slice:
        from core.sweep_slices import SLICES

        if args.slice not in SLICES:
            raise cli.CLIError(f"unknown slice {args.slice!r}; slices: {', '.join(SLICES)}")
    if (args.list or args.show) and Path(args.db).is_dir():
        raise cli.CLIError(f"{args.db} is a folder, not a sweep database")
    if (args.list or args.show) and not Path(args.db).is_file():
        if args.list:
            print(f"no sweep database at {args.db}")
            return 0
        raise cli.CLIError(f"no sweep database at {args.db}: cannot show {args.show!r}")
    # Reading never writes: an old store is not upgraded, a foreign file is refused untouched.
    if args.list:
        with Store(args.db, readonly=True) as store:
            print(report.format_sweep_list(report.list_sweeps(store)))
        return 0
    if args.show:
        with Store(args.db, readonly=True) as store:
            if args.compare:
                models = [m.strip() for m in args.compare.split(",")]
                if len(models) != 2:
                    raise cli.CLIError("--compare takes two model names, A,B")
                rows = report.model_differences(store, args.show, *models)
                print(report.format_differences(rows, *models))
            elif args.repair:
                from core.sweep_repair import format_repair_table, repair_table

                print(format_repair_table(repair_table(store, args.show)))
            elif args.slice:
                from core.sweep_slices import format_slice, slice_cells

                print(format_slice(slice_cells(store, args.show, args.slice), args.slice, metric=args.metric))
            elif args.calibration:
                from core.sweep_calibration import calibration_table, format_calibration

                print(format_calibration(calibration_table(store, args.show)))
            else:
                print(report.format_report(store, args.show, metric=args.metric))
        return 0
    missing = [flag for flag, value in (("--dataset", args.dataset), ("--perturbations", args.perturbations),
                                        ("--models", args.models)) if not value]
    if missing:
        raise cli.CLIError(f"{', '.join(missing)} required (or use --list / --show)")
    # Settings first: a bad one must stop the run before a model loads or the database opens, so
    # it can never leave empty predictions in the shared prediction cache.
    where, engine_backend = _backends(args)
    settings = cli.engine_settings(batch_size=args.batch_size, threads=args.threads or None, backend=engine_backend)
    for flag, value in (("--repeats", args.repeats), ("--chunk-size", args.chunk_size), ("--sample", args.sample)):
        if value is not None and value < 1:
            raise cli.CLIError(f"{flag} must be at least 1, got {value}")
    specs = parse_specs(args.perturbations)
    model_names = [m.strip() for m in args.models.split(",") if m.strip()]
    from core.perturb import registry as perturbations
    from core.qa.registry import get_entry, load_engine  # lazy: torch and transformers load here

    # Data set, perturbation ids and parameters, model names: all known before the first (slow)
    # model load, so a typo costs a second, not a model load, and prints nothing else.
    dataset = load_dataset(args.dataset, args.data_dir, **cli.loader_kwargs(args))
    print(dataset.load_line(), flush=True)
    for spec in specs:
        # each challenge file is read and paired now too: a refusal costs no model load
        resolved = resolve_spec(spec, args.repeats, perturbations.get, dataset, args.data_dir,
                                pair_by=args.pair_by, on_ambiguous=args.on_ambiguous)
        if resolved.pairing is not None:
            print(f"{spec.id}: {resolved.pairing.summary()}", flush=True)
    for name in model_names:
        get_entry(name)
    from core.sqlite_db import sqlite_kind

    if sqlite_kind(args.db) in ("directory", "other"):
        with Store(args.db):  # refuses a folder or a non-SQLite file untouched: now, not after loading
            pass
    # Each engine is loaded with these settings (the registry caches per settings) instead of
    # changing the settings of a shared cached engine after the fact. On Ray the actors load them.
    engines = {name: load_engine(name, settings) for name in model_names} if where == "local" else {}
    config = SweepConfig(args.dataset, specs, model_names, repeats=args.repeats, seed=args.seed,
                         sample=args.sample, name=args.name, pair_by=args.pair_by,
                         on_ambiguous=args.on_ambiguous, lang=args.lang)
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=0, unit="row", desc="sweep", dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.n = done
            bar.refresh()

    try:
        if where == "ray":
            from core.sweep_ray import run_sweep_ray

            run = run_sweep_ray(config, args.db, settings=settings, address=args.address, workers=args.workers,
                                dataset=dataset, data_dir=args.data_dir, progress=progress,
                                chunk_size=args.chunk_size, shutdown=True)
        else:
            run = run_sweep(config, engines, args.db, dataset=dataset, data_dir=args.data_dir,
                            progress=progress, chunk_size=args.chunk_size)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        print("\ninterrupted: everything committed so far is kept; re-run the same command to resume",
              file=sys.stderr)
        return 130
    except BaseException:
        if bar is not None:
            bar.close()  # the progress bar's line ends before the error's (core.cli prints it)
        raise
    if bar is not None:
        bar.close()
    print(f"sweep {run.name!r}: {run.status}, {run.done_units}/{run.total_units} rows "
          f"({run.resumed_units} resumed), {run.predictions_computed} predictions computed, "
          f"{run.predictions_cached} from cache, {run.model_calls} model calls, {run.elapsed_s:.1f} s")
    with Store(args.db) as store:
        print(report.format_report(store, run.sweep_id, metric=args.metric))
    if run.status == "done":   # so that Heatmaps opens it at once (core/sweep_aggregates.py)
        from core import sweep_aggregates

        sweep_aggregates.store(args.db, run.sweep_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
