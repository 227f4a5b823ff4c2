"""One example of a sweep cell, answered by every model of the sweep: the heatmap drill-down shows
them side by side (a presenter's question is "and what did the others say?", not one model).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.sweeps.analysis.sweep_cells import reading
from core.sweeps.store import Store
from core.types import Span

__all__ = ["example_across_models", "example_rows", "gold_spans", "answer_spans", "shown_context"]


def example_across_models(db: Store | str | Path, sweep: int | str, perturbation: str, params_json: str,
                          example_hash: str, repeat: int) -> list[dict[str, Any]]:
    """Per model of the sweep (in the sweep's model order): its clean and perturbed answer, their
    spans and EM/F1 (None where the perturbation did not apply or the row is not stored yet)."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        rows = {r["model"]: dict(r) for r in store.unit_rows(sid, perturbation, params_json, example_hash, repeat)}
    out = []
    for m in models:
        r = rows.get(m, {})
        out.append({"model": m, "status": r.get("status"),
                    "answer": r.get("answer"), "span_start": r.get("span_start"), "span_end": r.get("span_end"),
                    "em": r.get("em"), "f1": r.get("f1"),
                    "clean_answer": r.get("clean_answer"), "clean_start": r.get("clean_start"),
                    "clean_end": r.get("clean_end"), "clean_em": r.get("clean_em"), "clean_f1": r.get("clean_f1"),
                    "variant_question": r.get("variant_question"),
                    "perturbed_golds": [a[0] for a in json.loads(r["variant_gold_json"])]
                    if r.get("variant_gold_json") else []})
    return out


def example_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A cell's examples (``sweep_cells.cell_examples``) as the drill-down's table, F1 in %.

    >>> example_rows([{"example_id": "q1", "repeat": 0, "original_question": "Who?", "variant_question": "Wh0?",
    ...                "golds": ["Ann", "Ann B."], "clean_answer": "Ann", "answer": "Bob", "clean_f1": 1.0,
    ...                "f1": 0.0, "f1_loss": 1.0, "perturbed_context": None}])[0]["gold"]
    'Ann | Ann B.'
    """
    return [{"example": r["example_id"], "repeat": r["repeat"], "original question": r["original_question"],
             "perturbed question": r["variant_question"], "gold": " | ".join(r["golds"]),
             "clean answer": r["clean_answer"], "perturbed answer": r["answer"],
             "clean F1": round(100 * r["clean_f1"], 1), "perturbed F1": round(100 * r["f1"], 1),
             "F1 loss": round(100 * r["f1_loss"], 1), "context perturbed": r["perturbed_context"] is not None}
            for r in rows]


def gold_spans(context: str, golds: list[str], starts: list[int] | None = None) -> list[tuple[int, int]]:
    """Character spans of the gold answers: from their stored offsets when there is one per answer,
    else where each first occurs in ``context`` (answers not found are left out).

    >>> gold_spans("in Paris, France", ["Paris", "Rome"])
    [(3, 8)]
    >>> gold_spans("in Paris, France", ["France"], [10])
    [(10, 16)]
    """
    if starts is not None and len(starts) == len(golds):
        return [(s, s + len(g)) for g, s in zip(golds, starts)]
    found = [(context.find(g), len(g)) for g in golds if g and context.find(g) >= 0]
    return [(s, s + n) for s, n in found]


def answer_spans(across: list[dict[str, Any]], clean: bool) -> dict[str, Span | None]:
    """{model: its clean (``clean``) or perturbed answer span} from :func:`example_across_models`.

    >>> answer_spans([{"model": "m", "clean_answer": "Ann", "clean_start": 0, "clean_end": 3,
    ...                "answer": None, "span_start": None, "span_end": None}], clean=False)
    {'m': None}
    """
    prefix, text = ("clean", "clean_answer") if clean else ("span", "answer")
    out: dict[str, Span | None] = {}
    for o in across:
        start, end = o[f"{prefix}_start"], o[f"{prefix}_end"]
        out[o["model"]] = Span(o[text] or "", start, end, 0.0) if start is not None and end is not None else None
    return out


def shown_context(row: dict[str, Any], clean: bool) -> tuple[str, list[tuple[int, int]], bool]:
    """(the context to mark the answers in, its gold spans, whether it is the perturbed context)
    for a row of ``sweep_cells.cell_examples``: the clean answers go in the clean context; the perturbed
    ones in the perturbed context when the perturbation changed it. Gold spans come from the stored
    offsets: an answer whose text occurs twice is marked where the data set puts it.

    >>> row = {"context": "Bob met Ann. Ann left.", "golds": ["Ann"], "gold_starts": [13],
    ...        "perturbed_context": None, "perturbed_golds": [], "perturbed_gold_starts": []}
    >>> shown_context(row, clean=True)[1], shown_context(row, clean=False)[1]
    ([(13, 16)], [(13, 16)])
    """
    golds, starts = row["golds"], row.get("gold_starts")
    if clean:
        return row["context"], gold_spans(row["context"], golds, starts), False
    if row["perturbed_context"] is None:
        if row["perturbed_golds"]:
            golds, starts = row["perturbed_golds"], row["perturbed_gold_starts"]
        return row["context"], gold_spans(row["context"], golds, starts), False
    return row["perturbed_context"], gold_spans(row["perturbed_context"], row["perturbed_golds"],
                                                row["perturbed_gold_starts"]), True
