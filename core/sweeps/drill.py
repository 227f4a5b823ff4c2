"""One example of a sweep cell, answered by every model of the sweep: the heatmap drill-down shows
them side by side (a presenter's question is "and what did the others say?", not one model).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.sweeps.report import _store
from core.sweeps.store import Store

__all__ = ["example_across_models"]


def example_across_models(db: Store | str | Path, sweep: int | str, perturbation: str, params_json: str,
                          example_hash: str, repeat: int) -> list[dict[str, Any]]:
    """Per model of the sweep (in the sweep's model order): its clean and perturbed answer, their
    spans and EM/F1 (None where the perturbation did not apply or the row is not stored yet)."""
    with _store(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        rows = {r["model"]: dict(r) for r in store.conn.execute(
            "SELECT model, status, answer, span_start, span_end, em, f1, clean_answer, clean_start, clean_end, "
            "clean_em, clean_f1, variant_question, variant_context_hash, variant_gold_json FROM result_rows "
            "WHERE sweep_id = ? AND perturbation = ? AND params_json = ? AND example_hash = ? AND repeat = ?",
            (sid, perturbation, params_json, example_hash, repeat))}
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
