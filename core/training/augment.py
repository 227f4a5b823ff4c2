"""Noise augmentation for training (NoiseQA §4.2, Gan & Ng §4.2): ``--augment-share 0.3
--augment keyboard_Q,...`` adds that share of training questions again, perturbed by the
project's own perturbations, each entry in the sweep's spec syntax with an optional relative
``weight``. Reproducible: the same examples, share, entries and seed give the same questions.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict
from pathlib import Path

from core.types import Answer, QAExample

__all__ = ["parse_augment_spec", "augment_examples", "augment_once"]


def parse_augment_spec(spec: str) -> tuple[list[tuple[str, dict]], list[float] | None]:
    """``--augment`` as (perturbation id, params) pairs and optional relative weights.

    The entries use the sweep's spec syntax (:func:`core.perturb.spec.parse_specs`: ``ID``,
    ``ID:key=value[:key=value...]``, typed values, ``a..b`` ranges and ``x|y`` lists, chains
    ``A+B``), plus one extra key, ``weight``: the entry's relative share. Without any weight every entry is equally
    likely (None), as in the first noise-augmented runs; a weight lets a slow perturbation
    (TTS -> ASR, ~1-2 s a question on one core) take a small share. Ids and parameters are checked
    here, before a model is loaded.

    >>> parse_augment_spec("keyboard_Q,misspell_Q")
    ([('keyboard_Q', {}), ('misspell_Q', {})], None)
    >>> parse_augment_spec("asr_Q:engine=whisper-base:voice=flite:kal16:weight=1, "
    ...                    "keyboard_Q:p=0.1:weight=4.5,misspell_Q")  # doctest: +NORMALIZE_WHITESPACE
    ([('asr_Q', {'engine': 'whisper-base', 'voice': 'flite:kal16'}), ('keyboard_Q', {'p': 0.1}), ('misspell_Q',
    {})], [1.0, 4.5, 1.0])
    >>> parse_augment_spec("TLQ+keyboard_Q:p=0.5:weight=2")
    ([('TLQ+keyboard_Q', {'p': 0.5})], [2.0])
    >>> parse_augment_spec("asr_Q:weight=-1")
    Traceback (most recent call last):
    ...
    ValueError: --augment: weight of 'asr_Q' must be a positive number, not -1
    >>> parse_augment_spec("asr_Q:engin=whisper-base")
    Traceback (most recent call last):
    ...
    ValueError: --augment: asr_Q: unknown parameter(s) ['engin']; accepted: ['engine', 'voice']
    """
    from core.perturb import compose, registry
    from core.perturb.base import PerturbationError
    from core.perturb.spec import PerturbationSpec, SpecError, parse_specs

    registry.load_all()
    try:
        specs = parse_specs(spec)
    except SpecError as exc:
        raise ValueError(f"--augment: {exc}") from exc
    entries: list[tuple[str, dict]] = []
    weights: list[float] = []
    for s in specs:
        if s.is_file:
            raise ValueError(f"--augment: {s.id} is a challenge set, not a perturbation")
        params = s.params_dict
        weight = params.pop("weight", None)
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0):
            raise ValueError(f"--augment: weight of {s.id!r} must be a positive number, not {weight!r}")
        try:
            perturbation, apply_params = compose.build(PerturbationSpec.make(s.id, params))
            perturbation.resolve_params(apply_params)
        except (KeyError, PerturbationError, SpecError) as exc:
            raise ValueError(f"--augment: {exc.args[0] if exc.args else exc}") from exc
        entries.append((s.id, params))
        weights.append(None if weight is None else float(weight))
    if all(w is None for w in weights):
        return entries, None
    return entries, [1.0 if w is None else w for w in weights]


def augment_examples(examples: list[QAExample], share: float, ids: list, rng: random.Random,
                     weights: list[float] | None = None, log=print):
    """Add ``share`` x len(examples) perturbed copies (question-only perturbations).

    ``ids`` are perturbation ids or (id, params) pairs (:func:`parse_augment_spec`; a chain id
    ``A+B`` with its flat parameters becomes a core.perturb.compose.Composite). Each sampled
    question gets one perturbation, drawn uniformly (``weights`` None, the rule of the first
    augmented runs, kept so their commands still reproduce) or by ``weights``. Perturbations that
    translate in batches (``prepare``) see all sampled questions first, so round-trip MT is two
    Apertium calls rather than one per question; progress is logged for slow ones (TTS -> ASR).
    Returns the new examples and how many each entry made.
    """
    from core.perturb import compose, registry
    from core.perturb.spec import PerturbationSpec, spec_label
    from core.speech.asr import ASRError
    from core.speech.tts import TTSError
    from core.translate.translators import TranslationError

    registry.load_all()
    entries = [(i, {}) if isinstance(i, str) else (i[0], dict(i[1])) for i in ids]
    choices = [compose.build(PerturbationSpec.make(i, params)) for i, params in entries]
    labels = [spec_label(i, params) for i, params in entries]
    k = int(round(share * len(examples)))
    sample = rng.sample(examples, k)
    for p, params in choices:
        p.prepare([ex for ex in sample if p.why_not(ex, params) is None], **params)
    added: list[QAExample] = []
    per_id = {label: 0 for label in labels}
    started = time.time()
    for n, ex in enumerate(sample, 1):
        index = rng.randrange(len(choices)) if weights is None else rng.choices(range(len(choices)), weights=weights)[0]
        p, params = choices[index]
        if p.why_not(ex, params) is None:
            try:
                variants = p.apply(ex, rng, **params)
            except (TTSError, ASRError, TranslationError) as exc:   # e.g. a question with nothing to speak
                log(f"augmentation skipped {ex.id} ({labels[index]}): {exc}")
                variants = None
            if variants and variants[0].example.question.strip():   # an empty ASR transcript teaches nothing
                added.append(variants[0].example)
                per_id[labels[index]] += 1
        if n % 1000 == 0:
            log(f"augmented {n}/{k} questions ({time.time() - started:.0f} s; {per_id})")
    return added, per_id


def augment_once(saved: Path, examples: list[QAExample], share: float, ids: list, rng: random.Random,
                 weights: list[float] | None = None, log=print):
    """:func:`augment_examples`, kept in ``saved`` (the run's folder) so a resumed run reads its
    perturbed questions back instead of making them again (WordNet lookups and Apertium round trips
    for every sampled question, the slowest part of a resume; figures in docs/results). The file
    holds a key of everything that decides the questions (the clean questions, share, entries,
    weights and the generator's state); a different key makes them afresh and replaces it.

    >>> import tempfile
    >>> ex = [QAExample("q1", "Who gave up just 308 points?", "They gave up 308 points.", (Answer("308", 13),))]
    >>> folder = Path(tempfile.mkdtemp())
    >>> a, n = augment_once(folder / "augmented.json", ex, 1.0, ["drop_punct_Q"], random.Random(1), log=print)
    >>> b, m = augment_once(folder / "augmented.json", ex, 1.0, ["drop_punct_Q"], random.Random(1), log=print)
    augmentation read back from augmented.json (1 questions)
    >>> (a, n) == (b, m), b[0].question, b[0].answers
    (True, 'Who gave up just 308 points', (Answer(text='308', answer_start=13),))
    """
    from core.io.outputs import write_text_atomic

    key = hashlib.sha256(json.dumps(
        [[(e.id, e.question) for e in examples], share, [i if isinstance(i, str) else [i[0], i[1]] for i in ids],
         weights, rng.getstate()], sort_keys=True, default=str).encode()).hexdigest()
    if saved.exists():
        stored = json.loads(saved.read_text(encoding="utf-8"))
        if stored.get("key") == key:
            added = [QAExample(**{**e, "answers": tuple(Answer(**a) for a in e["answers"])})
                     for e in stored["examples"]]
            log(f"augmentation read back from {saved.name} ({len(added)} questions)")
            return added, stored["counts"]
    added, per_id = augment_examples(examples, share, ids, rng, weights, log)
    write_text_atomic(saved, json.dumps({"key": key, "counts": per_id, "examples": [asdict(e) for e in added]}))
    return added, per_id
