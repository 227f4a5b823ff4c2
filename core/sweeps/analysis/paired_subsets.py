"""Mitigations on natural noise as paired differences, XQuAD's paragraphs apart.

Two questions about a stored sweep, each answered with a paired bootstrap of the mean F1
difference over the questions both sides were scored on (:func:`core.metrics.paired.paired_difference`,
each example's F1 averaged over its repeats first), for all questions, for those on XQuAD's 240
paragraphs (SQuAD dev questions the shipped English models did not train on) and for the rest:

* :func:`model_gain`: model B against model A under each condition (clean and every spec): does an
  augmented model (``minilm-squad-noise``) hold up better than its base (``minilm-squad``)?
* :func:`step_gain`: under each model, a spec against another (``natural_Q+repair_Q`` against
  ``natural_Q``: does NoiseQA's repair win back what the human transcripts cost?).

``python -m core.sweeps.analysis.paired_subsets --db D --sweep S --models A,B`` prints both.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.datasets import normalize_context
from core.datasets.natural import xquad_contexts
from core.metrics.paired import paired_difference
from core.sweeps.analysis.sweep_cells import reading, sweep_specs
from core.sweeps.store import Store

__all__ = ["model_gain", "step_gain", "format_rows", "main", "PARTS"]

# The two paragraph subsets: XQuAD's 240 (never trained on by the shipped English models) and the
# others (the rest of SQuAD dev for the natural sets; any other data set's own paragraphs).
PARTS = ("xquad paragraphs", "other paragraphs")


def _scores(db: Store | str | Path, sweep: int | str):
    """(scores[(perturbation, params_json)][model][example hash] -> mean F1, subset of each hash, labels)."""
    scores: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    xquad = xquad_contexts()
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        for r in store.clean_scores(sid):
            scores[("", "")][r["model"]][r["example_hash"]].append(r["f1"])
        for r in store.perturbed_scores(sid):
            if r["f1"] is not None:
                scores[(r["perturbation"], r["params_json"])][r["model"]][r["example_hash"]].append(r["f1"])
        subset = {r["hash"]: PARTS[normalize_context(r["context"]) not in xquad]
                  for r in store.examples_in_order(sid)}
        labels = {("", ""): "clean", **{(s["perturbation"], s["params_json"]): s["label"]
                                        for s in sweep_specs(store, sid)}}
    mean = {key: {m: {h: sum(v) / len(v) for h, v in per.items()} for m, per in models.items()}
            for key, models in scores.items()}
    return mean, subset, labels


def _rows(a: dict[str, float], b: dict[str, float], subset: dict[str, str], seed: int,
          base: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for part in ("all", *PARTS):
        shared = sorted(h for h in set(a) & set(b) if part == "all" or subset.get(h) == part)
        row = {**base, "questions": part, "n": len(shared), "F1 a": None, "F1 b": None, "difference": None,
               "ci95_low": None, "ci95_high": None, "significant": None}
        if len(shared) >= 2:
            d = paired_difference([a[h] for h in shared], [b[h] for h in shared], seed=seed)
            row.update({"F1 a": round(100 * d["mean_a"], 2), "F1 b": round(100 * d["mean_b"], 2),
                        "difference": round(100 * d["difference"], 2), "ci95_low": round(100 * d["ci_low"], 2),
                        "ci95_high": round(100 * d["ci_high"], 2), "significant": d["significant"]})
        rows.append(row)
    return rows


def model_gain(db: Store | str | Path, sweep: int | str, model_a: str, model_b: str,
               seed: int = 0) -> list[dict[str, Any]]:
    """B - A in F1 points per condition (clean, each spec) and paragraph subset."""
    scores, subset, labels = _scores(db, sweep)
    rows = []
    for key, label in labels.items():
        per = scores.get(key, {})
        if model_a in per and model_b in per:
            rows += _rows(per[model_a], per[model_b], subset, seed, {"a": model_a, "b": model_b, "condition": label})
    return rows


def step_gain(db: Store | str | Path, sweep: int | str, spec_a: str, spec_b: str,
              seed: int = 0) -> list[dict[str, Any]]:
    """Per model: the spec labelled ``spec_b`` against the one labelled ``spec_a`` (F1 points), per subset."""
    scores, subset, labels = _scores(db, sweep)
    by_label = {label: key for key, label in labels.items()}
    for spec in (spec_a, spec_b):
        if spec not in by_label:
            raise ValueError(f"no spec {spec!r} in this sweep (it has {', '.join(by_label)})")
    a, b = scores.get(by_label[spec_a], {}), scores.get(by_label[spec_b], {})
    rows = []
    for model in sorted(set(a) & set(b)):
        rows += _rows(a[model], b[model], subset, seed, {"model": model, "a": spec_a, "b": spec_b})
    return rows


def format_rows(rows: Sequence[dict[str, Any]], what: str) -> str:
    lines = []
    for r in rows:
        if r["questions"] != "all" and not r["n"]:   # a data set with no question in this subset
            continue
        ci = "" if r["ci95_low"] is None else f" [{r['ci95_low']:+.2f}, {r['ci95_high']:+.2f}]"
        diff = "—" if r["difference"] is None else f"{r['difference']:+.2f}"
        scores = "— (fewer than 2 questions)" if r["F1 a"] is None else f"{r['F1 a']} -> {r['F1 b']}  {diff}{ci}"
        lines.append(f"{r[what]:<48} {r['questions']:<18} n={r['n']:<5} {scores}" + (" *" if r["significant"] else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from core import cli

    @cli.command("python -m core.sweeps.analysis.paired_subsets")
    def run(args_list: list[str]) -> int:
        ap = cli.ArgumentParser(prog="python -m core.sweeps.analysis.paired_subsets",
                                description="Paired F1 differences (models, or a spec against another), "
                                            "XQuAD's paragraphs apart.")
        ap.add_input("--db", required=True, help="the sweep database (read only)")
        ap.add_argument("--sweep", required=True)
        ap.add_argument("--models", default=None, help="A,B: model B against model A under every condition")
        ap.add_argument("--specs", default=None, help="A;B: the spec labelled B against the one labelled A, per model")
        ap.add_argument("--seed", type=cli.seed, default=0)
        args = ap.parse_args(args_list)
        if args.models:
            a, _, b = args.models.partition(",")
            print(f"{b} - {a} (F1 points, 95% paired bootstrap; * the interval excludes 0)")
            print(format_rows(model_gain(args.db, args.sweep, a, b, args.seed), "condition"))
        if args.specs:
            a, _, b = args.specs.partition(";")
            print(f"\n{b} - {a} (F1 points, 95% paired bootstrap; * the interval excludes 0)")
            print(format_rows(step_gain(args.db, args.sweep, a, b, args.seed), "model"))
        return 0

    return run(argv)


if __name__ == "__main__":
    raise SystemExit(main())
