"""Confidence and abstention from a stored sweep: can a model's answer score tell it is lost?

The engine's score of an answer is p(start) x p(end) of the span (core.qa.decode). Per model and
perturbation spec this module gives

  * the score distributions of the answers on the clean and on the perturbed questions
    (:func:`score_samples`, :func:`score_histogram`);
  * the F1-vs-coverage curve when the model abstains below a score threshold
    (:func:`coverage_curve`): at threshold t it answers the questions whose score is >= t;
    *coverage* is the share it answers and *answered F1* the mean F1 over those (selective F1);
  * the threshold that keeps 90% of clean F1 under the noise (:func:`threshold_for`): the lowest
    threshold (the most coverage) at which the answered F1 on the perturbed questions reaches
    ``target`` x the clean F1 of the same questions, all of them answered.

Our choices: a question with no answer (no span) has score 0 and F1 0; a spec's repeats are pooled
(each (question, repeat) is one point); clean F1 is over the questions the spec applied to.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.sweeps.analysis.sweep_cells import reading, sweep_specs
from core.sweeps.store import Store

__all__ = ["score_samples", "score_histogram", "coverage_curve", "threshold_for", "calibration_table",
           "format_calibration"]

TARGET = 0.9


def score_samples(db: Store | str | Path, sweep: int | str, model: str, perturbation: str,
                  params_json: str) -> dict[str, list[tuple[float, float]]]:
    """{"clean": [(score, f1), ...], "perturbed": [...]}: one point per scored (question, repeat),
    the clean points over the same questions as the perturbed ones."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        perturbed_rows, clean_rows = store.answer_scores(sid, model, perturbation, params_json)
        perturbed = [(r[0] or 0.0, r[1], r[2]) for r in perturbed_rows]
        hashes = {h for _, _, h in perturbed}
        clean = [(r[0] or 0.0, r[1]) for r in clean_rows if r[2] in hashes]
    return {"clean": clean, "perturbed": [(s, f) for s, f, _ in perturbed]}


def score_histogram(points: Sequence[tuple[float, float]], bins: int = 10) -> list[dict[str, Any]]:
    """Counts of scores in ``bins`` equal bins of [0, 1], with the mean F1 in each.

    >>> [(b["bin"], b["n"], b["mean F1"]) for b in score_histogram([(0.05, 0.0), (0.95, 1.0), (1.0, 0.5)], bins=2)]
    [('0.0-0.5', 1, 0.0), ('0.5-1.0', 2, 75.0)]
    """
    rows = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [f for s, f in points if lo <= s < hi or (i == bins - 1 and s >= hi)]
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "low": lo, "high": hi, "n": len(inside),
                     "mean F1": round(100 * math.fsum(inside) / len(inside), 2) if inside else None})
    return rows


def coverage_curve(points: Sequence[tuple[float, float]]) -> list[dict[str, float]]:
    """F1 vs coverage: one row per distinct score threshold, highest threshold (least coverage) first.

    Each row: threshold, coverage (share answered, %), answered F1 (mean over answered, points),
    overall F1 (abstentions count 0, points).

    >>> curve = coverage_curve([(0.9, 1.0), (0.5, 0.0), (0.1, 1.0)])
    >>> [(r["threshold"], r["coverage"], r["answered F1"]) for r in curve]
    [(0.9, 33.33, 100.0), (0.5, 66.67, 50.0), (0.1, 100.0, 66.67)]
    """
    ordered = sorted(points, key=lambda p: -p[0])
    out, total, n = [], 0.0, len(ordered)
    for i, (score, f1) in enumerate(ordered):
        total += f1
        if i + 1 < n and ordered[i + 1][0] == score:
            continue   # a threshold keeps every question with that score, or none
        out.append({"threshold": round(score, 6), "coverage": round(100 * (i + 1) / n, 2),
                    "answered F1": round(100 * total / (i + 1), 2), "overall F1": round(100 * total / n, 2)})
    return out


def threshold_for(perturbed: Sequence[tuple[float, float]], clean_f1: float,
                  target: float = TARGET) -> dict[str, float] | None:
    """The lowest threshold whose answered F1 on ``perturbed`` reaches ``target`` x ``clean_f1``
    (points); None if no threshold does.

    >>> threshold_for([(0.9, 1.0), (0.5, 0.0), (0.1, 1.0)], clean_f1=80.0)
    {'threshold': 0.9, 'coverage': 33.33, 'answered F1': 100.0, 'overall F1': 33.33}
    >>> threshold_for([(0.9, 0.0)], clean_f1=80.0) is None
    True
    """
    goal = target * clean_f1
    meeting = [r for r in coverage_curve(perturbed) if r["answered F1"] >= goal - 1e-9]
    return min(meeting, key=lambda r: r["threshold"]) if meeting else None


def calibration_table(db: Store | str | Path, sweep: int | str, target: float = TARGET) -> list[dict[str, Any]]:
    """Per model and spec: N, clean and perturbed F1, mean score clean vs perturbed, and the
    threshold keeping ``target`` of clean F1 with its coverage and answered F1."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        specs = sweep_specs(store, sid)
    rows = []
    for m in models:
        for s in specs:
            pts = score_samples(db, sweep, m, s["perturbation"], s["params_json"])
            clean, pert = pts["clean"], pts["perturbed"]
            row: dict[str, Any] = {"model": m, "spec": s["label"], "perturbation": s["perturbation"],
                                   "params": s["params_json"], "N": len(pert), "clean F1": None, "F1": None,
                                   "clean mean score": None, "mean score": None, "threshold": None,
                                   "coverage %": None, "answered F1": None}
            if pert and clean:
                clean_f1 = 100 * math.fsum(f for _, f in clean) / len(clean)
                found = threshold_for(pert, clean_f1, target)
                row.update({"clean F1": round(clean_f1, 2),
                            "F1": round(100 * math.fsum(f for _, f in pert) / len(pert), 2),
                            "clean mean score": round(math.fsum(s_ for s_, _ in clean) / len(clean), 4),
                            "mean score": round(math.fsum(s_ for s_, _ in pert) / len(pert), 4)})
                if found:
                    row.update({"threshold": found["threshold"], "coverage %": found["coverage"],
                                "answered F1": found["answered F1"]})
            rows.append(row)
    return rows


def format_calibration(rows: Sequence[dict[str, Any]], target: float = TARGET) -> str:
    """:func:`calibration_table` as plain text.

    >>> print(format_calibration([{"model": "m", "spec": "TLQ", "N": 3, "clean F1": 80.0, "F1": 66.67,
    ...     "clean mean score": 0.6, "mean score": 0.5, "threshold": 0.9, "coverage %": 33.33, "answered F1": 100.0}]))
    ... # doctest: +NORMALIZE_WHITESPACE
    Abstain below a score threshold: the lowest threshold whose answered F1 under the perturbation reaches 90% of
    clean F1
    model  spec      N  clean F1      F1  score clean  score pert.  threshold  coverage %  answered F1
    m      TLQ       3      80.0    66.7       0.6000       0.5000     0.9000        33.3        100.0
    """
    lines = [f"Abstain below a score threshold: the lowest threshold whose answered F1 under the perturbation "
             f"reaches {100 * target:.0f}% of clean F1"]
    mw = max([len("model")] + [len(r["model"]) for r in rows])
    sw = max([len("spec")] + [len(r["spec"]) for r in rows])
    lines.append(f"{'model':<{mw}}  {'spec':<{sw}}  {'N':>5}  {'clean F1':>8}  {'F1':>6}  {'score clean':>11}  "
                 f"{'score pert.':>11}  {'threshold':>9}  {'coverage %':>10}  {'answered F1':>11}")
    for r in rows:
        def f(x, spec):
            return "-" if x is None else format(x, spec)
        lines.append(f"{r['model']:<{mw}}  {r['spec']:<{sw}}  {r['N']:>5}  {f(r['clean F1'], '.1f'):>8}  "
                     f"{f(r['F1'], '.1f'):>6}  {f(r['clean mean score'], '.4f'):>11}  "
                     f"{f(r['mean score'], '.4f'):>11}  {f(r['threshold'], '.4f'):>9}  "
                     f"{f(r['coverage %'], '.1f'):>10}  {f(r['answered F1'], '.1f'):>11}")
    return "\n".join(lines)
