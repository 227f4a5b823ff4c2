"""What each metric is, declared once: its label, which direction is better, its unit, a description,
and where it comes from: ``citation`` (the paper that defines it, as Hugging Face evaluate's metrics
carry one) and ``reference`` (the implementation it follows: a URL, or the SEEDS.md section).

Every metric module declares its own metrics (``DECLARED = (Metric(...), ...)``) next to the code
that computes them; ``core.metrics.METRICS`` gathers them by name, and the pages, tables and model
cards take labels, help texts and directions from it instead of writing their own.

``better`` is "higher", "lower" or "zero" (closest to 0): the German paper's % change is "zero",
since it penalises a change in either direction as instability (SEEDS.md §4).

>>> wer = Metric("wer", "WER", "lower", "%", "word error rate", citation="Morris et al. (2004)",
...              reference="https://github.com/jitsi/jiwer")
>>> wer.is_better(10.0, 12.5), wer.is_better(12.5, 10.0)
(True, False)
>>> wer.help
'word error rate (%; lower is better)'
>>> Metric("pct_change", "% change", "zero", "%", "change").is_better(-1.0, 5.0)
True
"""
from __future__ import annotations

from dataclasses import dataclass

DIRECTIONS = {"higher": "higher is better", "lower": "lower is better", "zero": "closer to 0 is better"}


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` is its key in results (rows, JSON); ``label`` how it is shown;
    ``citation`` the work that defines it and ``reference`` the code or text it follows."""

    name: str
    label: str
    better: str
    unit: str
    description: str
    citation: str = ""
    reference: str = ""

    def __post_init__(self) -> None:
        if self.better not in DIRECTIONS:
            raise ValueError(f"{self.name}: better must be one of {', '.join(DIRECTIONS)}, got {self.better!r}")

    def is_better(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly better than ``b`` by this metric's direction."""
        if self.better == "zero":
            return abs(a) < abs(b)
        return a > b if self.better == "higher" else a < b

    @property
    def help(self) -> str:
        """The description with unit and direction, for a widget's help or a column's tooltip."""
        unit = f"{self.unit}; " if self.unit else ""
        return f"{self.description} ({unit}{DIRECTIONS[self.better]})"

    @property
    def source(self) -> dict[str, str]:
        """The metric as a row of the table that lists metrics with their sources (Models page).

        >>> Metric("em", "EM", "higher", "%", "exact match", "Rajpurkar et al. (2016)", "SEEDS.md").source["better"]
        'higher is better'
        """
        return {"metric": self.label, "better": DIRECTIONS[self.better], "unit": self.unit,
                "description": self.description, "citation": self.citation, "reference": self.reference}
