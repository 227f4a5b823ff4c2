"""How a generative reader's answers were found in the passage, per perturbation (issue 54): the
share found exactly, approximately (the most similar window above the threshold), not in the
passage at all (scored as free text), or not given, on the clean questions and under each
perturbation spec. A reader that starts writing its own words once a question is noisy shows it
here before its F1 does.

Read from the stored answers (core.sweeps.store.Store.alignment_counts): a generative reader
stores its aligned span with the alignment's similarity as its score (1 when exact) and a free
answer without a span.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.perturb.spec import spec_label
from core.sweeps.analysis.sweep_cells import reading
from core.sweeps.store import Store

__all__ = ["CAPTION", "KINDS", "alignment_rates", "generative_models"]

KINDS = ("exact", "approximate", "not in the passage", "no answer")
CAPTION = ("Each answer of a generative reader is looked for in the passage: **exact** (found after SQuAD "
           "normalisation), **approximate** (the most similar run of words, above the reader's threshold), "
           "**not in the passage** (scored as free text) or **no answer**. A rise in *not in the passage* under "
           "a perturbation means the reader stopped copying and started writing.")


def generative_models(models: Sequence[str]) -> list[str]:
    """The models of ``models`` that models.toml declares generative (an unknown name is not): the
    readers whose answers :func:`alignment_rates` reads (Heatmaps' tab, the report's section)."""
    from core.qa import registry

    out = []
    for name in models:
        try:
            if registry.get_entry(name).kind == "generative":
                out.append(name)
        except (registry.ModelLoadError, ValueError, OSError):   # not in models.toml, or it is unreadable
            continue
    return out




def rates_row(model: str, spec: str, counts: dict[str, int]) -> dict[str, Any]:
    """One row: N and each kind's share in %.

    >>> row = rates_row("llm", "TUQ", {"exact": 6, "approximate": 1, "not in the passage": 1})
    >>> row["N"], [row[f"{kind} %"] for kind in KINDS]
    (8, [75.0, 12.5, 12.5, 0.0])
    """
    n = sum(counts.values())
    return {"model": model, "spec": spec, "N": n,
            **{f"{kind} %": round(100 * counts.get(kind, 0) / n, 1) if n else None for kind in KINDS}}


def alignment_rates(db: Store | str | Path, sweep: int | str, models: list[str]) -> list[dict[str, Any]]:
    """Per model of ``models`` (the sweep's generative readers), one row for the clean questions and
    one per perturbation spec, in the order the specs were stored."""
    rows = []
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        for model in models:
            by_spec: dict[tuple[str, str], dict[str, int]] = {}
            for r in store.alignment_counts(sid, model):
                by_spec.setdefault((r["perturbation"], r["params_json"]), {})[r["kind"]] = r["n"]
            for (pert, params_json), counts in by_spec.items():
                label = "clean" if pert == "clean" else spec_label(pert, json.loads(params_json))
                rows.append(rates_row(model, label, counts))
    return rows
