"""Synthetic against natural noise: does synthetic noise flip the answers that natural speech flips?

NoiseQA asks whether its synthetic challenge sets stand in for the natural ones. On the questions
a speech trial recorded (:mod:`core.collect.trials`), each model answers the typed question (the
*clean* answer) and the question under each *condition*:

* ``natural:<engine>``: the speaker's latest recording, as that ASR engine transcribed it (the
  trial store's transcript);
* ``tts:<voice>><engine>``: the same question spoken by a TTS voice and transcribed by that ASR
  engine (the catalogue's ``asr_Q`` perturbation, deterministic, cached on disk per question,
  voice and engine by :mod:`core.speech.noise`);
* ``keyboard:p=<p>``: NoiseQA's synthetic keyboard noise (``keyboard_Q``, p = 0.25 as in the
  seed) drawn with an explicit seed (:func:`core.perturb.spec.rng_for`, repeat 0: the same
  variant a sweep and the Variants page draw). A question it cannot change stays as typed.

**Flip** (our definition; the seed leaves it open): the answer under the condition differs from
the clean answer after the language's SQuAD EM normalisation (:func:`core.metrics.predictions_differ`,
DPR's notion of a changed prediction, the same one the backend axis uses). It does not look at the
gold answer: a flip is the interface changing the answer, right or wrong. An empty transcript
(the recogniser heard nothing) is an empty answer, so it flips every non-empty clean answer.

**Agreement** of two conditions (per model): Cohen's kappa of their flip vectors over the
questions, the raw agreement, the 2x2 counts, and a percentile bootstrap interval (questions
resampled with replacement, ``numpy.random.default_rng(seed)``). Kappa is *undefined* when a
vector is constant (a condition that flips no question, or every one): chance agreement then
explains all the agreement there is (kappa is 0/0, or 0 by construction), so the row says so
instead of a number; bootstrap resamples where either vector is constant are left out of the
interval and counted. Beside kappa, the two-sided p of Fisher's exact test on the 2x2 table
(``scipy.stats.fisher_exact``): whether the flips are associated at all, exact at any size.

**No interval with too few flips** (our rule, :func:`why_no_interval`): the percentile bootstrap
cannot make a cell the sample does not have, so with an empty cell (no shared flip, say) every
resample keeps it empty and the interval sits on one side of 0 by construction (4 and 3 flips of
30, none shared: kappa -0.13 "[-0.22, -0.05]", while Fisher's p is 1.0); with a handful of flips it
is as fragile. The interval is withheld, and the row says why, when a cell is empty or a condition
flips, or leaves unflipped, fewer than :data:`MIN_FLIPS` questions (the classic "at least 5 per
cell" rule of thumb for a 2x2 table).

Nothing here imports streamlit. ``python -m core.collect.agreement`` is the command line.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.collect.trials import Trial, TrialError
from core.metrics import predictions_differ
from core.types import QAExample

__all__ = ["DEFAULT_VOICE", "KEYBOARD_P", "N_BOOT", "AgreementError", "Agreement", "kappa", "kappa_counts",
           "kappa_interval", "kappa_halfwidth", "fisher_p", "why_no_interval", "MIN_FLIPS", "p_label",
           "recorded_examples", "natural_condition", "tts_condition",
           "keyboard_condition", "trial_conditions", "compare", "kappa_label", "flip_rates", "kappa_matrix",
           "matrix_notes", "trial_or_error"]

DEFAULT_VOICE = "flite:kal16"   # the asr_Q perturbation's default voice
KEYBOARD_P = 0.25               # NoiseQA's synthetic keyboard rate (SEEDS.md §1)
N_BOOT = 1000
LEVEL = 0.95
MIN_FLIPS = 5                   # flips and non-flips per condition for a bootstrap interval (our rule)

Progress = Callable[[int, int, str], None]


class AgreementError(ValueError):
    """A comparison that cannot be made (no recorded question, an unknown engine, ...)."""


# ------------------------------------------------------------------------------------ kappa


def kappa_counts(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int, int, int]:
    """The 2x2 table of two flip vectors: (both flip, only a, only b, neither).

    >>> kappa_counts([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    (2, 1, 1, 1)
    """
    if len(a) != len(b):
        raise ValueError(f"flip vectors of different lengths: {len(a)} and {len(b)}")
    x, y = np.asarray(a, bool), np.asarray(b, bool)
    return int((x & y).sum()), int((x & ~y).sum()), int((~x & y).sum()), int((~x & ~y).sum())


def _kappa_table(both, only_a, only_b, neither):
    """Cohen's kappa from 2x2 counts (numbers or numpy arrays); NaN where a vector is constant."""
    n = both + only_a + only_b + neither
    p_a, p_b = (both + only_a) / n, (both + only_b) / n        # each condition's flip rate
    p_o = (both + neither) / n                                  # observed agreement
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)                     # agreement by chance
    constant = (p_a * (1 - p_a) == 0) | (p_b * (1 - p_b) == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(constant, np.nan, (p_o - p_e) / np.where(constant, 1, 1 - p_e))


def kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two flip vectors, ``(p_o - p_e) / (1 - p_e)``; None when either is constant.

    On the table both=20, only a=5, only b=10, neither=65: p_o = 0.85, p_e = 0.25*0.30 + 0.75*0.70
    = 0.60, kappa = 0.25/0.40 = 0.625.

    >>> a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 65
    >>> b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 65
    >>> round(kappa(a, b), 6)
    0.625
    >>> kappa([0, 0, 0], [1, 0, 1]) is None
    True
    """
    if not len(a):
        return None
    value = float(_kappa_table(*kappa_counts(a, b)))
    return None if math.isnan(value) else value


def kappa_interval(a: Sequence[bool], b: Sequence[bool], seed: int, n_boot: int = N_BOOT,
                   level: float = LEVEL) -> tuple[float | None, float | None, int]:
    """Percentile bootstrap interval of :func:`kappa`: questions resampled with replacement
    ``n_boot`` times by ``numpy.random.default_rng(seed)``. Returns (low, high, resamples left
    out because a vector was constant in them); (None, None, n) when fewer than half remain.

    >>> a, b = [1, 1, 0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 1, 0, 1]
    >>> kappa_interval(a, b, seed=0) == kappa_interval(a, b, seed=0)
    True
    """
    x, y = np.asarray(a, bool), np.asarray(b, bool)
    n = len(x)
    if n == 0 or n_boot < 1:
        return None, None, n_boot
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    xs, ys = x[idx], y[idx]
    values = _kappa_table((xs & ys).sum(1), (xs & ~ys).sum(1), (~xs & ys).sum(1), (~xs & ~ys).sum(1))
    kept = values[~np.isnan(values)]
    left_out = n_boot - len(kept)
    if len(kept) < n_boot / 2:
        return None, None, left_out
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(kept, [tail, 100 - tail])
    return float(low), float(high), left_out


def fisher_p(both: int, only_a: int, only_b: int, neither: int) -> float:
    """Two-sided p of Fisher's exact test on the 2x2 table of two flip vectors (:func:`kappa_counts`):
    how likely flips this associated (or more) are if the conditions flip independently.

    >>> round(fisher_p(0, 4, 3, 23), 6)      # 4 and 3 flips of 30, none shared
    1.0
    >>> round(fisher_p(5, 0, 0, 5), 4)       # the same 5 of 10 flip under both
    0.0079
    """
    from scipy.stats import fisher_exact

    return float(fisher_exact([[both, only_a], [only_b, neither]]).pvalue)


def why_no_interval(a: str, b: str, both: int, only_a: int, only_b: int, neither: int) -> str | None:
    """Why a bootstrap interval of kappa would mislead on this 2x2 table (module docstring), or None.

    >>> why_no_interval("x", "y", 0, 4, 3, 23)
    'too few flips for an interval: 4 and 3 of 30, none shared'
    >>> why_no_interval("x", "y", 0, 6, 5, 19)
    'no interval: no question flips under both x and y, so none does in any resample'
    >>> why_no_interval("x", "y", 3, 6, 5, 16) is None
    True
    """
    n, fa, fb = both + only_a + only_b + neither, both + only_a, both + only_b
    if min(fa, fb) < MIN_FLIPS:
        return f"too few flips for an interval: {fa} and {fb} of {n}, {both or 'none'} shared"
    if min(n - fa, n - fb) < MIN_FLIPS:
        return f"too few questions left unflipped for an interval: {fa} and {fb} of {n} flip"
    empty = {"no question flips under both {a} and {b}": both, "no question flips under {a} only": only_a,
             "no question flips under {b} only": only_b, "every question flips under {a} or {b}": neither}
    for what, count in empty.items():
        if not count:
            return f"no interval: {what.format(a=a, b=b)}, so none does in any resample"
    return None


def kappa_halfwidth(n: int, flip_rate: float, kappa_value: float = 0.5) -> float:
    """About how far a 95% interval reaches either side of kappa for ``n`` questions when both
    conditions flip ``flip_rate`` of them (the large-sample standard error
    ``sqrt(p_o (1 - p_o) / n) / (1 - p_e)``, times 1.96): what a trial's size buys.

    >>> round(kappa_halfwidth(100, 0.2), 2), round(kappa_halfwidth(25, 0.2), 2)
    (0.22, 0.45)
    """
    p_e = flip_rate ** 2 + (1 - flip_rate) ** 2
    p_o = p_e + kappa_value * (1 - p_e)
    return 1.96 * math.sqrt(p_o * (1 - p_o) / n) / (1 - p_e)


def _two(x: float) -> str:
    """Two decimals, never "-0.00"."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text


def p_label(p: float) -> str:
    """A p-value as text: three decimals, or "< 0.001".

    >>> p_label(1.0), p_label(0.00794), p_label(2e-9)
    ('1.000', '0.008', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def kappa_label(row: Mapping[str, Any], short: bool = False) -> str:
    """A kappa row as text: ``0.62 [0.41, 0.80], Fisher p = 0.003`` (no interval where there are
    too few flips for one: the row's note says why), or why there is no kappa (``short``: just
    "undefined", for a matrix cell, and ``p`` for Fisher's p; the reasons go beside the matrix).

    >>> kappa_label({"kappa": 0.625, "low": 0.41, "high": 0.8, "fisher p": 0.0031})
    '0.62 [0.41, 0.80], Fisher p = 0.003'
    >>> kappa_label({"kappa": -0.001, "low": None, "high": None, "fisher p": 1.0}, short=True)
    '0.00 (p 1.000)'
    >>> kappa_label({"kappa": None, "note": "natural:pocketsphinx flips no question"})
    'undefined: natural:pocketsphinx flips no question'
    >>> kappa_label({"kappa": None, "note": "natural:pocketsphinx flips no question"}, short=True)
    'undefined'
    """
    if row.get("kappa") is None:
        return "undefined" if short else f"undefined: {row.get('note', '')}".rstrip(": ")
    ci = "" if row.get("low") is None else f" [{_two(row['low'])}, {_two(row['high'])}]"
    p = row.get("fisher p")
    test = "" if p is None else f" (p {p_label(p)})" if short else f", Fisher p = {p_label(p)}"
    return f"{_two(row['kappa'])}{ci}{test}"


# ------------------------------------------------------------------------------- conditions


def recorded_examples(trial: Trial, engines: Sequence[str]) -> tuple[list[QAExample], list[str]]:
    """The trial's questions with a latest recording transcribed by every engine of ``engines``,
    in trial order, and the ids of the recorded ones left out (some engine did not transcribe them)."""
    kept, left_out = [], []
    for state in trial.states():
        if state.latest is None:
            continue
        (kept if all(e in state.transcripts for e in engines) else left_out).append(state)
    return [s.example for s in kept], [s.example.id for s in left_out]


def natural_condition(trial: Trial, engine: str, examples: Sequence[QAExample]) -> list[str]:
    """Each question as ``engine`` transcribed the speaker's latest recording of it."""
    by_id = {s.example.id: s for s in trial.states()}
    return [by_id[ex.id].transcripts[engine].text for ex in examples]


def tts_condition(examples: Sequence[QAExample], voice: str, engine: str,
                  progress: Progress | None = None) -> list[str]:
    """Each question spoken by ``voice`` and transcribed by ``engine`` (the ``asr_Q`` perturbation)."""
    from core.perturb.compose import build
    from core.perturb.spec import PerturbationSpec, rng_for

    spec = PerturbationSpec.make("asr_Q", {"voice": voice, "engine": engine})
    p, params = build(spec)
    why = p.why_not(examples[0], params) if examples else None
    if why:
        raise AgreementError(f"TTS -> ASR ({voice} -> {engine}) cannot run here: {why}")
    out = []
    for i, ex in enumerate(examples):
        if progress:
            progress(i, len(examples), f"{voice} -> {engine}: question {i + 1} of {len(examples)}")
        variants = p.apply(ex, rng_for(0, ex, spec, 0), **params)   # deterministic: the seed plays no part
        out.append(variants[0].text if variants else ex.question)
    return out


def keyboard_condition(examples: Sequence[QAExample], p: float, seed: int) -> list[str]:
    """Each question with NoiseQA's keyboard noise at rate ``p``, drawn under ``seed`` (repeat 0)."""
    from core.perturb.compose import build
    from core.perturb.spec import PerturbationSpec, rng_for

    spec = PerturbationSpec.make("keyboard_Q", {"p": p})
    pert, params = build(spec)
    out = []
    for ex in examples:
        variants = pert.apply(ex, rng_for(seed, ex, spec, 0), **params)
        out.append(variants[0].text if variants else ex.question)
    return out


def trial_conditions(trial: Trial, natural: Sequence[str], *, tts_engines: Sequence[str] = (),
                     voice: str = DEFAULT_VOICE, keyboard_p: float | None = KEYBOARD_P, seed: int = 0,
                     progress: Progress | None = None) -> tuple[list[QAExample], dict[str, list[str]], list[str]]:
    """(examples, condition name -> the questions under it, ids left out) for a trial: the natural
    transcripts of each engine of ``natural``, TTS -> ASR by ``voice`` and each of ``tts_engines``,
    and keyboard noise (``keyboard_p`` None: none)."""
    from core.speech import asr

    if not natural:
        raise AgreementError(f"trial {trial.id}: no ASR engine's transcripts to compare: transcribe the recordings "
                             "first (Speech trial page, 'Transcribe what is missing') or name engines with --asr")
    for engine in [*natural, *tts_engines]:
        if engine not in asr.ENGINE_NAMES:
            raise AgreementError(f"unknown ASR engine {engine!r}; known: {', '.join(asr.ENGINE_NAMES)}")
    examples, left_out = recorded_examples(trial, natural)
    if not examples:
        raise AgreementError(f"trial {trial.id} has no recorded question transcribed by "
                             f"{', '.join(natural) or 'any engine'}: record and transcribe some first")
    conditions = {f"natural:{e}": natural_condition(trial, e, examples) for e in natural}
    for engine in tts_engines:
        conditions[f"tts:{voice}>{engine}"] = tts_condition(examples, voice, engine, progress)
    if keyboard_p is not None:
        conditions[f"keyboard:p={keyboard_p:g}"] = keyboard_condition(examples, keyboard_p, seed)
    return examples, conditions, left_out


# ---------------------------------------------------------------------------------- compare


@dataclass
class Agreement:
    """What :func:`compare` found: the per-question table (one row per model x question), the
    kappa rows (one per model x pair of conditions) and the settings that made them."""

    conditions: list[str]
    models: list[str]
    rows: list[dict[str, Any]]
    kappas: list[dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "conditions": self.conditions, "models": self.models,
                "flip_rates": flip_rates(self), "kappa": self.kappas, "questions": self.rows}


def _answers(engine: Any, questions: Sequence[str], contexts: Sequence[str],
             reached: Callable[[float], None] | None = None) -> list[str]:
    """The best answer to each question; ``reached(share done)`` as the engine reports its
    batches (the protocol's ``progress``), where a page's Cancel takes effect."""
    progress = (lambda done, total: reached(done / max(total, 1))) if reached else None
    preds = engine.predict(list(questions), list(contexts), n_best=1, skip_invalid=True, progress=progress)
    return [p.best.text if p.best is not None else "" for p in preds]


def _kappa_row(model: str, a: str, b: str, fa: list[bool], fb: list[bool], seed: int, n_boot: int) -> dict[str, Any]:
    both, only_a, only_b, neither = kappa_counts(fa, fb)
    n = len(fa)
    value = kappa(fa, fb)
    low = high = None
    note = ""
    if value is None:
        constant = [f"{name} flips {'every' if all(f) else 'no'} question" for name, f in ((a, fa), (b, fb))
                    if len(set(f)) < 2]
        note = "; ".join(constant)
    else:
        note = why_no_interval(a, b, both, only_a, only_b, neither) or ""
    if value is not None and not note:
        low, high, dropped = kappa_interval(fa, fb, seed, n_boot)
        if low is None:
            note = f"no interval: a condition was constant in {dropped} of {n_boot} resamples"
        elif dropped:
            note = f"{dropped} of {n_boot} resamples left out (a condition constant in them)"
    return {"model": model, "a": a, "b": b, "n": n, "flips a": both + only_a, "flips b": both + only_b,
            "both flip": both, "only a": only_a, "only b": only_b, "neither": neither,
            "agreement %": round(100 * (both + neither) / n, 1) if n else None,
            "kappa": None if value is None else round(value, 4),
            "low": None if low is None else round(low, 4), "high": None if high is None else round(high, 4),
            "fisher p": None if value is None else float(f"{fisher_p(both, only_a, only_b, neither):.4g}"),
            "note": note}


def compare(examples: Sequence[QAExample], conditions: Mapping[str, Sequence[str]], engines: Mapping[str, Any], *,
            seed: int = 0, n_boot: int = N_BOOT, progress: Progress | None = None,
            settings: Mapping[str, Any] | None = None) -> Agreement:
    """Each model of ``engines`` (name -> engine with ``predict``) answers the clean questions and
    each condition's; the flips, the per-question table and pairwise kappa (module docstring)."""
    if not examples:
        raise AgreementError("no question to compare")
    for name, questions in conditions.items():
        if len(questions) != len(examples):
            raise AgreementError(f"condition {name} has {len(questions)} questions for {len(examples)} examples")
    names = list(conditions)
    contexts = [ex.context for ex in examples]
    rows, kappas = [], []
    n = len(examples)
    steps, step = len(engines) * (len(names) + 1), 0

    def reached(what: str):   # progress in questions answered, over every model and condition (``step``: now)
        def report(share: float) -> None:
            done = round(share * n)
            progress(step * n + done, steps * n, f"{what} ({done:,}/{n:,})")
        return report if progress else None

    for model, engine in engines.items():
        if progress:
            progress(step * n, steps * n, f"{model}: the typed questions")
        clean = _answers(engine, [ex.question for ex in examples], contexts, reached(f"{model}: the typed questions"))
        step += 1
        flips: dict[str, list[bool]] = {}
        answers: dict[str, list[str]] = {}
        for name in names:
            if progress:
                progress(step * n, steps * n, f"{model}: {name}")
            answers[name] = _answers(engine, conditions[name], contexts, reached(f"{model}: {name}"))
            flips[name] = [predictions_differ(c, x, ex.lang or "en")
                           for c, x, ex in zip(clean, answers[name], examples)]
            step += 1
        for i, ex in enumerate(examples):
            row = {"model": model, "id": ex.id, "question": ex.question, "clean answer": clean[i]}
            for name in names:
                row[f"{name} question"] = conditions[name][i]
                row[f"{name} answer"] = answers[name][i]
                row[f"{name} flip"] = flips[name][i]
            rows.append(row)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                kappas.append(_kappa_row(model, a, b, flips[a], flips[b], seed, n_boot))
    if progress:
        progress(steps * n, steps * n, "done")
    return Agreement(names, list(engines), rows, kappas,
                     {"seed": seed, "n_boot": n_boot, "level": LEVEL, "questions": len(examples), **(settings or {})})


def flip_rates(result: Agreement) -> list[dict[str, Any]]:
    """Per model and condition: questions, flips and the flip rate (percent)."""
    out = []
    for model in result.models:
        rows = [r for r in result.rows if r["model"] == model]
        for name in result.conditions:
            flips = sum(bool(r[f"{name} flip"]) for r in rows)
            out.append({"model": model, "condition": name, "questions": len(rows), "flips": flips,
                        "flip %": round(100 * flips / len(rows), 1) if rows else None})
    return out


def kappa_matrix(result: Agreement, model: str) -> dict[str, dict[str, str]]:
    """Condition x condition labels (:func:`kappa_label`, short) of one model; the diagonal is "1"."""
    cells = {a: {b: ("1" if a == b else "") for b in result.conditions} for a in result.conditions}
    for row in result.kappas:
        if row["model"] == model:
            cells[row["a"]][row["b"]] = cells[row["b"]][row["a"]] = kappa_label(row, short=True)
    return cells


def matrix_notes(result: Agreement, model: str) -> list[str]:
    """The reasons behind one model's matrix, each once: why a kappa is undefined (the note names
    its condition), or what about its interval, with the pair it belongs to."""
    notes = []
    for row in result.kappas:
        if row["model"] != model or not row["note"]:
            continue
        pair = "" if row["kappa"] is None else f"{row['a']} ~ {row['b']}: "
        notes += [pair + part for part in row["note"].split("; ")]
    return list(dict.fromkeys(notes))


def trial_or_error(name_or_path: str) -> Trial:
    """A trial by id (under the trials folder) or by its folder or ``trial.sqlite``/``trial.json`` path."""
    from pathlib import Path

    from core.collect.trials import TRIAL_FILE, open_trial

    path = Path(name_or_path).expanduser()
    if path.is_file() and path.name in ("trial.sqlite", TRIAL_FILE):
        path = path.parent
    if path.is_dir() and (path / TRIAL_FILE).is_file():
        return Trial(path)
    try:
        return open_trial(name_or_path)
    except TrialError:
        raise AgreementError(f"no trial {name_or_path!r}: give a trial id (see the Speech trial page) or its "
                             "folder") from None
