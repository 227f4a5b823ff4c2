"""The backend as an axis: which answers change between two engine backends, per perturbation.

Two sweeps of one database over the same examples and perturbations (the same seed), made with
two engine backends (``python -m core.sweeps ... --engine-backend torch --name A`` and the model's
default backend under ``--name B``), are paired row by row: the same model, perturbation,
parameters, repeat, example and variant. A row *flips* when the two answers differ after the
language's EM normalisation (core.metrics.predictions_differ, DPR's notion of "different").

Per model and perturbation (and the clean questions): pairs, flips, flip rate, and the mean
measured question noise (Table 3 CER, core.sweeps.analysis.curves.measured_noise) of the flipped rows
against the rows that kept their answer: are precision flips concentrated where the question is
noisy, or spread evenly (an artefact of the arithmetic, not of the noise)?
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from core.metrics import predictions_differ
from core.sweeps.analysis.curves import measured_noise

CLEAN = "clean"

_PERTURBED = (
    "SELECT ra.model, ra.perturbation, ra.params_json, e.lang, e.question AS original, v.question AS asked, "
    "v.field, pa.answer AS answer_a, pb.answer AS answer_b "
    "FROM results ra JOIN results rb ON rb.sweep_id = ? AND rb.model = ra.model "
    "AND rb.perturbation = ra.perturbation AND rb.params_json = ra.params_json AND rb.repeat = ra.repeat "
    "AND rb.example_hash = ra.example_hash AND rb.variant_key = ra.variant_key "
    "JOIN predictions pa ON pa.key = ra.prediction_key JOIN predictions pb ON pb.key = rb.prediction_key "
    "JOIN examples e ON e.hash = ra.example_hash JOIN variants v ON v.key = ra.variant_key "
    "WHERE ra.sweep_id = ? AND ra.status = 'ok' AND rb.status = 'ok'")
_CLEAN = (
    "SELECT ca.model, e.lang, pa.answer AS answer_a, pb.answer AS answer_b "
    "FROM clean_results ca JOIN clean_results cb ON cb.sweep_id = ? AND cb.model = ca.model "
    "AND cb.example_hash = ca.example_hash "
    "JOIN predictions pa ON pa.key = ca.prediction_key JOIN predictions pb ON pb.key = cb.prediction_key "
    "JOIN examples e ON e.hash = ca.example_hash WHERE ca.sweep_id = ?")


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 2) if xs else None


def backend_flips(db, sweep_a: int | str, sweep_b: int | str) -> list[dict[str, Any]]:
    """Rows {model, spec, n, flips, flip %, CER flipped, CER kept}: the clean questions first,
    then each perturbation in sweep A's order; ValueError when the sweeps share no row."""
    from core.sweeps.analysis.sweep_cells import reading, sweep_specs

    with reading(db) as store:
        a, b = store.sweep_id(sweep_a), store.sweep_id(sweep_b)
        if a == b:
            raise ValueError("compare two different sweeps (one per backend)")
        labels = {(s["perturbation"], s["params_json"]): s["label"] for s in sweep_specs(store, a)}
        perturbed = store.conn.execute(_PERTURBED, (b, a)).fetchall()
        clean = store.conn.execute(_CLEAN, (b, a)).fetchall()
    if not perturbed and not clean:
        raise ValueError(f"sweeps {sweep_a!r} and {sweep_b!r} share no scored row: run the same data, "
                         "perturbations and seed with each backend")
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: {"flip": [], "kept": []})
    order: list[tuple[str, str]] = []
    for r in clean:
        key = (r["model"], CLEAN)
        flip = predictions_differ(r["answer_a"], r["answer_b"], r["lang"])
        groups[key]["flip" if flip else "kept"].append(0.0)
        if key not in order:
            order.append(key)
    noise: dict[tuple[str, str], float] = {}
    spec_order = list(labels)
    for r in sorted(perturbed, key=lambda r: (spec_order.index((r["perturbation"], r["params_json"]))
                                              if (r["perturbation"], r["params_json"]) in labels else len(labels))):
        label = labels.get((r["perturbation"], r["params_json"]), r["perturbation"])
        key = (r["model"], label)
        pair = (r["original"], r["asked"] or "")
        if pair not in noise:
            noise[pair] = measured_noise(*pair, "cer") if r["field"] in ("question", "both") else 0.0
        flip = predictions_differ(r["answer_a"], r["answer_b"], r["lang"])
        groups[key]["flip" if flip else "kept"].append(noise[pair])
        if key not in order:
            order.append(key)
    models = list(dict.fromkeys(m for m, _ in order))
    order.sort(key=lambda k: models.index(k[0]))   # models together (stable: specs stay in order)
    rows = []
    for model, spec in order:
        g = groups[(model, spec)]
        n = len(g["flip"]) + len(g["kept"])
        rows.append({"model": model, "spec": spec, "n": n, "flips": len(g["flip"]),
                     "flip %": round(100.0 * len(g["flip"]) / n, 1) if n else None,
                     "CER flipped": _mean(g["flip"]), "CER kept": _mean(g["kept"])})
    return rows


def format_flips(rows: list[dict[str, Any]], sweep_a: str, sweep_b: str) -> str:
    head = f"answers that differ between {sweep_a} and {sweep_b} (mean question CER % of flipped / kept rows)"
    columns = f"{'model':20s} {'spec':32s} {'n':>6s} {'flips':>6s} {'flip %':>7s} {'CER flip':>9s} {'CER kept':>9s}"
    lines = [head, columns]
    for r in rows:
        def f(x):
            return "" if x is None else f"{x:g}"
        lines.append(f"{r['model']:20s} {r['spec']:32s} {r['n']:>6d} {r['flips']:>6d} {f(r['flip %']):>7s} "
                     f"{f(r['CER flipped']):>9s} {f(r['CER kept']):>9s}")
    return "\n".join(lines)
