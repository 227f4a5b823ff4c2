"""Model cards: read and write a model's ``model_card.json``, render its README.md, and tabulate
the measured figures of several models.

``python -m core.models.evaluate --card`` writes each evaluation into the model's
``model_card.json`` under ``evaluations`` (keyed by data set) with :func:`write_card`, which also
regenerates the README.md (:func:`render_card_markdown`); ``core.models.ship`` writes the first
card of a shipped model. This module also turns the cards of several models into one
tidy table (a row per model x data set) and a data-set x model matrix of one metric, so the app can
show every model's measured quality side by side without re-running anything.

>>> cards = {
...     "a": {"evaluations": {"xquad/xquad.en": {"n": 1190, "exact_match": 57.0, "f1": 71.2,
...                                              "ms_per_question": 65.3, "threads": 1}}},
...     "b": {"evaluations": {"xquad/xquad.en": {"n": 1190, "exact_match": 67.8, "f1": 80.9},
...                           "../shared/data/train/cmrc2018/cmrc2018_dev.json": {"n": 3219, "f1": 47.3}}},
...     "c": None,
... }
>>> [(r["model"], r["dataset"], r["f1"]) for r in evaluation_rows(cards)]
[('a', 'xquad/xquad.en', 71.2), ('b', 'xquad/xquad.en', 80.9), ('b', 'train/cmrc2018/cmrc2018_dev', 47.3)]
>>> evaluation_matrix(evaluation_rows(cards), "f1").to_dict()  # doctest: +NORMALIZE_WHITESPACE
{'a': {'xquad/xquad.en': 71.2, 'train/cmrc2018/cmrc2018_dev': nan}, 'b': {'xquad/xquad.en': 80.9,
'train/cmrc2018/cmrc2018_dev': 47.3}}
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core import cli
from core.io import safe_json
from core.metrics import METRICS as ANSWER_METRICS

__all__ = ["read_card", "write_card", "render_card_markdown", "FIELDS", "METRICS", "CAPABILITY_FIELDS",
           "dataset_label", "evaluation_rows", "evaluation_matrix", "capability_rows", "capability_matrix"]

# The columns of a tidy row, in order; a card that lacks one leaves it None.
FIELDS = ("model", "dataset", "lang", "n", "exact_match", "f1", "ms_per_question", "threads", "max_answer_tokens",
          "hardware", "date")
# core.models.evaluate had no answer-length flag before it recorded the cap: older cards were measured
# with the engine's default of 30 tokens.
DEFAULT_ANSWER_TOKENS = 30
# cards name EM "exact_match" (the official SQuAD script's key); labels as core.metrics declares them
METRICS = {"f1": ANSWER_METRICS["f1"].label, "exact_match": ANSWER_METRICS["em"].label,
           "ms_per_question": "ms / question"}
# ``python -m core.behaviour FILE --card`` writes failure rates per family under ``capabilities``.
CAPABILITY_FIELDS = ("model", "file", "family", "n", "failed", "failure_rate", "date")


def dataset_label(key: str) -> str:
    """A card's data-set key as the app names data sets: relative to the data directory, no ``.json``.

    Most keys already are (``xquad/xquad.en``); a file evaluated by path keeps only what follows
    its ``data/`` folder.

    >>> dataset_label("../shared/data/train/cmrc2018/cmrc2018_dev.json")
    'train/cmrc2018/cmrc2018_dev'
    >>> dataset_label("noiseqa/Synthetic/xquad-asr-synthetic")
    'noiseqa/Synthetic/xquad-asr-synthetic'
    """
    k = key.replace("\\", "/")
    if "/data/" in k:
        k = k.split("/data/", 1)[1]
    return k[: -len(".json")] if k.endswith(".json") else k


def evaluation_rows(cards: dict[str, dict | None]) -> list[dict]:
    """One row per (model, data set) measured, models in the given order, data sets in card order.

    ``cards`` maps a model name to its card (None for a model without one, e.g. a hub model: it
    gives no rows). Values a card does not hold are None.
    """
    rows = []
    for model, card in cards.items():
        for key, ev in ((card or {}).get("evaluations") or {}).items():
            if not isinstance(ev, dict):
                continue
            row = {f: ev.get(f) for f in FIELDS}
            if row["max_answer_tokens"] is None:
                row["max_answer_tokens"] = DEFAULT_ANSWER_TOKENS
            row.update(model=model, dataset=dataset_label(key))
            rows.append(row)
    return rows


def evaluation_matrix(rows: list[dict], metric: str = "f1") -> pd.DataFrame:
    """Data sets (rows, in first-seen order) x models (columns, in first-seen order) of ``metric``;
    NaN where a model was not measured on a data set."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}: one of {', '.join(METRICS)}")
    models = list(dict.fromkeys(r["model"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    table = pd.DataFrame(index=datasets, columns=models, dtype=float)
    for r in rows:
        if r.get(metric) is not None:
            table.loc[r["dataset"], r["model"]] = float(r[metric])
    return table


def capability_rows(cards: dict[str, dict | None]) -> list[dict]:
    """One row per (model, behaviour file, family) a card's ``capabilities`` holds, in card order.

    >>> cards = {"a": {"capabilities": {"caps.toml": {"file": "caps.toml", "date": "2026-11-24", "families": {
    ...     "animal vs vehicle": {"n": 160, "failed": 40, "failure_rate": 25.0}}}}}, "b": None}
    >>> [(r["model"], r["family"], r["failure_rate"]) for r in capability_rows(cards)]
    [('a', 'animal vs vehicle', 25.0)]
    """
    rows = []
    for model, card in cards.items():
        for key, cap in ((card or {}).get("capabilities") or {}).items():
            if not isinstance(cap, dict):
                continue
            for family, f in (cap.get("families") or {}).items():
                if isinstance(f, dict):
                    rows.append({"model": model, "file": cap.get("file", key), "family": family, "n": f.get("n"),
                                 "failed": f.get("failed"), "failure_rate": f.get("failure_rate"),
                                 "date": cap.get("date")})
    return rows


def capability_matrix(rows: list[dict], file: str) -> pd.DataFrame:
    """Families (rows, first-seen order) x models (columns) of the failure rate in % on one behaviour
    file; NaN where a model was not run on it."""
    rows = [r for r in rows if r["file"] == file]
    models = list(dict.fromkeys(r["model"] for r in rows))
    families = list(dict.fromkeys(r["family"] for r in rows))
    table = pd.DataFrame(index=families, columns=models, dtype=float)
    for r in rows:
        if r.get("failure_rate") is not None:
            table.loc[r["family"], r["model"]] = float(r["failure_rate"])
    return table


# ----------------------------------------------------------------------------------------------
# One card: read, write, render


def write_card(model_dir: Path, results: list[dict]) -> Path:
    """Merge ``results`` (evaluations, keyed by their data set) into the model's card and
    regenerate its README.md; returns the card's path."""
    card_path = model_dir / "model_card.json"
    card = read_card(model_dir)
    evals = card.setdefault("evaluations", {})
    for r in results:
        evals[r["dataset"]] = r
    # each file whole or not at all: an error half-way never leaves a truncated card
    cli.write_text_atomic(card_path, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    cli.write_text_atomic(model_dir / "README.md", render_card_markdown(card))
    return card_path


def write_backends(model_dir: Path, comparison: dict) -> Path:
    """Record a backend comparison (benchmarks/qa_throughput.py --compare-backends) in the card as
    ``backends``: its ``default`` is what ``EngineSettings(backend="default")`` runs for this model
    (core.qa.registry.ModelEntry.default_backend). Regenerates README.md; returns the card's path."""
    card_path = model_dir / "model_card.json"
    card = read_card(model_dir)
    card["backends"] = comparison
    cli.write_text_atomic(card_path, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    cli.write_text_atomic(model_dir / "README.md", render_card_markdown(card))
    return card_path


def write_memory(model_dir: Path, backend: str, figures: dict) -> Path:
    """Record what the model holds in memory once loaded on ``backend`` (benchmarks/model_memory.py
    --card) under the card's ``memory.backends``: the engine cache (core.qa.engine_cache) makes
    that much room before loading it. Regenerates README.md; returns the card's path."""
    card_path = model_dir / "model_card.json"
    card = read_card(model_dir)
    card.setdefault("memory", {}).setdefault("backends", {})[backend] = figures
    cli.write_text_atomic(card_path, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    cli.write_text_atomic(model_dir / "README.md", render_card_markdown(card))
    return card_path


def _memory_lines(backends: dict) -> list[str]:
    """The card's memory figures as a Markdown section."""
    lines = ["## Memory (benchmarks/model_memory.py)", "",
             "| backend | resident MB | torch copy let go of, MB | load s | measured | hardware |",
             "|---|---|---|---|---|---|"]
    for name, m in backends.items():
        lines.append(f"| {name} | {m.get('resident_mb')} | {m.get('torch_copy_mb')} | {m.get('load_s')} | "
                     f"{m.get('date', '')} | {m.get('hardware', '')} |")
    return lines + ["", "Resident: what the process holds while the model is loaded (after answering "
                        f"{next(iter(backends.values())).get('answers', '')} demo questions) and gets back "
                        "when it lets go of it; the app's engine cache counts it against "
                        "QAX_MODEL_MEMORY_MB. Torch copy: the weights an ONNX engine used to keep beside "
                        "its graph.", ""]


def read_card(model_dir: Path) -> dict:
    """The model's card ({} when it has none); ValueError when it is not a JSON object."""
    card_path = model_dir / "model_card.json"
    if not card_path.is_file():
        return {}
    return safe_json.read_object(card_path)


def _backend_lines(bk: dict) -> list[str]:
    """The card's backend comparison as a Markdown section."""
    load = bk.get("load_average") or {}
    lines = [f"## Engine backends (benchmarks/qa_throughput.py --compare-backends, {bk.get('date', '')})", "",
             f"{bk.get('dataset')}, the first {bk.get('n')} questions, {bk.get('hardware', '')}, threads "
             f"{bk.get('threads')}, load average {load.get('before', ['?'])[0]} before and "
             f"{load.get('after', ['?'])[0]} after. {bk.get('method', '')}.", "",
             "| backend | recipe | questions/s | ms/question | CPU ms/question | x torch | F1 | EM "
             "| same spans as torch |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, b in bk["backends"].items():
        lines.append(f"| {name} | {b.get('recipe', '')} | {b.get('questions_per_second')} | "
                     f"{b.get('ms_per_question')} | "
                     f"{b.get('cpu_ms_per_question')} | {b.get('speedup_over_torch')} | {b.get('f1')} | "
                     f"{b.get('exact_match')} | {100 * b.get('identical_spans_to_torch', 0):.1f}% |")
    lines += ["", f"Default backend: **{bk.get('default')}** ({bk.get('rule', '')}); "
                  "`backend=\"default\"` (the app's and the CLIs' default) runs it for this model.", ""]
    return lines


def render_card_markdown(card: dict) -> str:
    """The README.md of a model: its card as Markdown (base, weights, training, measured
    figures, capabilities, notes)."""
    lines = [f"# {card.get('name', 'model')}", "", card.get("description", ""), ""]
    if base := card.get("base"):
        heading = "Base model" if card.get("kind") == "generative" else "Base encoder"   # an LLM is a decoder
        lines += [f"## {heading}", "", f"- package: {base.get('package')} (licence {base.get('licence')})",
                  f"- model: {base.get('model')}", ""]
    if runtime := card.get("runtime"):
        lines += ["## Runtime", ""] + [f"- {k.replace('_', ' ')}: {v}" for k, v in runtime.items()] + [""]
    if fmt := card.get("format"):
        lines += ["## Weights", "", f"- format: {fmt}"]
        if size := card.get("size_on_disk"):
            lines.append(f"- size on disk: {size}")
        for k, v in (card.get("adapter") or {}).items():
            lines.append(f"- {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
        lines.append("")
    if tr := card.get("training"):
        lines += ["## Training", ""]
        for k, v in tr.items():
            if k == "data":
                lines.append("- data:")
                lines += [f"  - {name}: {v2}" for name, v2 in v.items()]
            elif isinstance(v, list):
                lines.append(f"- {k}:")
                lines += [f"  {i}. {item}" for i, item in enumerate(v, 1)]
            else:
                lines.append(f"- {k}: {v}")
        lines.append("")
    if ev := card.get("evaluations"):
        lines += ["## Measured (python -m core.models.evaluate)", "",
                  "| data set | lang | n | EM | F1 | answer cap (tokens) | backend | threads | ms/question | "
                  "questions/s | date |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in ev.values():
            lines.append(f"| {r['dataset']} | {r['lang']} | {r['n']} | {r['exact_match']:.1f} | {r['f1']:.1f} | "
                         f"{r.get('max_answer_tokens', 30)} | {r.get('backend', 'torch')} | "
                         f"{r.get('threads') or 'all'} | {r['ms_per_question']} | {r['questions_per_second']} | "
                         f"{r['date']} |")
        lines += ["", "The answer cap is the longest span the engine may return (EngineSettings."
                      "max_answer_tokens; cards from before it was recorded were measured at 30). The "
                      "backend is the one that answered (cards from before it was recorded: torch).", ""]
        lines.append("")
    if (bk := card.get("backends")) and bk.get("backends"):
        lines += _backend_lines(bk)
    if (mem := card.get("memory")) and isinstance(mem.get("backends"), dict) and mem["backends"]:
        lines += _memory_lines(mem["backends"])
    for cap in (card.get("capabilities") or {}).values():
        lines += [f"## Capabilities: {cap.get('name', '')} (python -m core.behaviour --card)", "",
                  f"{cap.get('file')}, {cap.get('n')} cases, seed {cap.get('seed')}, {cap.get('date')}.", "",
                  "| family | cases | failed | failure rate % |", "|---|---|---|---|"]
        for fam, f in (cap.get("families") or {}).items():
            lines.append(f"| {fam} | {f.get('n')} | {f.get('failed')} | {f.get('failure_rate')} |")
        lines.append("")
    if notes := card.get("notes"):
        lines += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)
