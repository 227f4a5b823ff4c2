"""The Heatmaps page's slow aggregates, computed once when a sweep finishes and stored with it.

Opening Heatmaps on a large sweep computed everything from the result rows: on a 75,600-row
sweep the NoiseQA noise rates (CER/WER/BLEU over every distinct variant) and the clean
trap-similarity buckets (spaCy entities over every context) took tens of seconds, the cells and
the default model-vs-model bootstrap seconds more (benchmarks/heatmaps_open.py measures it).
:func:`store` computes them when a sweep ends (core.sweeps.running.lifecycle.launch calls it) and
writes them as JSON into the sweep's own database, table ``sweep_aggregates``, stamped with the
sweep's version (last update, rows done); :func:`load` returns a stored aggregate only while
that version still holds, so a resumed or extended sweep is never shown stale numbers: the read
handle (core.sweeps.analysis.stored.StoredSweep) computes them live again until the next :func:`store`.

Reading is read-only (the page never writes); JSON, never pickle, so a database file can hold
no code.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.sweeps.analysis import sweep_cells
from core.sweeps.store import Store

__all__ = ["NAMES", "version_of", "store", "load", "drop"]



def version_of(sweep: dict) -> str:
    """What a stored aggregate is valid for: the sweep's last update and rows done."""
    return f"{sweep['updated_at']}|{sweep['done_units']}"


def _pair(models: list[str]) -> tuple[str, str] | None:
    return (models[0], models[1]) if len(models) >= 2 else None


# name -> (compute(db, sweep_id, models) -> JSON-able value). The page's defaults: all cells,
# the noise rates, the clean trap buckets, and the first two models' paired differences.
def _compute_all(db: str | Path, sid: int, models: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cells": [asdict(c) for c in sweep_cells.cells(db, sid)],
        "noise_rates": [[list(k), v] for k, v in sweep_cells.noise_rates(db, sid).items()],
        "traps:clean": sweep_cells.f1_by_trap_similarity(db, sid, perturbation=None, params=None),
    }
    if (pair := _pair(models)) is not None:
        out[f"differences:{json.dumps(list(pair))}"] = sweep_cells.model_differences(db, sid, *pair)
    return out


NAMES = ("cells", "noise_rates", "traps:clean", "differences:<[model a, model b]>")


def _sweep(db: str | Path, sweep: int | str) -> dict:
    for s in sweep_cells.list_sweeps(db):
        if s["id"] == sweep or s["name"] == sweep:
            return s
    raise KeyError(f"no sweep {sweep!r} in {db}")


def store(db: str | Path, sweep: int | str) -> dict[str, Any]:
    """Compute and store every aggregate of ``sweep`` (id or name); returns them."""
    s = _sweep(db, sweep)
    values = _compute_all(db, s["id"], s["models"])
    with Store(db) as st:
        st.replace_aggregates(s["id"], [(name, version_of(s), json.dumps(v)) for name, v in values.items()])
    return values


def drop(db: str | Path, sweep: int | str) -> None:
    """Forget the stored aggregates of ``sweep`` (the page computes them live again)."""
    s = _sweep(db, sweep)
    with Store(db) as st:
        st.replace_aggregates(s["id"], [])


def load(db: str | Path, sweep_id: int, version: str, name: str) -> Any | None:
    """The stored aggregate ``name`` of ``sweep_id`` if it was stored for ``version``, else None."""
    try:
        with Store(db, readonly=True) as st:
            row = st.aggregate(sweep_id, name)
    except Exception:   # no such table (an older database), or unreadable: compute live
        return None
    if row is None or row[0] != version:
        return None
    return json.loads(row[1])
