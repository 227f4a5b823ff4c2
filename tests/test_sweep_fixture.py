"""A sweep store written by the code before core/sweeps/ existed opens, shows and resumes unchanged.

``tests/fixtures/sweep_v1.sql`` (made by ``tests/fixtures/make_sweep_fixture.py`` at commit 821746f,
before the move) holds a real sweep, cancelled at 27 of 36 rows: minilm-squad on 6 XQuAD-en
questions under keyboard_Q (2 repeats), DPQ and the chain keyboard_Q+SwapRQ (2 repeats).
``sweep_v1_full.json`` holds the rows the old code wrote when it ran the same sweep uninterrupted.
"""
from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NAME = "sweep-v1"
MODEL = "minilm-squad"
TABLES = ("variants", "predictions", "results", "clean_results")

pytestmark = pytest.mark.needs_data("xquad/xquad.en.json")


def restore(db: Path) -> Path:
    conn = sqlite3.connect(db)
    conn.executescript((FIXTURES / "sweep_v1.sql").read_text(encoding="utf-8"))
    conn.close()
    return db


def show(main, db: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--show", NAME, "--db", str(db)]) == 0
    return out.getvalue()


def rows(db: Path, table: str) -> set[tuple]:
    conn = sqlite3.connect(db)
    try:
        return {tuple(r) for r in conn.execute(f"SELECT * FROM {table}")}
    finally:
        conn.close()


def result_rows(db: Path) -> tuple[list, list]:
    conn = sqlite3.connect(db)
    try:
        results = [list(r) for r in conn.execute(
            "SELECT model, perturbation, params_json, repeat, example_hash, variant_key, status, prediction_key, "
            "em, f1 FROM results ORDER BY perturbation, params_json, repeat, example_hash")]
        clean = [list(r) for r in conn.execute(
            "SELECT model, example_hash, prediction_key, em, f1 FROM clean_results ORDER BY example_hash")]
        return clean, results
    finally:
        conn.close()


def config():
    from core.sweeps.config import SweepConfig

    return SweepConfig("xquad/xquad.en", ["keyboard_Q,DPQ,keyboard_Q+SwapRQ"], [MODEL], repeats=2, seed=0,
                       sample=6, name=NAME)


@pytest.fixture(scope="module")
def engine():
    """The engine the fixture was made with: torch (the default backend then; the model card's
    choice may differ now, see the resume test)."""
    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine

    return load_engine(MODEL, EngineSettings(backend="torch"))


def test_old_store_shows_the_same_table(tmp_path):
    from core.sweep import main as old_name
    from core.sweeps.cli import main

    db = restore(tmp_path / "old.sqlite")
    before = (FIXTURES / "sweep_v1_show.txt").read_text(encoding="utf-8")
    assert show(main, db) == before
    assert show(old_name, db) == before      # python -m core.sweep, the old name, is the same CLI
    assert "keyboard_Q+SwapRQ      3   1" in before   # the chain half done: 3 of 6 examples, 1 repeat


def test_old_store_resumes_reusing_every_stored_unit(tmp_path, engine):
    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.sweeps.running.backends import engines_as_stored, stored_fingerprints
    from core.sweeps.running.run import run_sweep

    db = restore(tmp_path / "old.sqlite")
    stored = {t: rows(db, t) for t in TABLES}
    assert (len(stored["clean_results"]), len(stored["results"])) == (6, 21)
    # resumed as the page and the CLI do: whatever today's default backend, the one it was made with
    today = registry.load_engine(MODEL)
    engines, _ = engines_as_stored({MODEL: today}, stored_fingerprints(db, NAME),
                                   lambda m, b: registry.load_engine(m, EngineSettings(backend=b)))
    assert engines[MODEL].fingerprint() == engine.fingerprint()
    run = run_sweep(config(), engines, db, chunk_size=7)
    assert (run.status, run.resumed_units, run.done_units, run.total_units) == ("done", 27, 36, 36)
    after = {t: rows(db, t) for t in TABLES}
    for t in TABLES:   # nothing stored was rewritten (same keys, same values)
        assert stored[t] <= after[t], t
    # Only the 9 missing units were computed: their variants (none was stored) and the answers to
    # them that the prediction cache did not hold; every other answer came from the cache.
    assert (run.variants_computed, run.variants_cached) == (9, 0)
    new_predictions = len(after["predictions"]) - len(stored["predictions"])
    assert run.predictions_computed == new_predictions
    assert run.predictions_computed + run.predictions_cached == 9
    # ... and the sweep ends exactly where the old code's uninterrupted run ended.
    full = json.loads((FIXTURES / "sweep_v1_full.json").read_text(encoding="utf-8"))
    assert result_rows(db) == (full["clean_results"], full["results"])
    from core.sweeps.cli import main

    assert show(main, db) == full["show"]


def test_uninterrupted_sweep_matches_the_old_code(tmp_path, engine):
    from core.sweeps.running.run import run_sweep

    db = tmp_path / "new.sqlite"
    run = run_sweep(config(), {MODEL: engine}, db, chunk_size=7)
    assert (run.status, run.done_units) == ("done", 36)
    full = json.loads((FIXTURES / "sweep_v1_full.json").read_text(encoding="utf-8"))
    assert result_rows(db) == (full["clean_results"], full["results"])
