"""Tables for the Heatmaps page built from a stored sweep's cells (core.sweeps.analysis.sweep_cells.Cell).

core.sweeps.analysis.sweep_cells computes the cells (clean vs perturbed scores, % change, band, penalty); this
module arranges them the way the papers report them. Everything returns plain lists of dicts
(one per table row), so the page turns them into DataFrames and CSV files as they are.

  * :func:`columns`: the heatmap's perturbation columns, grouped by family (families in
    alphabetical order, the order the Sweeps page lists them in; within a family the sweep's
    order, so DCRQ(n_chars=1..4) stay in sequence).
  * :func:`n_grid`: the same specs as a grid, one row per perturbation and one column per n (the
    number of perturbed words or characters): the German catalogue's 140 specs as 44 rows of n = 1..4.
  * :func:`n_grid_rows`: that grid as a table, the % change at each n and the penalties summed per
    row, the form the German catalogue's results are written in.
  * :func:`cell_rows`: one flat row per cell, for the CSV export of the heatmap.
  * :func:`noiseqa_table`: NoiseQA's Table 4 layout (Ravichander et al. 2021): one row per
    interface noise spec (keyboard / ASR / MT, synthetic or natural), and per model the clean
    and noisy EM and F1, clean measured on the same questions as noisy.
  * :func:`asr_breakdown`: ASR cells by TTS voice and ASR engine (``asr_Q`` parameters).
  * :func:`mt_breakdown`: MT cells by the source language of the translation into English.
  * :func:`penalty_rows`: core.sweeps.analysis.sweep_cells.penalty_table as rows.

Our choices:
  * interface of a spec = its family: "keyboard", "asr", "mt" (the registry's and
    core.sweeps's family names for files; ``translate_question`` is the German paper's
    de -> en -> de round trip, family "sentence", and is not an interface noise). A challenge
    file that core.sweeps filed under another family is placed by the words of its name:
    "keyboard", "asr", "mt" or "translation" (core.translate.natural_mt writes ``xquad-natural-mt-es``),
    or natural ASR when core.collect.trials wrote it (``trials/<id>/challenge/<engine>.json``);
  * a challenge *file* is "natural" when its path says so (NoiseQA's ``Natural/`` files and
    ``*-natural*`` names), else "synthetic" (NoiseQA's ``Synthetic/`` files); a registry
    generator is always "synthetic";
  * MT source language: a generator's ``pivot`` parameter (``backtranslate_Q``: English ->
    pivot -> English, so the text translated into English is in the pivot language); for
    ``pivot="auto"`` the pivot the generator actually used, read from the stored variants. A
    file: the language code in its name (``...-translation-natural-th``); NoiseQA's synthetic
    translation file, named without one, went through German (SEEDS.md §1), so "de".
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.perturb.spec import spec_label
from core.sweeps.analysis.sweep_cells import Cell
from core.sweeps.store import Store

__all__ = ["Column", "NGrid", "INTERFACES", "columns", "n_grid", "n_grid_rows", "cell_rows", "is_file_spec", "kind_of",
           "interface_of", "trial_file", "noiseqa_table", "asr_breakdown", "mt_breakdown", "penalty_rows",
           "specs_per_n"]

# Family -> interface name, in Table 4's row order.
INTERFACES = {"keyboard": "keyboard", "asr": "ASR", "mt": "MT"}
KINDS = ("synthetic", "natural")
# Language codes recognised in a translation file's name (XQuAD's languages and a few more).
_LANG_CODES = {"ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh", "fr", "it", "ja", "ko",
               "pt", "nl", "pl", "sv", "fi", "id", "he", "fa", "bn", "ta", "te", "ur", "uk", "cs"}
NOISEQA_SYNTHETIC_MT_PIVOT = "de"


@dataclass(frozen=True)
class Column:
    """One heatmap column: a perturbation spec."""

    perturbation: str
    params_json: str
    label: str
    family: str

    @property
    def key(self) -> tuple[str, str]:
        return self.perturbation, self.params_json


def columns(cell_list: Sequence[Cell]) -> list[Column]:
    """The distinct specs of ``cell_list``, grouped by family (alphabetical), sweep order within."""
    seen: dict[tuple[str, str], Column] = {}
    for c in cell_list:
        seen.setdefault((c.perturbation, c.params_json), Column(c.perturbation, c.params_json, c.label, c.family))
    position = {k: i for i, k in enumerate(seen)}
    return sorted(seen.values(), key=lambda col: (col.family, position[col.key]))


@dataclass(frozen=True)
class NGrid:
    """The specs of a sweep as perturbation rows x n columns (:func:`n_grid`)."""

    param: str                 # the n parameter across: "n_words" or "n_chars"
    values: tuple[int, ...]    # its values, ascending; a spec without it sits in the column NO_N after them
    rows: tuple[Column, ...]   # one per perturbation and other parameters, grouped by family as columns()
    row_of: Mapping[tuple[str, str], int]   # spec key -> row
    column_of: Mapping[tuple[str, str], int]   # spec key -> column (len(values) for the specs without n)
    # parameters with one value in every row that has them (two rows at least), left out of the
    # row labels and said once: the catalogue's n_chars=1 on each of its 20 character operations
    constants: Mapping[str, Any] = field(default_factory=dict)

    NO_N = "no n"

    @property
    def has_no_n(self) -> bool:
        return any(c == len(self.values) for c in self.column_of.values())

    @property
    def n_columns(self) -> int:
        return len(self.values) + self.has_no_n

    @property
    def column_labels(self) -> list[str]:
        return [str(v) for v in self.values] + ([self.NO_N] if self.has_no_n else [])


def n_grid(cell_list: Sequence[Cell]) -> NGrid | None:
    """The specs as rows of one perturbation (and its other parameters) by columns of n, the
    parameter of :func:`n_parameters` with the most values; None when no parameter takes two values
    (then there is no grid to fold the columns into) or two specs would fall into one cell.

    >>> from types import SimpleNamespace as C
    >>> cells = [C(perturbation="DCRQ", params={"n_chars": 1, "n_words": w}, params_json=f'{{"n_words": {w}}}',
    ...            label=f"DCRQ(n_words={w})", family="character") for w in (1, 2)]
    >>> cells.append(C(perturbation="TLQ", params={}, params_json="{}", label="TLQ", family="case"))
    >>> g = n_grid(cells)
    >>> g.param, g.values, [r.label for r in g.rows], g.column_labels, g.constants
    ('n_words', (1, 2), ['TLQ', 'DCRQ(n_chars=1)'], ['1', '2', 'no n'], {})
    >>> [(g.row_of[c.perturbation, c.params_json], g.column_of[c.perturbation, c.params_json]) for c in cells]
    [(1, 0), (1, 1), (0, 2)]
    >>> cells.extend(C(perturbation="ICRQ", params={"n_chars": 1, "n_words": w}, params_json=f'{{"n_words": {w}}}',
    ...                label=f"ICRQ(n_words={w})", family="character") for w in (1, 2))
    >>> g = n_grid(cells); [r.label for r in g.rows], g.constants
    (['TLQ', 'DCRQ', 'ICRQ'], {'n_chars': 1})
    """
    params = n_parameters(cell_list)
    if not params:
        return None
    param = params[0]
    values = tuple(sorted({c.params[param] for c in cell_list if param in c.params}))
    if len(values) < 2:
        return None
    rows: dict[tuple[str, str], Column] = {}
    row_key_of: dict[tuple[str, str], tuple[str, str]] = {}
    column_of: dict[tuple[str, str], int] = {}
    params_by_key = {(c.perturbation, c.params_json): c.params for c in cell_list}
    for col in columns(cell_list):
        params_of = params_by_key[col.key]
        rest = {k: v for k, v in params_of.items() if k != param}
        rest_json = json.dumps(rest, sort_keys=True)
        row_key = (col.perturbation, rest_json)
        rows.setdefault(row_key, Column(col.perturbation, rest_json, spec_label(col.perturbation, rest), col.family))
        row_key_of[col.key] = row_key
        column_of[col.key] = values.index(params_of[param]) if param in params_of else len(values)
    placed = {(row_key_of[k], column_of[k]) for k in column_of}
    if len(placed) < len(column_of):   # two specs would share a cell: their params do not tell them apart
        return None
    rests = [json.loads(r.params_json) for r in rows.values()]
    held = {k for rest in rests for k in rest}
    constants = {k: v for k in sorted(held)
                 for v in [next(rest[k] for rest in rests if k in rest)]
                 if sum(k in rest for rest in rests) >= 2 and all(rest.get(k, v) == v for rest in rests)}
    labelled = tuple(Column(r.perturbation, r.params_json,
                            spec_label(r.perturbation, {k: v for k, v in rest.items() if k not in constants}),
                            r.family) for r, rest in zip(rows.values(), rests))
    row_index = {k: i for i, k in enumerate(rows)}
    return NGrid(param, values, labelled, {k: row_index[r] for k, r in row_key_of.items()}, column_of, constants)


def n_grid_rows(cell_list: Sequence[Cell], metric: str = "f1",
                models: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """:func:`n_grid` as rows: per model and perturbation, the % change of ``metric`` at each n (None
    where the cell has no score or the spec does not exist), the fewest examples scored (N: the V
    operations apply to the questions with a verb) and the sum of the cells' penalties. [] when the
    specs form no grid.

    >>> from types import SimpleNamespace as C
    >>> cells = [C(model="m", perturbation="DCRQ", params={"n_words": w}, params_json=f'{{"n_words": {w}}}',
    ...            label=f"DCRQ(n_words={w})", family="character", n=5, f1_pct=p, f1_penalty=k)
    ...          for w, p, k in ((1, -4.54, 1), (2, -12.0, 2))]
    >>> cells.append(C(model="m", perturbation="TLQ", params={}, params_json="{}", label="TLQ", family="case", n=5,
    ...                f1_pct=0.0, f1_penalty=0))
    >>> n_grid_rows(cells)  # doctest: +NORMALIZE_WHITESPACE
    [{'model': 'm', 'family': 'case', 'perturbation': 'TLQ', 'N': 5, 'n_words=1': None, 'n_words=2': None,
      'no n': 0.0, 'penalty': 0},
     {'model': 'm', 'family': 'character', 'perturbation': 'DCRQ', 'N': 5, 'n_words=1': -4.54, 'n_words=2': -12.0,
      'no n': None, 'penalty': 3}]
    """
    grid = n_grid(cell_list)
    if grid is None:
        return []
    heads = [f"{grid.param}={v}" for v in grid.values] + ([grid.NO_N] if grid.has_no_n else [])
    by_place: dict[tuple[str, int], dict[int, Cell]] = {}
    for c in cell_list:
        key = (c.perturbation, c.params_json)
        by_place.setdefault((c.model, grid.row_of[key]), {})[grid.column_of[key]] = c
    rows = []
    for model in models or _models(cell_list):
        for r, row in enumerate(grid.rows):
            found = by_place.get((model, r))
            if not found:
                continue
            scored = [c.n for c in found.values() if c.n]
            out: dict[str, Any] = {"model": model, "family": row.family, "perturbation": row.label,
                                   "N": min(scored) if scored else 0}
            for j, head in enumerate(heads):
                c = found.get(j)
                out[head] = _r(getattr(c, f"{metric}_pct")) if c is not None else None
            out["penalty"] = sum(getattr(c, f"{metric}_penalty") or 0 for c in found.values())
            rows.append(out)
    return rows


def is_file_spec(perturbation: str) -> bool:
    return perturbation.startswith("file:")


def trial_file(perturbation: str) -> tuple[str, str] | None:
    """(trial id, ASR engine) for a natural ASR set written by core.collect.trials
    (``.../trials/<trial id>/challenge/<engine>.json``), else None."""
    if not is_file_spec(perturbation):
        return None
    parts = Path(perturbation[len("file:"):]).parts
    if len(parts) >= 4 and parts[-2] == "challenge" and parts[-4] == "trials":
        return parts[-3], Path(parts[-1]).name.removesuffix(".json")
    return None


def kind_of(perturbation: str) -> str:
    """"natural" for a challenge file whose path says natural (or a recorded trial's file), else
    "synthetic" (see module doc)."""
    if trial_file(perturbation) is not None or perturbation.split("+")[0] == "natural_Q":   # HeySQuAD, Disfl-QA
        return "natural"
    return "natural" if is_file_spec(perturbation) and "natural" in perturbation.lower() else "synthetic"


def interface_of(perturbation: str, family: str) -> str | None:
    """"keyboard" / "asr" / "mt" for interface noise (see module doc), else None."""
    if family in INTERFACES:
        return family
    if not is_file_spec(perturbation):
        return None
    if trial_file(perturbation) is not None:
        return "asr"
    words = set(re.split(r"[-_.]", Path(perturbation[len("file:"):]).name.lower()))
    if any(w.startswith("keyboard") for w in words):
        return "keyboard"
    if "asr" in words:
        return "asr"
    if words & {"mt", "translation", "translations"}:
        return "mt"
    return None


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def cell_rows(cell_list: Sequence[Cell], models: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per cell, models then columns in heatmap order, scores in percent (2 decimals)."""
    order = {col.key: i for i, col in enumerate(columns(cell_list))}
    model_order = {m: i for i, m in enumerate(models or dict.fromkeys(c.model for c in cell_list))}
    rows = []
    for c in sorted(cell_list, key=lambda c: (model_order.get(c.model, 0), order[(c.perturbation, c.params_json)])):
        rows.append({
            "model": c.model, "family": c.family, "perturbation": c.perturbation, "label": c.label,
            "params": c.params_json, "field": c.field, "N": c.n, "repeats": c.n_repeats,
            "n/a rows": c.n_not_applicable,
            "clean F1": _r(c.clean_f1), "F1": _r(c.f1), "F1 % change": _r(c.f1_pct), "F1 drop": _r(c.f1_drop),
            "F1 band": c.f1_band, "F1 penalty": c.f1_penalty, "F1 repeat SD": _r(c.f1_repeat_sd),
            "clean EM": _r(c.clean_em), "EM": _r(c.em), "EM % change": _r(c.em_pct), "EM drop": _r(c.em_drop),
            "EM band": c.em_band, "EM penalty": c.em_penalty,
        })
    return rows


def _models(cell_list: Sequence[Cell]) -> list[str]:
    return list(dict.fromkeys(c.model for c in cell_list))


def _rate_columns(rates: Mapping[tuple[str, str], Mapping[str, float]] | None,
                  perturbation: str, params_json: str) -> dict[str, Any]:
    """NoiseQA Table 3 of a spec from core.sweeps.analysis.sweep_cells.noise_rates: "CER % (Table 3)", "WER %
    (Table 3)" (lower-cased, without punctuation, as the paper computes them), "BLEU", and the raw
    "CER % (raw)", "WER % (raw)" where case and punctuation count (None when unknown)."""
    if rates is None:
        return {}
    r = rates.get((perturbation, params_json))
    return {"CER % (Table 3)": _r(r["t3_cer"]) if r else None, "WER % (Table 3)": _r(r["t3_wer"]) if r else None,
            "BLEU": _r(r["bleu"]) if r else None,
            "CER % (raw)": _r(r["cer"]) if r else None, "WER % (raw)": _r(r["wer"]) if r else None}


def noiseqa_table(cell_list: Sequence[Cell],
                  rates: Mapping[tuple[str, str], Mapping[str, float]] | None = None) -> list[dict[str, Any]]:
    """Table 4 layout: rows (interface, kind, spec), per model "<model> clean EM" / "clean F1" /
    "noisy EM" / "noisy F1" and "<model> N". Empty when the sweep has no interface noise. With
    ``rates`` (core.sweeps.analysis.sweep_cells.noise_rates) each row also carries the set's CER, WER and BLEU
    against the original questions (Table 3)."""
    models = _models(cell_list)
    by_key = {(c.model, c.perturbation, c.params_json): c for c in cell_list}
    interface_rank = {f: i for i, f in enumerate(INTERFACES)}
    cols = [(interface_of(col.perturbation, col.family), col) for col in columns(cell_list)]
    cols = sorted(((f, col) for f, col in cols if f), key=lambda fc: (interface_rank[fc[0]],
                                                                       KINDS.index(kind_of(fc[1].perturbation))))
    rows = []
    for interface, col in cols:
        row: dict[str, Any] = {"interface": INTERFACES[interface], "kind": kind_of(col.perturbation),
                               "perturbation": col.label,
                               **_rate_columns(rates, col.perturbation, col.params_json)}
        for m in models:
            c = by_key.get((m, col.perturbation, col.params_json))
            row[f"{m} N"] = c.n if c else 0
            row[f"{m} clean EM"] = _r(c.clean_em) if c else None
            row[f"{m} clean F1"] = _r(c.clean_f1) if c else None
            row[f"{m} noisy EM"] = _r(c.em) if c else None
            row[f"{m} noisy F1"] = _r(c.f1) if c else None
        rows.append(row)
    return rows


def _score_row(c: Cell) -> dict[str, Any]:
    return {"N": c.n, "clean EM": _r(c.clean_em), "EM": _r(c.em), "clean F1": _r(c.clean_f1), "F1": _r(c.f1),
            "F1 % change": _r(c.f1_pct), "EM % change": _r(c.em_pct)}


def asr_breakdown(cell_list: Sequence[Cell],
                  rates: Mapping[tuple[str, str], Mapping[str, float]] | None = None) -> list[dict[str, Any]]:
    """ASR cells with their voice and engine: {"model", "voice", "engine", "perturbation", scores},
    plus the transcripts' CER / WER / BLEU against the questions when ``rates`` is given.

    A generator cell takes ``voice`` / ``engine`` from its parameters; a challenge file has
    neither (its voice is the file's name, engine "(file)"), except a recorded trial's set
    (core.collect.trials): voice "speaker <trial id>", engine from the file name."""
    rows = []
    for c in cell_list:
        if interface_of(c.perturbation, c.family) != "asr":
            continue
        trial = trial_file(c.perturbation)
        if trial is not None:
            voice, engine = f"speaker {trial[0]}", trial[1]
        elif is_file_spec(c.perturbation):
            voice, engine = Path(c.perturbation[len("file:"):]).name, "(file)"
        else:
            voice, engine = str(c.params.get("voice", "?")), str(c.params.get("engine", "?"))
        rows.append({"model": c.model, "voice": voice, "engine": engine, "perturbation": c.label,
                     **_score_row(c), **_rate_columns(rates, c.perturbation, c.params_json)})
    return rows


def _file_language(perturbation: str) -> str:
    name = Path(perturbation[len("file:"):]).name.lower()
    codes = [t for t in re.split(r"[-_.]", name) if t in _LANG_CODES]
    if codes:
        return codes[-1]
    if "synthetic" in perturbation.lower():
        return NOISEQA_SYNTHETIC_MT_PIVOT
    return "?"


def _used_pivots(store: Store, sweep_id: int, perturbation: str, params_json: str) -> list[str]:
    rows = store.variant_metas(sweep_id, perturbation, params_json)
    pivots = set()
    for (meta,) in rows:
        try:
            pivot = json.loads(meta or "{}").get("pivot")
        except (json.JSONDecodeError, AttributeError):
            pivot = None
        if pivot:
            pivots.add(str(pivot))
    return sorted(pivots)


def mt_breakdown(db: Store | str | Path, sweep: int | str, cell_list: Sequence[Cell]) -> list[dict[str, Any]]:
    """MT cells by source language (see module doc): {"model", "source language", "perturbation",
    "kind", scores}. Empty when the sweep has no MT spec."""
    mt = [c for c in cell_list if interface_of(c.perturbation, c.family) == "mt"]
    if not mt:
        return []
    store = db if isinstance(db, Store) else Store(db, readonly=True)
    try:
        sid = store.sweep_id(sweep)
        language: dict[tuple[str, str], str] = {}
        for c in mt:
            key = (c.perturbation, c.params_json)
            if key in language:
                continue
            if is_file_spec(c.perturbation):
                language[key] = _file_language(c.perturbation)
                continue
            pivot = c.params.get("pivot")
            if pivot and pivot != "auto":
                language[key] = str(pivot)
            else:
                language[key] = "/".join(_used_pivots(store, sid, c.perturbation, c.params_json)) or "?"
    finally:
        if store is not db:
            store.close()
    return [{"model": c.model, "source language": language[(c.perturbation, c.params_json)],
             "perturbation": c.label, "kind": kind_of(c.perturbation), **_score_row(c)} for c in mt]


def specs_per_n(table: dict[str, Any]) -> str:
    """How many specs each n of a penalty table sums over, in words.

    >>> specs_per_n({"cells": {1: 1, 2: 3}})
    'n = 1: 1 spec; n = 2: 3 specs'
    """
    return "; ".join(f"n = {n}: {k} spec{'' if k == 1 else 's'}" for n, k in table["cells"].items())


def penalty_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """core.sweeps.analysis.sweep_cells.penalty_table -> rows {"model", "<param>=1", ..., "total"}."""
    param, ns = table["param"], table["ns"]
    rows = []
    for model, per_n in table["rows"].items():
        row: dict[str, Any] = {"model": model}
        for n in ns:
            row[f"{param}={n}"] = per_n[n]
        row["total"] = sum(per_n.values())
        rows.append(row)
    return rows


def penalty_summary(cell_list: Sequence[Cell], clean: Mapping[str, Mapping[str, float]],
                    models: Sequence[str]) -> list[dict[str, Any]]:
    """Per model: the German paper's penalty totals (F1 and EM: the sum of its cells' penalties,
    lower = more robust), its clean EM/F1 and how many of its cells were scored.

    >>> from types import SimpleNamespace as C
    >>> cs = [C(model="a", f1_penalty=2, em_penalty=3, n=5), C(model="a", f1_penalty=None, em_penalty=1, n=0)]
    >>> penalty_summary(cs, {"a": {"em": 50.0, "f1": 61.2}}, ["a", "b"])  # doctest: +NORMALIZE_WHITESPACE
    [{'model': 'a', 'penalty total (F1)': 2, 'penalty total (EM)': 4, 'clean EM': 50.0, 'clean F1': 61.2,
    'cells scored': 1}, {'model': 'b', 'penalty total (F1)': 0, 'penalty total (EM)': 0, 'clean EM': None,
    'clean F1': None, 'cells scored': 0}]
    """
    from core.sweeps.analysis.sweep_cells import penalty_totals

    f1, em = penalty_totals(cell_list, "f1"), penalty_totals(cell_list, "em")
    return [{"model": m, "penalty total (F1)": f1.get(m, 0), "penalty total (EM)": em.get(m, 0),
             "clean EM": clean.get(m, {}).get("em"), "clean F1": clean.get(m, {}).get("f1"),
             "cells scored": sum(1 for c in cell_list if c.model == m and c.n)} for m in models]


def clean_rows(clean: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """``sweep_cells.clean_scores`` as a table (EM/F1 to two decimals, N examples).

    >>> clean_rows({"a": {"em": 50.0, "f1": 61.234, "n": 12}})
    [{'model': 'a', 'clean EM': 50.0, 'clean F1': 61.23, 'N': 12}]
    """
    return [{"model": m, "clean EM": round(s["em"], 2), "clean F1": round(s["f1"], 2), "N": s["n"]}
            for m, s in clean.items()]


def n_parameters(cell_list: Sequence[Cell]) -> list[str]:
    """The n-count parameters the sweep varies ("n_chars", "n_words"), the one with more distinct
    values first (the one ``sweep_cells.penalty_table`` picks).

    >>> from types import SimpleNamespace as C
    >>> n_parameters([C(params={"n_words": 1}), C(params={"n_words": 2}), C(params={"n_chars": 1}), C(params={})])
    ['n_words', 'n_chars']
    """
    distinct = {p: len({c.params[p] for c in cell_list if p in c.params}) for p in ("n_chars", "n_words")}
    return sorted((p for p, k in distinct.items() if k), key=lambda p: -distinct[p])


def dpr_rows(rows: Sequence[Mapping[str, Any]], specs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``sweep_cells.dpr_table`` as a table, each perturbation under its spec's label.

    >>> dpr_rows([{"model": "a", "perturbation": "SwapRQ", "params_json": "{}", "n": 4, "dpr": 25.0}],
    ...          [{"perturbation": "SwapRQ", "params_json": "{}", "label": "SwapRQ (swap)"}])
    [{'model': 'a', 'perturbation': 'SwapRQ (swap)', 'N pairs': 4, 'DPR %': 25.0}]
    """
    label_of = {(s["perturbation"], s["params_json"]): s["label"] for s in specs}
    return [{"model": d["model"],
             "perturbation": label_of.get((d["perturbation"], d["params_json"]), d["perturbation"]),
             "N pairs": d["n"], "DPR %": round(d["dpr"], 2)} for d in rows]


def bucket_rows(buckets: Mapping[str, Sequence[Mapping[str, Any]]], value: str) -> list[dict[str, Any]]:
    """{model: buckets} (similarity buckets of DPR or F1) as a table; ``value`` names the mean's column.

    >>> bucket_rows({"a": [{"label": "0-0.2", "n": 3, "mean": 66.666}, {"label": "0.2-0.4", "n": 0, "mean": None}]},
    ...             "F1 %")  # doctest: +NORMALIZE_WHITESPACE
    [{'model': 'a', 'bucket': '0-0.2', 'N': 3, 'F1 %': 66.67}, {'model': 'a', 'bucket': '0.2-0.4', 'N': 0,
    'F1 %': None}]
    """
    return [{"model": m, "bucket": b["label"], "N": b["n"], value: None if b["mean"] is None else round(b["mean"], 2)}
            for m, bs in buckets.items() for b in bs]
