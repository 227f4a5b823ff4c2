"""Noise-level curves (NoiseQA: how fast does F1 fall as the noise grows?).

Each scored variant of a question perturbation is placed at its *measured* noise, the question's
distance from the original in NoiseQA's Table 3 form (core.metrics.text_distance): ``cer`` and
``wer`` in percent on lower-cased text without punctuation, or ``bleu`` (sentence BLEU, uncased,
sacreBLEU; 100 = unchanged, so noise grows as BLEU falls). Variants are binned by that noise;
per model and bin: the number of rows, their mean F1 (percent) and a percentile bootstrap band
(rows resampled with replacement, ``n_boot`` times, from ``numpy.random.default_rng(seed)``).

A model's **break point** is the lower noise edge of the first bin, in order of growing noise,
whose mean F1 falls below 90 % of its clean F1 (None when no bin does). Context perturbations
are left out (the interface corrupts the question); a variant that happened to change nothing
sits at noise 0.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.metrics.text_distance import asr_normalise, cer, wer

MEASURES = ("cer", "wer", "bleu")
DEFAULT_EDGES = {"cer": (0, 2.5, 5, 10, 20, 40, math.inf), "wer": (0, 10, 20, 35, 50, 75, math.inf),
                 "bleu": (100, 80, 60, 40, 20, 0)}
BREAK_FRACTION = 0.9


def measured_noise(original: str, noisy: str, measure: str) -> float:
    """The noise of one question against its original, in percent (BLEU: 0-100, higher = closer).

    >>> measured_noise("When did the war end?", "when did the war and", "cer")
    5.0
    >>> measured_noise("When did the war end?", "when did the war and", "wer")
    20.0
    >>> measured_noise("Who wrote it?", "who wrote it ?", "bleu")
    100.0
    """
    if measure == "bleu":
        from sacrebleu.metrics import BLEU

        score = BLEU(lowercase=True, effective_order=True).sentence_score(noisy, [original]).score
        return min(100.0, max(0.0, float(score)))   # sacreBLEU gives 100.00000000000004 for a copy
    if measure not in MEASURES:
        raise ValueError(f"unknown noise measure {measure!r}; one of {', '.join(MEASURES)}")
    fn = cer if measure == "cer" else wer
    return 100.0 * fn(asr_normalise(original), asr_normalise(noisy))


@dataclass(frozen=True)
class CurveBin:
    model: str
    lo: float          # the bin's edge nearer no noise (BLEU: the higher one)
    hi: float
    n: int
    f1: float | None   # mean F1, percent
    low: float | None  # bootstrap band, percent
    high: float | None

    def as_dict(self) -> dict:
        return {"model": self.model, "from": self.lo, "to": self.hi, "n": self.n, "f1": _r(self.f1),
                "band_low": _r(self.low), "band_high": _r(self.high)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def bin_index(value: float, edges: Sequence[float]) -> int | None:
    """The bin of ``value``: [edges[k], edges[k+1]) for growing edges, (edges[k+1], edges[k]]
    for falling ones (BLEU); the last bin is closed.

    >>> bin_index(0, (0, 5, 10)), bin_index(5, (0, 5, 10)), bin_index(10, (0, 5, 10)), bin_index(11, (0, 5, 10))
    (0, 1, 1, None)
    >>> bin_index(100, (100, 50, 0)), bin_index(50, (100, 50, 0)), bin_index(0, (100, 50, 0))
    (0, 1, 1)
    """
    rising = edges[-1] > edges[0]
    for k in range(len(edges) - 1):
        a, b = edges[k], edges[k + 1]
        last = k == len(edges) - 2
        if rising and (a <= value < b or (last and value == b)):
            return k
        if not rising and (b < value <= a or (last and value == b)):
            return k
    return None


def curve(points: Iterable[tuple[str, float, float]], edges: Sequence[float], n_boot: int = 1000,
          seed: int = 0, confidence: float = 0.95) -> list[CurveBin]:
    """Bins per model from (model, noise, f1 in 0-1) points (module docstring).

    >>> bins = curve([("m", 0, 1.0), ("m", 1, 0.5), ("m", 7, 0.0)], (0, 5, 10), n_boot=200)
    >>> [(b.lo, b.hi, b.n, b.f1) for b in bins]
    [(0, 5, 2, 75.0), (5, 10, 1, 0.0)]
    """
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    models: list[str] = []
    for model, noise, f1 in points:
        k = bin_index(noise, edges)
        if k is None:
            continue
        if model not in models:
            models.append(model)
        groups[(model, k)].append(100.0 * f1)
    rng = np.random.default_rng(seed)
    out = []
    for model in models:
        for k in range(len(edges) - 1):
            xs = np.array(groups.get((model, k), []))
            if not len(xs):
                out.append(CurveBin(model, edges[k], edges[k + 1], 0, None, None, None))
                continue
            means = rng.choice(xs, size=(n_boot, len(xs)), replace=True).mean(axis=1)
            tail = 100 * (1 - confidence) / 2
            out.append(CurveBin(model, edges[k], edges[k + 1], len(xs), float(xs.mean()),
                                float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))))
    return out


def break_points(bins: Sequence[CurveBin], clean_f1: Mapping[str, float],
                 fraction: float = BREAK_FRACTION) -> dict[str, float | None]:
    """{model: the ``lo`` edge of its first bin with F1 < ``fraction`` x clean F1, or None}.

    >>> bins = [CurveBin("m", 0, 5, 3, 80, 0, 0), CurveBin("m", 5, 10, 2, 60, 0, 0)]
    >>> break_points(bins, {"m": 70.0}), break_points(bins, {"m": 90.0}), break_points(bins, {"m": 50.0})
    ({'m': 5}, {'m': 0}, {'m': None})
    """
    out: dict[str, float | None] = {}
    for b in bins:
        out.setdefault(b.model, None)
        if out[b.model] is None and b.f1 is not None and b.model in clean_f1 \
                and b.f1 < fraction * clean_f1[b.model]:
            out[b.model] = b.lo
    return out


@dataclass
class Curves:
    measure: str
    bins: list[CurveBin]
    clean: dict[str, float]
    breaks: dict[str, float | None]
    # distinct scored variants whose question changed only in what the measure ignores (case,
    # punctuation: TUQ, DPQ): placed at no noise, where they can pull the first bin's F1 down
    unseen: int = 0

    def break_bin(self, model: str) -> str:
        """The model's break point as the bin it is, "0-2.5" (its ``lo`` edge alone read as a noise
        level), or "none".

        >>> Curves("cer", [CurveBin("m", 0, 2.5, 3, 50.0, 40.0, 60.0)], {"m": 80.0}, {"m": 0}).break_bin("m")
        '0-2.5'
        """
        bp = self.breaks.get(model)
        if bp is None:
            return "none"
        hi = next((b.hi for b in self.bins if b.model == model and b.lo == bp), None)
        return f"{bp:g}" if hi is None else f"{bp:g}-{hi:g}"

    def rows(self) -> list[dict]:
        """One row per (model, bin), the CSV's: clean F1 and the break point repeated per model."""
        return [{"measure": self.measure, **b.as_dict(), "clean_f1": _r(self.clean.get(b.model)),
                 "break_point": self.breaks.get(b.model)} for b in self.bins]


def sweep_curves(db, sweep: int | str, measure: str, edges: Sequence[float] | None = None, n_boot: int = 1000,
                 seed: int = 0) -> Curves:
    """The curves of a stored sweep: every scored question-variant row of every model."""
    from core.sweeps.analysis.sweep_cells import clean_scores, reading

    if measure not in MEASURES:
        raise ValueError(f"unknown noise measure {measure!r}; one of {', '.join(MEASURES)}")
    edges = tuple(edges or DEFAULT_EDGES[measure])
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        rows = store.conn.execute(
            "SELECT model, original_question, variant_question, f1 FROM result_rows "
            "WHERE sweep_id = ? AND status = 'ok' AND field IN ('question', 'both')", (sid,)).fetchall()
        clean = {m: v["f1"] for m, v in clean_scores(store, sid).items()}
    noise: dict[tuple[str, str], float] = {}
    points = []
    for r in rows:
        key = (r["original_question"], r["variant_question"] or "")
        if key not in noise:
            noise[key] = measured_noise(*key, measure)
        points.append((r["model"], noise[key], r["f1"]))
    none = 100.0 if measure == "bleu" else 0.0
    unseen = sum(n == none and original != variant for (original, variant), n in noise.items())
    bins = curve(points, edges, n_boot, seed)
    return Curves(measure, bins, clean, break_points(bins, clean), unseen)


def format_curves(c: Curves) -> str:
    """The curves as a text table, one block per model, its break point under it."""
    unit = "BLEU" if c.measure == "bleu" else f"{c.measure.upper()} %"
    lines = [f"{unit} of each variant against its original question, as NoiseQA's Table 3 measures it ("
             + ("sentence BLEU, uncased" if c.measure == "bleu" else "lower-cased, without punctuation")
             + f"): a change of {'case' if c.measure == 'bleu' else 'case or punctuation'} alone is no noise here"
             + (f" ({c.unseen} of the variants below changed only that)" if c.unseen else "")]
    for model in dict.fromkeys(b.model for b in c.bins):
        clean = c.clean.get(model)
        lines.append(f"{model}  (clean F1 {clean:.1f})" if clean is not None else model)
        lines.append(f"  {unit:>14s}  {'n':>6s}  {'F1':>6s}  95% band")
        for b in c.bins:
            if b.model != model:
                continue
            rng = f"{b.lo:g}-{b.hi:g}"
            band = "" if b.low is None else f"{b.low:.1f}-{b.high:.1f}"
            f1 = "" if b.f1 is None else f"{b.f1:.1f}"
            lines.append(f"  {rng:>14s}  {b.n:>6d}  {f1:>6s}  {band}")
        bp = c.breaks.get(model)
        lines.append(f"  break point (F1 < {BREAK_FRACTION:.0%} of clean): "
                     + ("none" if bp is None else f"the bin {unit} {c.break_bin(model)}"))
    return "\n".join(lines)
