"""A stored sweep as one flat table of its answers (LIT's data table): filter, sort, page.

One row per scored perturbed answer (``results`` with status 'ok'; rows where the perturbation did
not apply hold no answer and are left out): the example and its question (clean and perturbed),
the model, the spec, its seed and repeat, the spec's ``n`` (the German paper's n_words or
n_chars, whichever varies more across the sweep, as :func:`core.sweeps.analysis.sweep_cells.penalty_table`
chooses), the example's group in each slice of :mod:`core.sweeps.analysis.slices`, whether the answer
*changed* (it differs from the same model's clean answer to the same question under the EM
normalisation, :func:`core.metrics.dpr.predictions_differ`, as DPR counts it), EM and F1 against
gold in percent, the perturbed question's measured noise (CER and WER in percent, NoiseQA's
Table 3 form, :func:`core.sweeps.analysis.curves.measured_noise`: a context perturbation leaves the
question as it was, so its noise is 0) and the predicted span.

Filters, sorting and paging run here on the whole table, so a page of a large sweep sends only
its page to the browser.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.metrics.dpr import predictions_differ
from core.sweeps.analysis.curves import measured_noise
from core.sweeps.analysis.slices import SLICES, cer_bucket, example_slices
from core.sweeps.analysis.sweep_cells import cell_examples, reading, sweep_specs
from core.sweeps.store import Store

__all__ = ["SLICE_COLUMNS", "COLUMNS", "KEY_COLUMNS", "NOISE_COLUMNS", "RowFilter", "sweep_rows", "filter_rows",
           "sort_rows", "page_of", "row_key", "row_detail"]

# slice name (core.sweeps.analysis.slices.SLICES) -> its column in the table
SLICE_COLUMNS = {"wh": "question word", "answer": "answer type", "qlen": "question length",
                 "clen": "context length", "overlap": "word overlap", "paragraph": "paragraph",
                 "cer": "edit size"}
NOISE_COLUMNS = {"cer": "CER %", "wer": "WER %"}
# What the table shows, in order; KEY_COLUMNS identify a row in the store (hidden on the page).
COLUMNS = ["example", "model", "perturbation", "n", "seed", "repeat", "changed", "F1", "EM", "clean F1",
           "CER %", "WER %", "question", "perturbed question", "answer", "clean answer", "span start", "span end",
           "field", *SLICE_COLUMNS.values()]
KEY_COLUMNS = ["perturbation id", "params_json", "example_hash"]


def _n_param(specs: Sequence[dict[str, Any]]) -> str | None:
    """n_words or n_chars: the one with more distinct values across the specs (n_chars on a tie),
    None when no spec has either."""
    counts = {p: len({json.dumps(s["params"][p]) for s in specs if p in s["params"]}) for p in ("n_words", "n_chars")}
    if not any(counts.values()):
        return None
    return max(counts, key=lambda p: (counts[p], p == "n_chars"))


def sweep_rows(db: Store | str | Path, sweep: int | str,
               progress: Callable[[float, str], None] | None = None) -> pd.DataFrame:
    """The sweep's scored answers as a table (:data:`COLUMNS` then :data:`KEY_COLUMNS`), in the
    sweep's order: examples, then models, specs and repeats. ``attrs["n_param"]`` names the
    parameter in the ``n`` column (None when no spec has one). ``progress(fraction, what)`` is
    called as the examples are sliced (the slow part: the answer types' tagger) and the rows read."""
    def tell(done: int, total: int, share: float, start: float, what: str) -> None:
        if progress is not None and (done % 200 == 0 or done == total):
            progress(start + share * done / max(1, total), what)

    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = {m: i for i, m in enumerate(store.models(sid))}
        specs = sweep_specs(store, sid)
        spec_at = {(s["perturbation"], s["params_json"]): (i, s) for i, s in enumerate(specs)}
        examples = store.examples_in_order(sid)
        rows = store.conn.execute(
            "SELECT model, perturbation, params_json, seed, repeat, example_id, example_hash, lang, field, "
            "original_question, variant_question, answer, span_start, span_end, em, f1, clean_answer, clean_f1, "
            "cer, changed FROM result_rows WHERE sweep_id = ? AND status = 'ok'", (sid,)).fetchall()
    position = {e["hash"]: i for i, e in enumerate(examples)}
    groups = {}
    for k, e in enumerate(examples, 1):
        answers = json.loads(e["answers_json"])
        groups[e["hash"]] = example_slices(e["question"], e["context"], answers[0][0] if answers else "", e["lang"])
        tell(k, len(examples), 0.6, 0.0, f"slicing {len(examples):,} examples")
    n_param = _n_param(specs)
    noise: dict[tuple[str, str], tuple[float, float]] = {}
    records = []
    for k, r in enumerate(sorted(rows, key=lambda r: (position.get(r["example_hash"], 0), models.get(r["model"], 0),
                                         spec_at.get((r["perturbation"], r["params_json"]), (0,))[0], r["repeat"])),
                        1):
        tell(k, len(rows), 0.4, 0.6, f"measuring the noise of {len(rows):,} answers")
        pair = (r["original_question"], r["variant_question"] or "")
        if pair not in noise:
            noise[pair] = (measured_noise(*pair, "cer"), measured_noise(*pair, "wer"))
        spec = spec_at.get((r["perturbation"], r["params_json"]), (0, None))[1]
        params = spec["params"] if spec else json.loads(r["params_json"])
        slices = groups.get(r["example_hash"], {})
        records.append({
            "example": r["example_id"], "model": r["model"],
            "perturbation": spec["label"] if spec else r["perturbation"],
            "n": params.get(n_param) if n_param else None, "seed": r["seed"], "repeat": r["repeat"],
            "changed": predictions_differ(r["clean_answer"] or "", r["answer"] or "", r["lang"]),
            "F1": 100.0 * r["f1"], "EM": 100.0 * r["em"],
            "clean F1": None if r["clean_f1"] is None else 100.0 * r["clean_f1"],
            "CER %": noise[pair][0], "WER %": noise[pair][1],
            "question": r["original_question"], "perturbed question": r["variant_question"] or "",
            "answer": r["answer"] or "", "clean answer": r["clean_answer"] or "",
            "span start": r["span_start"], "span end": r["span_end"], "field": r["field"],
            **{SLICE_COLUMNS[k]: slices.get(k) for k in SLICES if k != "cer"},
            SLICE_COLUMNS["cer"]: cer_bucket(r["cer"], r["changed"]),
            "perturbation id": r["perturbation"], "params_json": r["params_json"], "example_hash": r["example_hash"]})
    frame = pd.DataFrame(records, columns=COLUMNS + KEY_COLUMNS)
    for col in ("n", "seed", "span start", "span end"):
        frame[col] = frame[col].astype("Int64")
    frame["changed"] = frame["changed"].astype(bool)
    frame.attrs["n_param"] = n_param
    return frame


@dataclass(frozen=True)
class RowFilter:
    """Which rows to keep. Empty choices keep everything; ranges are closed, in percent."""

    models: tuple[str, ...] = ()
    perturbations: tuple[str, ...] = ()     # spec labels
    slice_name: str | None = None           # a key of SLICES
    groups: tuple[str, ...] = ()            # groups of that slice to keep
    changed: bool | None = None
    f1: tuple[float, float] | None = None
    noise: str = "cer"                      # which noise the range reads: cer | wer
    noise_range: tuple[float, float] | None = None
    text: str = ""                          # case-insensitive, in questions, answers and the example id


def filter_rows(frame: pd.DataFrame, f: RowFilter) -> pd.DataFrame:
    """The rows of ``frame`` that pass ``f``, in their order.

    >>> t = pd.DataFrame({"model": ["a", "b"], "perturbation": ["TUQ", "TUQ"], "changed": [True, False],
    ...                   "F1": [0.0, 100.0], "CER %": [0.0, 5.0], "WER %": [0.0, 20.0], "question": ["Who?", "When?"],
    ...                   "perturbed question": ["WHO?", "WHEN?"], "answer": ["x", "y"], "clean answer": ["z", "y"],
    ...                   "example": ["q1", "q2"], "question word": ["who", "when"]})
    >>> list(filter_rows(t, RowFilter(changed=False))["model"]), list(filter_rows(t, RowFilter(text="wHo"))["model"])
    (['b'], ['a'])
    >>> list(filter_rows(t, RowFilter(slice_name="wh", groups=("when",), noise="wer", noise_range=(10, 20)))["model"])
    ['b']
    """
    keep = pd.Series(True, index=frame.index)
    if f.models:
        keep &= frame["model"].isin(f.models)
    if f.perturbations:
        keep &= frame["perturbation"].isin(f.perturbations)
    if f.slice_name is not None and f.groups:
        if f.slice_name not in SLICE_COLUMNS:
            raise ValueError(f"unknown slice {f.slice_name!r}; slices: {', '.join(SLICE_COLUMNS)}")
        keep &= frame[SLICE_COLUMNS[f.slice_name]].isin(f.groups)
    if f.changed is not None:
        keep &= frame["changed"] == f.changed
    if f.f1 is not None:
        keep &= frame["F1"].between(*f.f1)
    if f.noise_range is not None:
        if f.noise not in NOISE_COLUMNS:
            raise ValueError(f"unknown noise measure {f.noise!r}; one of {', '.join(NOISE_COLUMNS)}")
        keep &= frame[NOISE_COLUMNS[f.noise]].between(*f.noise_range)
    if f.text.strip():
        needle = f.text.strip().casefold()
        hit = pd.Series(False, index=frame.index)
        for col in ("question", "perturbed question", "answer", "clean answer", "example"):
            hit |= frame[col].astype(str).str.casefold().str.contains(needle, regex=False)
        keep &= hit
    return frame[keep]


def sort_rows(frame: pd.DataFrame, by: str | None, descending: bool = False) -> pd.DataFrame:
    """``frame`` sorted by column ``by`` (None: as it is); stable, so ties keep the sweep's order,
    and empty values go last either way.

    >>> t = pd.DataFrame({"F1": [50.0, 0.0, 50.0, None], "example": ["a", "b", "c", "d"]})
    >>> list(sort_rows(t, "F1")["example"]), list(sort_rows(t, "F1", descending=True)["example"])
    (['b', 'a', 'c', 'd'], ['a', 'c', 'b', 'd'])
    """
    if by is None:
        return frame
    if by not in frame.columns:
        raise ValueError(f"cannot sort by {by!r}: no such column")
    return frame.sort_values(by, ascending=not descending, kind="stable", na_position="last")


def page_of(frame: pd.DataFrame, page: int, size: int) -> tuple[pd.DataFrame, int]:
    """(the rows of 1-based ``page`` of ``size`` rows, the number of pages); a page past the end
    gives the last one.

    >>> t = pd.DataFrame({"x": range(5)})
    >>> [list(page_of(t, p, 2)[0]["x"]) for p in (1, 3, 9)], page_of(t, 1, 2)[1], page_of(t.head(0), 1, 2)[1]
    ([[0, 1], [4], [4]], 3, 1)
    """
    if size < 1:
        raise ValueError("a page holds at least one row")
    pages = max(1, -(-len(frame) // size))
    page = min(max(1, page), pages)
    return frame.iloc[(page - 1) * size:page * size], pages


def row_key(row: pd.Series | dict) -> tuple[str, str, str, str, int]:
    """What identifies a row in the store: (model, perturbation id, params_json, example hash, repeat)."""
    return (row["model"], row["perturbation id"], row["params_json"], row["example_hash"], int(row["repeat"]))


def row_detail(db: Store | str | Path, sweep: int | str, key: tuple[str, str, str, str, int]) -> dict[str, Any] | None:
    """The row ``key`` (:func:`row_key`) as :func:`core.sweeps.analysis.sweep_cells.cell_examples` gives it
    (contexts, gold answers, spans), for the drill-down; None when the sweep has no such row."""
    model, perturbation, params_json, example_hash, repeat = key
    for r in cell_examples(db, sweep, model, perturbation, params_json):
        if r["example_hash"] == example_hash and r["repeat"] == repeat:
            return r
    return None
