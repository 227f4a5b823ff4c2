"""What a stored sweep says: heatmap cells, penalties, drill-down, DPR and trap plots.

Everything here reads the tables of :mod:`core.sweeps.store` with plain SQL; nothing recomputes a model.

A heatmap cell is one (model, perturbation spec). Its numbers, in percent (0..100):
  * perturbed F1/EM: for each repeat, the mean over the examples where the perturbation applied;
    then the mean over repeats (the German paper averages its 25 runs the same way);
  * clean F1/EM: the clean scores of the SAME examples, averaged the same way, so that a
    perturbation applying only to some questions (e.g. RUQ needs an umlaut) is compared on
    those questions only (our choice; the row count N says how many);
  * % change = (perturbed - clean) * 100 / clean (:func:`core.metrics.penalty.pct_change`),
    its band and penalty (SEEDS.md §4), and the absolute drop clean - perturbed;
  * ``f1_repeat_sd``: the sample standard deviation of the per-repeat F1 (None with one repeat).
A model's penalty total is the sum of its cells' penalties.

DPR (DuReader-robust): the share of (clean, perturbed) prediction pairs that differ under the
EM normalisation (:func:`core.metrics.dpr.predictions_differ`), by default over the
paraphrase-family specs; against question similarity = token F1 between original and perturbed
question (:func:`core.sweeps.analysis.traps.question_similarity`), bucketed.
"""
from __future__ import annotations

import contextlib
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from core.metrics.dpr import bucket_by, predictions_differ
from core.metrics.paired import paired_difference
from core.metrics.penalty import band, pct_change, penalty
from core.metrics.text_distance import noise_summary, table3_summary
from core.sweeps.analysis.traps import find_trap, question_similarity
from core.sweeps.ownership import effective_status
from core.sweeps.store import Store

__all__ = [
    "Cell", "DEFAULT_EDGES", "list_sweeps", "sweep_specs", "clean_scores", "cells", "penalty_totals",
    "cell_examples", "noise_rates", "dpr_table", "dpr_by_similarity", "f1_by_trap_similarity", "penalty_table",
    "model_differences",
]

DEFAULT_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@contextlib.contextmanager
def reading(db: Store | str | Path) -> Iterator[Store]:
    """The sweep store ``db`` to read from: a Store is used as given; a path opens read-only, so a
    path naming any other file is refused, never changed. Every analysis of a stored sweep (this
    module, drill, slices, repair, calibration, the gallery) opens its store with it."""
    if isinstance(db, Store):
        yield db
    else:
        with Store(db, readonly=True) as store:
            yield store


def list_sweeps(db: Store | str | Path) -> list[dict[str, Any]]:
    """Every sweep in the file: name, dataset, size, status, rows done / total, specs, models.

    ``status`` is what a reader should see (:func:`core.sweeps.ownership.effective_status`: a 'running'
    sweep whose process died is 'interrupted'); ``stored_status`` is the stored one, ``owner``
    names the process that last ran it ("pid 123 on host", or "" when not recorded)."""
    with reading(db) as store:
        rows = store.sweep_rows()
        out = []
        for r in rows:
            models = store.models(r["id"])
            labels = [s["label"] for s in store.spec_rows(r["id"])]
            owner = (f"pid {r['owner_pid']} on {r['owner_host']}"
                     if "owner_pid" in r.keys() and r["owner_pid"] is not None else "")
            out.append({"id": r["id"], "name": r["name"], "dataset": r["dataset"],
                        "n_examples": r["n_examples"], "status": effective_status(r),
                        "stored_status": r["status"], "owner": owner, "note": r["note"],
                        "done_units": store.done_units(r["id"]), "total_units": r["total_units"],
                        "models": models, "perturbations": labels,
                        "created_at": r["created_at"], "updated_at": r["updated_at"],
                        "config": json.loads(r["config_json"])})
        return out


def sweep_specs(db: Store | str | Path, sweep: int | str) -> list[dict[str, Any]]:
    """The sweep's perturbation specs in order: id, params, label, family, field, randomised, repeats."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        return [{"perturbation": r["perturbation"], "params": json.loads(r["params_json"]),
                 "params_json": r["params_json"], "label": r["label"], "family": r["family"],
                 "field": r["field"], "randomised": bool(r["randomised"]), "repeats": r["repeats"],
                 "source": r["source"]}
                for r in store.spec_rows(sid)]


def clean_scores(db: Store | str | Path, sweep: int | str) -> dict[str, dict[str, float]]:
    """{model: {"em", "f1", "n"}}: clean EM/F1 (percent) over all of the sweep's examples done so far."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        return {r["model"]: {"em": 100.0 * r["em"], "f1": 100.0 * r["f1"], "n": r["n"]}
                for r in store.clean_means(sid)}


@dataclass
class Cell:
    """One heatmap cell: a model under one perturbation spec (scores in percent)."""

    model: str
    perturbation: str
    params: dict
    params_json: str
    label: str
    family: str
    field: str
    n: int                     # distinct examples scored (where the perturbation applied)
    n_repeats: int
    n_not_applicable: int      # rows with status n/a or error (all repeats)
    clean_f1: float | None
    clean_em: float | None
    f1: float | None
    em: float | None
    f1_pct: float | None
    em_pct: float | None
    f1_drop: float | None      # clean - perturbed (points)
    em_drop: float | None
    f1_band: str | None
    em_band: str | None
    f1_penalty: int | None
    em_penalty: int | None
    f1_repeat_sd: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cells(db: Store | str | Path, sweep: int | str) -> list[Cell]:
    """Every (model, spec) cell of the sweep, models in sweep order, specs in sweep order."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        per_repeat: dict[tuple, list] = defaultdict(list)
        for r in store.repeat_means(sid):
            per_repeat[(r["model"], r["perturbation"], r["params_json"])].append(r)
        distinct, skipped = store.result_counts(sid)
        specs = sweep_specs(store, sid)
        out = []
        for model in store.models(sid):
            for s in specs:
                key = (model, s["perturbation"], s["params_json"])
                out.append(_make_cell(model, s, per_repeat.get(key, []), distinct.get(key, 0),
                                      skipped.get(key, 0)))
        return out


def model_differences(db: Store | str | Path, sweep: int | str, model_a: str, model_b: str,
                      seed: int = 0) -> list[dict[str, Any]]:
    """Is ``model_b`` really better than ``model_a``? One row for clean and one per spec: B - A in
    F1 points over the examples both models were scored on (each example's F1 averaged over its
    repeats first), with a 95% paired-bootstrap interval over examples (:mod:`core.metrics.paired`)
    and whether it excludes 0. Rows with fewer than two shared examples have no interval."""
    if model_a == model_b:
        raise ValueError("compare two different models")
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        for m in (model_a, model_b):
            if m not in models:
                raise ValueError(f"model {m!r} is not in this sweep (it has {', '.join(models)})")
        per_key: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(
            lambda: {model_a: defaultdict(list), model_b: defaultdict(list)})
        for r in store.clean_scores(sid, (model_a, model_b)):
            per_key[("", "")][r["model"]][r["example_hash"]].append(r["f1"])
        for r in store.perturbed_scores(sid, (model_a, model_b)):
            per_key[(r["perturbation"], r["params_json"])][r["model"]][r["example_hash"]].append(r["f1"])
        specs = [("", "", "clean", "clean")] + [(x["perturbation"], x["params_json"], x["label"], x["family"])
                                                for x in sweep_specs(store, sid)]
    rows = []
    for perturbation, params_json, label, family in specs:
        by_model = per_key.get((perturbation, params_json), {model_a: {}, model_b: {}})
        shared = sorted(set(by_model[model_a]) & set(by_model[model_b]))
        a = [_mean(by_model[model_a][h]) for h in shared]
        b = [_mean(by_model[model_b][h]) for h in shared]
        row: dict[str, Any] = {"spec": label, "family": family, "perturbation": perturbation or None,
                               "params_json": params_json or None, "n": len(shared),
                               f"F1 {model_a}": None, f"F1 {model_b}": None, "difference": None,
                               "ci95_low": None, "ci95_high": None, "significant": None}
        if len(shared) >= 2:
            d = paired_difference(a, b, seed=seed)
            row.update({f"F1 {model_a}": round(100 * d["mean_a"], 2), f"F1 {model_b}": round(100 * d["mean_b"], 2),
                        "difference": round(100 * d["difference"], 2), "ci95_low": round(100 * d["ci_low"], 2),
                        "ci95_high": round(100 * d["ci_high"], 2), "significant": d["significant"]})
        rows.append(row)
    return rows


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _make_cell(model: str, spec: dict, repeats: list, n: int, skipped: int) -> Cell:
    base = dict(model=model, perturbation=spec["perturbation"], params=spec["params"],
                params_json=spec["params_json"], label=spec["label"], family=spec["family"],
                field=spec["field"], n=n, n_repeats=len(repeats), n_not_applicable=skipped)
    if not repeats:
        return Cell(**base, clean_f1=None, clean_em=None, f1=None, em=None, f1_pct=None, em_pct=None,
                    f1_drop=None, em_drop=None, f1_band=None, em_band=None, f1_penalty=None,
                    em_penalty=None, f1_repeat_sd=None)
    f1s = [100.0 * r["f1"] for r in repeats]
    scores = {
        "f1": _mean(f1s), "em": _mean([100.0 * r["em"] for r in repeats]),
        "clean_f1": _mean([100.0 * r["clean_f1"] for r in repeats]),
        "clean_em": _mean([100.0 * r["clean_em"] for r in repeats]),
    }
    f1_pct = pct_change(scores["clean_f1"], scores["f1"])
    em_pct = pct_change(scores["clean_em"], scores["em"])
    return Cell(**base, **scores, f1_pct=f1_pct, em_pct=em_pct,
                f1_drop=scores["clean_f1"] - scores["f1"], em_drop=scores["clean_em"] - scores["em"],
                f1_band=band(f1_pct), em_band=band(em_pct), f1_penalty=penalty(f1_pct),
                em_penalty=penalty(em_pct),
                f1_repeat_sd=statistics.stdev(f1s) if len(f1s) > 1 else None)


def penalty_totals(cell_list: Sequence[Cell], metric: str = "f1") -> dict[str, int]:
    """{model: sum of its cells' penalties} for metric "f1" or "em" (cells without scores add 0)."""
    if metric not in ("f1", "em"):
        raise ValueError(f"metric must be 'f1' or 'em', got {metric!r}")
    totals: dict[str, int] = {}
    for c in cell_list:
        p = getattr(c, f"{metric}_penalty")
        totals[c.model] = totals.get(c.model, 0) + (p or 0)
    return totals


def penalty_table(db: Store | str | Path, sweep: int | str, param: str | None = None,
                  metric: str = "f1", cell_list: Sequence[Cell] | None = None) -> dict[str, Any]:
    """The German paper's penalty table over n: {"param", "ns", "rows": {model: {n: total}},
    "cells": {n: number of specs with that n}}.

    A spec's n is the value of its parameter ``param`` ("n_words" or "n_chars"); by default the one
    of those two with more distinct values across the sweep's specs. Specs without the parameter
    are left out. The total for (model, n) is the sum of the penalties of that model's cells
    whose spec has that n. ``cell_list``: the sweep's cells when already read (not read again).
    """
    cell_list = cells(db, sweep) if cell_list is None else cell_list
    if param is None:
        counts = {p: len({c.params[p] for c in cell_list if p in c.params}) for p in ("n_words", "n_chars")}
        param = max(counts, key=lambda p: (counts[p], p == "n_chars"))
    ns = sorted({c.params[param] for c in cell_list if param in c.params})
    rows: dict[str, dict[Any, int]] = {}
    n_specs: dict[Any, set] = defaultdict(set)
    for c in cell_list:
        if param not in c.params:
            continue
        row = rows.setdefault(c.model, {n: 0 for n in ns})
        row[c.params[param]] += getattr(c, f"{metric}_penalty") or 0
        n_specs[c.params[param]].add((c.perturbation, c.params_json))
    return {"param": param, "ns": ns, "rows": rows, "cells": {n: len(n_specs[n]) for n in ns}}


def _params_json(params: dict | str | None) -> str | None:
    """A spec's stored params_json (None: every spec of the perturbation)."""
    if params is None:
        return None
    return params if isinstance(params, str) else json.dumps(params, sort_keys=True, separators=(",", ":"),
                                                             ensure_ascii=False)


def cell_examples(db: Store | str | Path, sweep: int | str, model: str, perturbation: str,
                  params: dict | str | None = None, limit: int | None = None,
                  include_not_applicable: bool = False) -> list[dict[str, Any]]:
    """The examples behind one cell, largest F1 loss (clean F1 - perturbed F1) first.

    Each row: example id, repeat, original and perturbed question, what changed (field), the
    context (and the perturbed context when it changed), gold answers, clean and perturbed
    answers with their spans, EM/F1 (in [0, 1]) and ``f1_loss``. Ties keep the sweep's example
    order, then repeat. ``params`` selects one spec when a perturbation ran with several.
    """
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        out = []
        for r in store.cell_rows(sid, model, perturbation, _params_json(params),
                                 scored_only=not include_not_applicable, limit=limit):
            d = dict(r)
            gold = json.loads(d.pop("gold_json"))
            d["golds"], d["gold_starts"] = [a[0] for a in gold], [a[1] for a in gold]
            vg = d.pop("variant_gold_json")
            d["perturbed_golds"] = [a[0] for a in json.loads(vg)] if vg else []
            d["perturbed_gold_starts"] = [a[1] for a in json.loads(vg)] if vg else []
            if d["perturbed_context"] == d["context"]:
                d["perturbed_context"] = None
            d["f1_loss"] = d["clean_f1"] - d["f1"] if d["f1"] is not None and d["clean_f1"] is not None else None
            out.append(d)
        return out


def noise_rates(db: Store | str | Path, sweep: int | str) -> dict[tuple[str, str], dict[str, float]]:
    """NoiseQA Table 3 for a sweep: how far each question perturbation moved the questions.

    {(perturbation, params_json): {"n", "cer", "wer", "bleu", "t3_cer", "t3_wer", "wer_norm"}}:
    ``t3_cer`` / ``t3_wer`` / ``bleu`` are Table 3 as the paper defines it (CER and WER on
    lower-cased text without punctuation, BLEU uncased as written:
    :func:`core.metrics.text_distance.table3_summary`); ``cer`` / ``wer`` the raw figures, case and
    punctuation counted (:func:`~core.metrics.text_distance.noise_summary`); ``wer_norm`` is
    ``t3_wer`` (its older name), over
    the distinct variants the sweep scored (every repeat counts once, however many models
    answered it). Context-only perturbations are left out: their question is the original.
    """
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
        for r in store.question_pairs(sid):
            originals, noisy = pairs[(r["perturbation"], r["params_json"])]
            originals.append(r["original"])
            noisy.append(r["noisy"] or "")
    out = {}
    for key, (o, h) in pairs.items():
        t3 = table3_summary(o, h)
        out[key] = {"n": len(o), **noise_summary(o, h), "t3_cer": t3["cer"], "t3_wer": t3["wer"],
                    "wer_norm": t3["wer"]}
    return out


def _ok_rows(store: Store, sid: int, families: Sequence[str] | None,
             perturbations: Sequence[str] | None) -> list:
    specs = sweep_specs(store, sid)
    chosen = [(s["perturbation"], s["params_json"]) for s in specs
              if (perturbations is not None and s["perturbation"] in perturbations)
              or (perturbations is None and families is not None and s["family"] in families)]
    rows = []
    for pid, pj in chosen:
        rows += store.scored_answer_rows(sid, pid, pj)
    return rows


def dpr_table(db: Store | str | Path, sweep: int | str, families: Sequence[str] | None = ("paraphrase",),
              perturbations: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """DPR (percent) per model and spec, plus one "(all)" row per model pooling its pairs.

    Specs are chosen by ``perturbations`` (ids) when given, else by ``families``. Rows:
    {"model", "perturbation", "params_json", "n", "dpr"}. Empty when no spec matches.
    """
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        groups: dict[tuple, list[bool]] = defaultdict(list)
        for r in _ok_rows(store, sid, families, perturbations):
            differ = predictions_differ(r["clean_answer"], r["answer"], r["lang"])
            groups[(r["model"], r["perturbation"], r["params_json"])].append(differ)
            groups[(r["model"], "(all)", "")].append(differ)
        order = {m: i for i, m in enumerate(store.models(sid))}
        return [{"model": m, "perturbation": p, "params_json": pj, "n": len(v),
                 "dpr": 100.0 * sum(v) / len(v)}
                for (m, p, pj), v in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 0),
                                                                            kv[0][1] == "(all)", kv[0][1]))]


def dpr_by_similarity(db: Store | str | Path, sweep: int | str, edges: Sequence[float] = DEFAULT_EDGES,
                      families: Sequence[str] | None = ("paraphrase",),
                      perturbations: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """{model: buckets}: DPR (percent, each bucket's ``mean``) by similarity of the perturbed
    question to the original (token F1, :func:`core.metrics.dpr.bucket_by` buckets)."""
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        sims: dict[str, list[float]] = defaultdict(list)
        flags: dict[str, list[float]] = defaultdict(list)
        for r in _ok_rows(store, sid, families, perturbations):
            sims[r["model"]].append(question_similarity(r["original_question"], r["variant_question"], r["lang"]))
            flags[r["model"]].append(100.0 if predictions_differ(r["clean_answer"], r["answer"], r["lang"]) else 0.0)
        return {m: bucket_by(sims[m], flags[m], edges) for m in store.models(sid) if m in sims}


def f1_by_trap_similarity(db: Store | str | Path, sweep: int | str, edges: Sequence[float] = DEFAULT_EDGES,
                          perturbation: str | None = None,
                          params: dict | str | None = None) -> dict[str, Any]:
    """F1 (percent) bucketed by question-trap similarity (over-stability; see :mod:`core.sweeps.analysis.traps`).

    Clean predictions by default; with ``perturbation`` (and ``params``) that spec's rows, the
    trap being looked up in the context the model saw, against the question it was asked.
    Returns {"buckets": {model: buckets}, "with_trap": n, "without_trap": n, "methods": {..: n}},
    counting examples (rows of the first model).
    """
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        if perturbation is None:
            rows = store.clean_with_contexts(sid)
        else:
            rows = store.variants_with_contexts(sid, perturbation, _params_json(params))
        sims: dict[str, list[float]] = defaultdict(list)
        f1s: dict[str, list[float]] = defaultdict(list)
        with_trap = without = 0
        methods: dict[str, int] = defaultdict(int)
        first = models[0] if models else None
        for r in rows:
            text, start = json.loads(r["answers_json"])[0]
            trap = find_trap(r["context"], r["question"], text, start, r["lang"])
            if r["model"] == first:
                if trap is None:
                    without += 1
                else:
                    with_trap += 1
                    methods[trap.method] += 1
            if trap is not None:
                sims[r["model"]].append(trap.similarity)
                f1s[r["model"]].append(100.0 * r["f1"])
        return {"buckets": {m: bucket_by(sims[m], f1s[m], edges) for m in models if m in sims},
                "with_trap": with_trap, "without_trap": without, "methods": dict(methods)}
