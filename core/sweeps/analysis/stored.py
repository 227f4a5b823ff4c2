"""StoredSweep: one stored sweep, read. Every view of the Heatmaps page goes through it.

The handle resolves the sweep (by id or name) once, records its version (last update and rows
done: :func:`core.sweeps.analysis.aggregates.version_of`) and keeps what it has read: the specs,
the clean scores, the cells and each view's rows. A view asks the handle, not the database: the
first ask reads SQLite (read-only) or the aggregates stored when the sweep finished, every later
one is answered from memory. A new version is a new handle (the page's cached loader keys it by
database path, sweep and version), so a resumed sweep is never shown stale numbers.

One handle may serve several sessions of the app at once (Streamlit's cache_resource): its caches
fill under a lock, and callers must not change what they are handed.

It is the only way anything outside core.sweeps.analysis reads a stored sweep (tests/test_house.py
checks it): pages, components, reports, the command line and the gallery ask a handle, and list a
database's sweeps with :func:`list_sweeps` (or ask :func:`is_sweep_database` whether a file is one).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.sweeps.analysis import aggregates, sweep_cells, tables
from core.sweeps.analysis.sweep_cells import Cell, list_sweeps, reading
from core.sweeps.store import Store, StoreError

if TYPE_CHECKING:   # pandas loads with the rows table, not with every handle (the command line's --show)
    import pandas as pd

__all__ = ["StoredSweep", "list_sweeps", "is_sweep_database"]


def is_sweep_database(path: str | Path) -> bool:
    """True when ``path`` opens read-only as a sweep database (nothing is written to find out)."""
    try:
        with reading(Path(path)):
            return True
    except (StoreError, OSError, ValueError):
        return False


class StoredSweep:
    """The sweep ``name`` (id or name) of the sweep database ``db``; KeyError when it has none.

    ``id``, ``name``, ``info`` (the row :func:`core.sweeps.analysis.sweep_cells.list_sweeps` gives: dataset,
    models, status, rows done, config, ...), ``models`` and ``version`` are read once, here."""

    def __init__(self, db: str | Path, name: int | str):
        self.db = Path(db)
        with reading(self.db) as store:
            self.id = store.sweep_id(name)
        self.info: dict[str, Any] = next(s for s in sweep_cells.list_sweeps(self.db) if s["id"] == self.id)
        self.name: str = self.info["name"]
        self.models: list[str] = list(self.info["models"])
        self.version: str = aggregates.version_of(self.info)
        self._cache: dict[tuple, Any] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"StoredSweep({str(self.db)!r}, {self.name!r}, version {self.version!r})"

    @property
    def complete(self) -> bool:
        """Whether every planned result row is stored."""
        return self.info["done_units"] >= self.info["total_units"]

    def _memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = compute()
            return self._cache[key]

    def _stored_or(self, name: str, compute: Callable[[], Any], decode: Callable[[Any], Any]) -> Any:
        """The aggregate ``name`` stored for this version (decoded), else computed live."""
        value = aggregates.load(self.db, self.id, self.version, name)
        return compute() if value is None else decode(value)

    # ---------------------------------------------------------------------------- the sweep itself
    def specs(self) -> list[dict[str, Any]]:
        """The perturbation specs in sweep order (:func:`core.sweeps.analysis.sweep_cells.sweep_specs`)."""
        return self._memo(("specs",), lambda: sweep_cells.sweep_specs(self.db, self.id))

    def clean_scores(self) -> dict[str, dict[str, float]]:
        """{model: {"em", "f1", "n"}} over every example done so far."""
        return self._memo(("clean",), lambda: sweep_cells.clean_scores(self.db, self.id))

    def cells(self) -> list[Cell]:
        """Every (model, spec) heatmap cell: stored with the sweep when it finished, else computed."""
        return self._memo(("cells",), lambda: self._stored_or(
            "cells", lambda: sweep_cells.cells(self.db, self.id), lambda v: [Cell(**c) for c in v]))

    # ------------------------------------------------------------------------------------ the views
    def model_differences(self, model_a: str, model_b: str) -> list[dict[str, Any]]:
        """B - A per spec with a paired-bootstrap interval (:func:`sweep_cells.model_differences`)."""
        return self._memo(("differences", model_a, model_b), lambda: self._stored_or(
            f"differences:{json.dumps([model_a, model_b])}",
            lambda: sweep_cells.model_differences(self.db, self.id, model_a, model_b), lambda v: v))

    def penalty_table(self, param: str | None = None, metric: str = "f1") -> dict[str, Any]:
        """The German paper's penalty table over n, from the cells already read."""
        return self._memo(("penalty_table", param, metric),
                          lambda: sweep_cells.penalty_table(self.db, self.id, param, metric, cell_list=self.cells()))

    def noise_rates(self) -> dict:
        """{(perturbation, params_json): CER / WER / BLEU of its noisy questions}."""
        return self._memo(("noise_rates",), lambda: self._stored_or(
            "noise_rates", lambda: sweep_cells.noise_rates(self.db, self.id), lambda v: {tuple(k): r for k, r in v}))

    def mt_breakdown(self) -> list[dict[str, Any]]:
        """The MT cells by source language (:func:`core.sweeps.analysis.tables.mt_breakdown`)."""
        return self._memo(("mt",), lambda: tables.mt_breakdown(self.db, self.id, self.cells()))

    def dpr_table(self, families: Sequence[str]) -> list[dict[str, Any]]:
        return self._memo(("dpr", tuple(families)),
                          lambda: sweep_cells.dpr_table(self.db, self.id, families=list(families)))

    def dpr_by_similarity(self, families: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        return self._memo(("dpr_sim", tuple(families)),
                          lambda: sweep_cells.dpr_by_similarity(self.db, self.id, families=list(families)))

    def traps(self, perturbation: str | None = None, params_json: str | None = None) -> dict[str, Any]:
        """F1 by question-trap similarity: the clean questions (stored with the sweep) or one spec's."""
        def compute():
            return sweep_cells.f1_by_trap_similarity(self.db, self.id, perturbation=perturbation, params=params_json)
        if perturbation is None:
            return self._memo(("traps", None, None), lambda: self._stored_or("traps:clean", compute, lambda v: v))
        return self._memo(("traps", perturbation, params_json), compute)

    def cell_examples(self, model: str, perturbation: str, params_json: str,
                      limit: int | None = None) -> list[dict[str, Any]]:
        """The scored examples behind one cell, largest F1 loss first (:func:`sweep_cells.cell_examples`);
        the first ``limit`` only, taken from the whole cell when that was read already."""
        with self._lock:
            whole = self._cache.get(("cell_examples", model, perturbation, params_json, None))
        if limit is not None and whole is not None:
            return whole[:limit]
        return self._memo(("cell_examples", model, perturbation, params_json, limit),
                          lambda: sweep_cells.cell_examples(self.db, self.id, model, perturbation, params_json,
                                                            limit=limit))

    def example_across_models(self, perturbation: str, params_json: str, example_hash: str,
                              repeat: int) -> list[dict[str, Any]]:
        from core.sweeps.analysis import drill

        return self._memo(("across", perturbation, params_json, example_hash, repeat),
                          lambda: drill.example_across_models(self.db, self.id, perturbation, params_json,
                                                              example_hash, repeat))

    def rows(self, progress: Callable[[float, str], None] | None = None) -> pd.DataFrame:
        """Every scored answer as one table (:func:`core.sweeps.analysis.rows.sweep_rows`), read anew
        on each call: a large sweep's table is large, and the page keeps the last few itself."""
        from core.sweeps.analysis import rows

        return rows.sweep_rows(self.db, self.id, progress)

    def row_detail(self, key: tuple[str, str, str, str, int]) -> dict[str, Any] | None:
        """One row of :meth:`rows` (by :func:`core.sweeps.analysis.rows.row_key`) with its contexts and spans."""
        from core.sweeps.analysis import rows

        return self._memo(("row_detail", key), lambda: rows.row_detail(self.db, self.id, key))

    def clean_answers_by_model(self) -> list[dict[str, Any]]:
        """Every model's clean answer to every example, with its F1 and the example (the gallery's
        disagreements)."""
        return self._memo(("clean_answers",), lambda: self._store_rows(
            lambda store: store.clean_answers_by_model(self.id)))

    def near_question_flips(self, right: float) -> list[dict[str, Any]]:
        """Scored question variants within one character of the question's length whose clean answer
        reached ``right`` F1 and whose perturbed one did not (the gallery's one-keystroke flips)."""
        return self._memo(("flips_near", right), lambda: self._store_rows(
            lambda store: store.near_question_flips(self.id, right)))

    def _store_rows(self, query: Callable[[Store], list]) -> list[dict[str, Any]]:
        with reading(self.db) as store:
            return [dict(r) for r in query(store)]

    def repair_table(self) -> list[dict[str, Any]]:
        from core.sweeps.analysis import repair

        return self._memo(("repair",), lambda: repair.repair_table(self.db, self.id))

    def slice_cells(self, slice_name: str) -> list:
        from core.sweeps.analysis import slices

        return self._memo(("slices", slice_name), lambda: slices.slice_cells(self.db, self.id, slice_name))

    def slice_examples(self, slice_name: str, group: str, model: str, perturbation: str,
                       params_json: str) -> list[dict[str, Any]]:
        from core.sweeps.analysis import slices

        return self._memo(("slice_examples", slice_name, group, model, perturbation, params_json),
                          lambda: slices.slice_examples(self.db, self.id, slice_name, group, model, perturbation,
                                                        params_json))

    def calibration_table(self) -> list[dict[str, Any]]:
        from core.sweeps.analysis import calibration

        return self._memo(("calibration",), lambda: calibration.calibration_table(self.db, self.id))

    def score_samples(self, model: str, perturbation: str, params_json: str) -> dict[str, list]:
        from core.sweeps.analysis import calibration

        return self._memo(("samples", model, perturbation, params_json),
                          lambda: calibration.score_samples(self.db, self.id, model, perturbation, params_json))

    def curves(self, measure: str, seed: int = 0):
        """F1 against measured noise (:func:`core.sweeps.analysis.curves.sweep_curves`)."""
        from core.sweeps.analysis import curves

        return self._memo(("curves", measure, seed), lambda: curves.sweep_curves(self.db, self.id, measure, seed=seed))

    def alignment_rates(self, models: Sequence[str]) -> list[dict[str, Any]]:
        """How the generative readers ``models`` found their answers in the passage, per spec
        (:func:`core.sweeps.analysis.alignment.alignment_rates`)."""
        from core.sweeps.analysis import alignment

        return self._memo(("alignment", tuple(models)),
                          lambda: alignment.alignment_rates(self.db, self.id, list(models)))

    def backend_flips(self, other: StoredSweep) -> list[dict[str, Any]]:
        """Answers that differ between this sweep and ``other`` (another backend's run of the same
        data); ValueError when they share no row. Kept per version of the other sweep too."""
        from core.sweeps.analysis.backend_axis import backend_flips

        if other.db != self.db:
            raise ValueError("compare two sweeps of the same database")
        return self._memo(("flips", other.id, other.version), lambda: backend_flips(self.db, self.id, other.id))
