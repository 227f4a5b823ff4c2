"""What ``python -m core.sweeps`` prints: a sweep's cells as a plain-text table with each model's
penalty total (``--show``), the list of stored sweeps (``--list``) and two models' paired
differences (``--compare``). The numbers come from the sweep's read handle
(core.sweeps.analysis.stored.StoredSweep); this module only lays them out for a terminal.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.analysis.sweep_cells import Cell, penalty_totals


def format_differences(rows: Sequence[dict[str, Any]], model_a: str, model_b: str) -> str:
    """:func:`model_differences` as a plain-text table.

    >>> print(format_differences([{"spec": "clean", "n": 5, "F1 a": 93.33, "F1 b": 100.0, "difference": 6.67,
    ...                            "ci95_low": 0.0, "ci95_high": 20.0, "significant": False},
    ...                           {"spec": "RUQ", "n": 1, "F1 a": None, "F1 b": None, "difference": None,
    ...                            "ci95_low": None, "ci95_high": None, "significant": None}], "a", "b"))
    B = b, A = a: B - A in F1 points, 95% paired-bootstrap interval over examples
    spec      N       A       B     B-A  95% interval
    clean     5   93.33  100.00   +6.67  +0.00 to +20.00
    RUQ       1       -       -       -  -
    """
    width = max([len("spec")] + [len(r["spec"]) for r in rows])
    lines = [f"B = {model_b}, A = {model_a}: B - A in F1 points, 95% paired-bootstrap interval over examples",
             f"{'spec':<{width}}  {'N':>4}  {'A':>6}  {'B':>6}  {'B-A':>6}  95% interval"]
    for r in rows:
        if r["difference"] is None:
            lines.append(f"{r['spec']:<{width}}  {r['n']:>4}  {'-':>6}  {'-':>6}  {'-':>6}  -")
            continue
        mark = "  significant" if r["significant"] else ""
        lines.append(f"{r['spec']:<{width}}  {r['n']:>4}  {r[f'F1 {model_a}']:>6.2f}  {r[f'F1 {model_b}']:>6.2f}  "
                     f"{r['difference']:>+6.2f}  {r['ci95_low']:+.2f} to {r['ci95_high']:+.2f}{mark}")
    return "\n".join(lines)


def _fmt(x: float | None, spec: str = ".1f") -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "+inf"
    return format(x, spec)


def format_table(cell_list: Sequence[Cell], metric: str = "f1") -> str:
    """A plain-text table of the cells and each model's penalty total. Names are never cut: the
    model and perturbation columns are as wide as their longest entry (ASR labels name a voice)."""
    mw = max([len("model")] + [len(c.model) for c in cell_list])
    pw = max([len("perturbation")] + [len(c.label) for c in cell_list])
    head = (f"{'model':{mw}s} {'perturbation':{pw}s} {'N':>5s} {'rep':>3s} {'clean':>6s} {'pert':>6s} "
            f"{'%chg':>7s} {'drop':>6s} {'band':>11s} {'pen':>3s}")
    lines = [head, "-" * len(head)]
    for c in cell_list:
        lines.append(
            f"{c.model:{mw}s} {c.label:{pw}s} {c.n:5d} {c.n_repeats:3d} "
            f"{_fmt(getattr(c, 'clean_' + metric)):>6s} {_fmt(getattr(c, metric)):>6s} "
            f"{_fmt(getattr(c, metric + '_pct'), '+.1f'):>7s} {_fmt(getattr(c, metric + '_drop')):>6s} "
            f"{getattr(c, metric + '_band') or '-':>11s} "
            f"{'-' if getattr(c, metric + '_penalty') is None else getattr(c, metric + '_penalty'):>3}")
    lines.append("")
    for model, total in penalty_totals(cell_list, metric).items():
        lines.append(f"penalty total ({metric.upper()}) {model}: {total}")
    return "\n".join(lines)


def format_report(sweep: StoredSweep, metric: str = "f1") -> str:
    """The sweep's header, each model's clean scores, then :func:`format_table` of its cells."""
    info = sweep.info
    lines = [f"sweep {info['name']!r} on {info['dataset']} ({info['n_examples']} examples), {info['status']}"]
    for model, s in sweep.clean_scores().items():
        lines.append(f"clean {model}: EM {s['em']:.1f}  F1 {s['f1']:.1f}  (n={s['n']})")
    lines.append("")
    lines.append(format_table(sweep.cells(), metric))
    return "\n".join(lines)


def format_sweep_list(sweeps: Sequence[dict[str, Any]]) -> str:
    """One line per stored sweep (core.sweeps.analysis.stored.list_sweeps)."""
    if not sweeps:
        return "(no sweeps)"
    lines = []
    for s in sweeps:
        lines.append(f"{s['id']:3d}  {s['name']}  [{s['status']}]  {s['done_units']}/{s['total_units']} rows  "
                     f"{s['dataset']} n={s['n_examples']}  models={','.join(s['models'])}  "
                     f"perturbations={len(s['perturbations'])}  updated {s['updated_at']}")
    return "\n".join(lines)
