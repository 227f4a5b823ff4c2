"""NoiseQA's mitigation table (Ravichander et al. 2021, Tables 4-5 style) from a stored sweep.

A sweep measures question repair by chaining ``repair_Q`` after the noise (core.sweeps chains:
``keyboard_Q,keyboard_Q+repair_Q:mode=all``). This module pairs each repaired spec with the spec
it repairs - ``A+repair_Q`` with ``A``, a lone ``repair_Q`` with the clean questions - and reports,
per interface and model (the noise-augmented twin is one more model of the sweep):

  clean F1 (on the same questions), noisy F1, and per repair setting the repaired F1 and the gain
  (repaired - noisy) with a 95% paired-bootstrap interval over questions
  (:func:`core.metrics.paired.paired_difference`).

Pairing is per question: both rows must be scored (status ok). A randomised noise runs the same
draws in both specs (core.sweeps gives a chain's first step its own random numbers), so each
question's noisy and repaired versions differ only by the repair; a question's F1 is averaged over
its repeats first. The setting's name says what was on: ``content`` / ``entities`` / ``all``
(the context repair's mode), ``spellcheck``, ``question mark``, joined with " + ".
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.metrics.paired import paired_difference
from core.perturb.spec import chain_steps
from core.sweeps.analysis.sweep_cells import reading, sweep_specs
from core.sweeps.analysis.tables import INTERFACES, interface_of, kind_of
from core.sweeps.store import Store, canonical_json

__all__ = ["REPAIR_ID", "SETTINGS", "repair_setting", "repair_specs", "repair_pairs", "repair_table",
           "format_repair_table"]

REPAIR_ID = "repair_Q"
CLEAN = ("", "")


def repair_setting(params: dict[str, Any]) -> str:
    """The name of a repair_Q setting from its (qualified or plain) parameters.

    >>> repair_setting({"repair_Q.mode": "entities", "repair_Q.spellcheck": False, "keyboard_Q.p": 0.25})
    'entities'
    >>> repair_setting({"mode": "none", "spellcheck": True, "question_mark": True})
    'spellcheck + question mark'
    >>> repair_setting({"mode": "content", "max_cer": 0.3})
    'content (CER <= 0.3)'
    """
    own = {k.rpartition(".")[2]: v for k, v in params.items() if k.startswith(REPAIR_ID + ".") or "." not in k}
    parts = [] if own.get("mode", "content") == "none" else [str(own.get("mode", "content"))]
    if parts and own.get("max_cer", 0.5) != 0.5:
        parts[0] += f" (CER <= {own['max_cer']})"
    if own.get("spellcheck"):
        parts.append("spellcheck")
    if own.get("question_mark"):
        parts.append("question mark")
    return " + ".join(parts) or "nothing"


# The repair settings a page offers, as repair_Q parameters.
SETTINGS = {"content": {"mode": "content"}, "entities": {"mode": "entities"}, "all": {"mode": "all"},
            "spellcheck": {"mode": "none", "spellcheck": True},
            "question mark": {"mode": "none", "question_mark": True}}


def repair_specs(specs: Sequence[Any], settings: Sequence[str], question_ids: set[str]) -> list[Any]:
    """The specs that measure ``settings`` against ``specs``: for each setting, repair_Q alone (on
    the clean questions) and ``S+repair_Q`` for every spec S that changes the question (a registry id
    in ``question_ids``, or a challenge file). Parameters go to repair_Q by name (``repair_Q.mode``).

    >>> from core.perturb.spec import PerturbationSpec
    >>> out = repair_specs([PerturbationSpec.make("keyboard_Q", {"p": 0.5}), PerturbationSpec("DCRC")],
    ...                    ["spellcheck"], {"keyboard_Q"})
    >>> [(s.id, s.params_dict) for s in out]   # doctest: +NORMALIZE_WHITESPACE
    [('repair_Q', {'mode': 'none', 'spellcheck': True}),
     ('keyboard_Q+repair_Q', {'p': 0.5, 'repair_Q.mode': 'none', 'repair_Q.spellcheck': True})]
    """
    from core.perturb.spec import PerturbationSpec

    out = []
    for name in settings:
        own = {f"{REPAIR_ID}.{k}": v for k, v in SETTINGS[name].items()}
        out.append(PerturbationSpec.make(REPAIR_ID, SETTINGS[name]))
        for spec in specs:
            if spec.is_chain or not (spec.is_file or spec.id in question_ids):
                continue
            out.append(PerturbationSpec.make(f"{spec.id}+{REPAIR_ID}", {**spec.params_dict, **own}))
    return out


def _base_of(perturbation: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The spec a repaired spec repairs: (perturbation, params), ("", {}) for clean, None if it is no repair."""
    steps = chain_steps(perturbation)
    if steps[-1] != REPAIR_ID:
        return None
    if len(steps) == 1:
        return "", {}
    base_steps = steps[:-1]
    prefixes = tuple(s + "." for s in base_steps)
    own = {k: v for k, v in params.items() if k.startswith(prefixes)}
    if len(base_steps) == 1:
        own = {k.partition(".")[2]: v for k, v in own.items()}
    return "+".join(base_steps), own


def repair_pairs(specs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each repaired spec of ``specs`` (core.sweeps.analysis.sweep_cells.sweep_specs rows) with the spec it repairs.

    Rows: ``base`` ((perturbation, params_json), ``CLEAN`` for a lone repair_Q), ``base_label``,
    ``family``, ``repaired`` ((perturbation, params_json)), ``setting``. A repaired spec whose base
    is not in the sweep is left out (nothing to compare it with).
    """
    present = {(s["perturbation"], s["params_json"]): s for s in specs}
    out = []
    for s in specs:
        base = _base_of(s["perturbation"], s["params"])
        if base is None:
            continue
        key = CLEAN if base[0] == "" else (base[0], canonical_json(base[1]))
        if key != CLEAN and key not in present:
            continue
        b = present.get(key)
        out.append({"base": key, "base_label": b["label"] if b else "clean",
                    "family": b["family"] if b else "clean", "repaired": (s["perturbation"], s["params_json"]),
                    "setting": repair_setting(s["params"])})
    return out


def _interface(perturbation: str, family: str) -> tuple[str, str]:
    if perturbation == "":
        return "clean", ""
    found = interface_of(perturbation, family)
    return (INTERFACES[found] if found else family), kind_of(perturbation)


def repair_table(db: Store | str | Path, sweep: int | str, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (noise spec, model, repair setting), NoiseQA's layout (see module doc).

    Keys: interface, kind, noise, model, setting, N, clean F1, noisy F1, repaired F1, gain,
    ci95_low, ci95_high, significant, changed % (questions the repair changed). F1 in points.
    Empty when the sweep has no repaired spec.
    """
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        specs = sweep_specs(store, sid)
        pairs = repair_pairs(specs)
        if not pairs:
            return []
        models = store.models(sid)
        clean: dict[tuple[str, str], float] = {
            (r["model"], r["example_hash"]): r["f1"] for r in store.clean_scores(sid)}
        scores: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        wanted = {p["base"] for p in pairs} | {p["repaired"] for p in pairs}
        for r in store.perturbed_scores(sid):
            if (r["perturbation"], r["params_json"]) in wanted:
                scores[(r["model"], r["perturbation"], r["params_json"])][r["example_hash"]].append(r["f1"])
        changed = {p["repaired"]: _changed_share(store, sid, p["base"], p["repaired"]) for p in pairs}
    rows = []
    for p in pairs:
        interface, kind = _interface(p["base"][0], p["family"])
        for m in models:
            if p["base"] == CLEAN:
                base_scores = {h: [f] for (mm, h), f in clean.items() if mm == m}
            else:
                base_scores = scores.get((m, *p["base"]), {})
            fixed = scores.get((m, *p["repaired"]), {})
            shared = sorted(set(base_scores) & set(fixed) & {h for (mm, h) in clean if mm == m})
            row: dict[str, Any] = {"interface": interface, "kind": kind, "noise": p["base_label"], "model": m,
                                   "setting": p["setting"], "N": len(shared), "clean F1": None, "noisy F1": None,
                                   "repaired F1": None, "gain": None, "ci95_low": None, "ci95_high": None,
                                   "significant": None,
                                   "changed %": None if changed[p["repaired"]] is None
                                   else round(100 * changed[p["repaired"]], 1)}
            if len(shared) >= 2:
                noisy = [_mean(base_scores[h]) for h in shared]
                repaired = [_mean(fixed[h]) for h in shared]
                d = paired_difference(noisy, repaired, seed=seed)
                row.update({"clean F1": round(100 * _mean([clean[(m, h)] for h in shared]), 2),
                            "noisy F1": round(100 * d["mean_a"], 2), "repaired F1": round(100 * d["mean_b"], 2),
                            "gain": round(100 * d["difference"], 2), "ci95_low": round(100 * d["ci_low"], 2),
                            "ci95_high": round(100 * d["ci_high"], 2), "significant": d["significant"]})
            rows.append(row)
    order = {name: i for i, name in enumerate(["clean", *INTERFACES.values()])}
    model_rank = {m: i for i, m in enumerate(models)}
    rows.sort(key=lambda r: (order.get(r["interface"], len(order)), r["kind"], r["noise"], model_rank[r["model"]]))
    return rows


def _questions(store: Store, sid: int, spec: tuple[str, str]) -> dict[tuple[str, int], str]:
    """{(example hash, repeat): question} of a spec's scored variants (the original ones for CLEAN)."""
    if spec == CLEAN:
        return {(r[0], 0): r[1] for r in store.original_questions(sid)}
    return {(r[0], r[1]): r[2] for r in store.variant_questions(sid, *spec)}


def _changed_share(store: Store, sid: int, base: tuple[str, str], repaired: tuple[str, str]) -> float | None:
    """Share of the repaired questions that differ from the question they repaired."""
    before, after = _questions(store, sid, base), _questions(store, sid, repaired)
    if base == CLEAN:
        before = {(h, r): before[(h, 0)] for h, r in after if (h, 0) in before}
    shared = [k for k in after if k in before]
    return sum(after[k] != before[k] for k in shared) / len(shared) if shared else None


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def format_repair_table(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`repair_table` as plain text, one block per (noise, model).

    >>> print(format_repair_table([{"interface": "keyboard", "kind": "synthetic", "noise": "keyboard_Q",
    ...     "model": "m", "setting": "all", "N": 3, "clean F1": 80.0, "noisy F1": 60.0, "repaired F1": 70.0,
    ...     "gain": 10.0, "ci95_low": 0.0, "ci95_high": 20.0, "significant": False, "changed %": 66.7}]))
    Question repair (NoiseQA): F1 in points; gain = repaired - noisy, 95% paired-bootstrap interval over questions
    keyboard (synthetic) keyboard_Q, m
      all  N    3  clean  80.0  noisy  60.0  repaired  70.0  gain +10.00 [+0.00, +20.00]  repair changed 66.7%
    """
    if not rows:
        return "this sweep has no repaired spec (chain repair_Q after a noise: keyboard_Q+repair_Q:mode=all)"
    lines = ["Question repair (NoiseQA): F1 in points; gain = repaired - noisy, "
             "95% paired-bootstrap interval over questions"]
    width = max(len(r["setting"]) for r in rows)
    last = None
    for r in rows:
        head = (r["interface"], r["kind"], r["noise"], r["model"])
        if head != last:
            where = f"{r['interface']} ({r['kind']}) {r['noise']}" if r["kind"] else "clean questions"
            lines.append(f"{where}, {r['model']}")
            last = head
        if r["gain"] is None:
            lines.append(f"  {r['setting']:<{width}}  N {r['N']:>4}  too few questions scored")
            continue
        mark = "  significant" if r["significant"] else ""
        changed = "" if r["changed %"] is None else f"  repair changed {r['changed %']}%"
        lines.append(f"  {r['setting']:<{width}}  N {r['N']:>4}  clean {r['clean F1']:>5.1f}  "
                     f"noisy {r['noisy F1']:>5.1f}  "
                     f"repaired {r['repaired F1']:>5.1f}  gain {r['gain']:>+6.2f} [{r['ci95_low']:+.2f}, "
                     f"{r['ci95_high']:+.2f}]{changed}{mark}")
    return "\n".join(lines)


def repair_json(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as JSON (the page's export)."""
    return json.dumps(list(rows), indent=2)
