"""Percentage change, colour band and robustness penalty of a perturbed score (Satheesh et al. 2024).

Citation: Satheesh et al. (2024), on the robustness of German extractive QA models (SEEDS.md §4).
Each heatmap cell is the percentage change of a model's F1 (or EM) under one perturbation; the
cell is coloured by its band and earns a penalty; a model's penalties are summed (lower = more
robust). The bands and penalties, from the paper's table:

    % change  (2, 10]  (0, 2]  (-2, 0]  (-10, -2]  (-40, -10]  (-70, -40]  [-100, -70]
    penalty     +1       0       0         +1          +2          +3           +4

Our choices where the table is silent:
  * a change above +10 % (not in the table; scores rarely rise that much) is the band "> 10"
    with penalty +1, the table's penalty for a rise: a large improvement under a perturbation
    still shows sensitivity, and we do not extrapolate a bigger penalty the paper never gave;
  * a clean score of 0: no change (0.0) when the perturbed score is 0 too, +inf when it is
    positive (band "> 10", penalty +1);
  * scores must be non-negative (EM/F1), so a change below -100 % cannot happen and is rejected.

>>> pct_change(80.0, 60.0)
-25.0
>>> band(-25.0), penalty(-25.0)
('(-40, -10]', 2)
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from core.metrics.declared import Metric

__all__ = ["BANDS", "pct_change", "band", "penalty", "total_penalty"]

# (label, lower bound, lower bound included, upper bound, upper bound included, penalty),
# from the highest band down. Kept as data so the heatmap legend can be drawn from it.
BANDS: tuple[tuple[str, float, bool, float, bool, int], ...] = (
    ("> 10", 10.0, False, math.inf, True, 1),
    ("(2, 10]", 2.0, False, 10.0, True, 1),
    ("(0, 2]", 0.0, False, 2.0, True, 0),
    ("(-2, 0]", -2.0, False, 0.0, True, 0),
    ("(-10, -2]", -10.0, False, -2.0, True, 1),
    ("(-40, -10]", -40.0, False, -10.0, True, 2),
    ("(-70, -40]", -70.0, False, -40.0, True, 3),
    ("[-100, -70]", -100.0, True, -70.0, True, 4),
)


GERMAN_CITATION = 'Satheesh et al. (2024), "German extractive QA robustness" (SEEDS.md §4)'
DECLARED = (
    Metric("pct_change", "% change", "zero", "%", "percentage change of the metric from clean to perturbed "
           "input; the paper penalises a change either way (Satheesh et al. 2024)", citation=GERMAN_CITATION,
           reference="SEEDS.md §4 (reporting); core/metrics/penalty.py"),
    Metric("penalty", "penalty", "lower", "points", "penalty of a heatmap cell by its band of % change, "
           "summed over cells (Satheesh et al. 2024)", citation=GERMAN_CITATION,
           reference="SEEDS.md §4 (the band table); core/metrics/penalty.py"),
)


def pct_change(clean: float, perturbed: float) -> float:
    """(perturbed - clean) / clean * 100; 0.0 when both are 0, +inf when only clean is 0.

    Computed as (perturbed - clean) * 100 / clean, multiplying first so that round cases stay
    exact (49 vs 50 gives -2.0, not -2.0000000000000004, which would change its band).

    >>> pct_change(50.0, 49.0), pct_change(50.0, 51.0), pct_change(80.0, 80.0)
    (-2.0, 2.0, 0.0)
    >>> pct_change(0.0, 0.0), pct_change(0.0, 5.0)
    (0.0, inf)
    >>> pct_change(50.0, -1.0)
    Traceback (most recent call last):
    ...
    ValueError: scores must be non-negative finite numbers, got clean=50.0, perturbed=-1.0
    """
    clean, perturbed = float(clean), float(perturbed)
    if not (math.isfinite(clean) and math.isfinite(perturbed)) or clean < 0 or perturbed < 0:
        raise ValueError(f"scores must be non-negative finite numbers, got clean={clean!r}, perturbed={perturbed!r}")
    if clean == 0.0:
        return 0.0 if perturbed == 0.0 else math.inf
    return (perturbed - clean) * 100.0 / clean


def _find_band(pct: float) -> tuple[str, float, bool, float, bool, int]:
    pct = float(pct)
    if math.isnan(pct):
        raise ValueError("percentage change is NaN")
    for entry in BANDS:
        _, low, low_closed, high, high_closed, _ = entry
        above_low = pct >= low if low_closed else pct > low
        below_high = pct <= high if high_closed else pct < high
        if above_low and below_high:
            return entry
    raise ValueError(f"percentage change {pct!r} is below -100: a non-negative score cannot fall that far")


def band(pct: float) -> str:
    """The band label of a percentage change.

    Every band is open below and closed above, except the lowest, which is closed on both
    sides: so +2 falls in (0, 2] (penalty 0), -2 in (-10, -2] (penalty +1), -10 in (-40, -10]
    (penalty +2), -40 in (-70, -40] (+3) and -70 in [-100, -70] (+4).

    >>> [band(x) for x in (10.0001, 10.0, 2.0001, 2.0, 0.0001, 0.0, -1.9999, -2.0)]
    ['> 10', '(2, 10]', '(2, 10]', '(0, 2]', '(0, 2]', '(-2, 0]', '(-2, 0]', '(-10, -2]']
    >>> [band(x) for x in (-9.9999, -10.0, -39.9999, -40.0, -69.9999, -70.0, -100.0)]
    ['(-10, -2]', '(-40, -10]', '(-40, -10]', '(-70, -40]', '(-70, -40]', '[-100, -70]', '[-100, -70]']
    >>> band(-100.5)
    Traceback (most recent call last):
    ...
    ValueError: percentage change -100.5 is below -100: a non-negative score cannot fall that far
    """
    return _find_band(pct)[0]


def penalty(pct: float) -> int:
    """The penalty of a percentage change (+1 above +2 %, 0 within (-2, 2], then +1..+4 for drops).

    >>> [penalty(x) for x in (25.0, 10.0, 2.0001, 2.0, 0.0, -1.9999, -2.0, -9.9999, -10.0)]
    [1, 1, 1, 0, 0, 0, 1, 1, 2]
    >>> [penalty(x) for x in (-39.9999, -40.0, -69.9999, -70.0, -100.0, math.inf)]
    [2, 3, 3, 4, 4, 1]
    """
    return _find_band(pct)[5]


def total_penalty(pcts: Iterable[float]) -> int:
    """A model's robustness penalty: the sum of its cells' penalties (lower = more robust).

    >>> total_penalty([1.0, -5.0, -50.0, 12.0])
    5
    """
    return sum(penalty(p) for p in pcts)
