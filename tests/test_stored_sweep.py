"""core.sweeps.analysis.stored.StoredSweep: one read handle per stored sweep, with its id, version
and caches; on the toy sweep of test_app_heatmaps (hand-checked figures there)."""
import json
import sqlite3

import pytest
from test_app_heatmaps import build_sweep

from core.sweeps.analysis import aggregates, rows, sweep_cells
from core.sweeps.analysis.stored import StoredSweep, is_sweep_database, list_sweeps
from core.sweeps.store import Store


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "sweeps.sqlite"
    build_sweep(path)
    return path


def test_the_handle_resolves_the_sweep_once_by_name_or_id(db):
    by_name = StoredSweep(db, "toy-sweep")
    (row,) = sweep_cells.list_sweeps(db)
    assert by_name.id == row["id"] and by_name.name == "toy-sweep" and by_name.models == ["fake-a", "fake-b"]
    # 80 rows: 2 models x 5 examples x (clean + 7 perturbed rows: 5 specs, two of them repeated twice)
    assert by_name.version == aggregates.version_of(row) == f"{row['updated_at']}|80"
    assert by_name.complete and StoredSweep(db, row["id"]).name == "toy-sweep"
    with pytest.raises(KeyError, match="no sweep 'nope'.*known sweeps: toy-sweep"):
        StoredSweep(db, "nope")


def test_views_are_the_module_functions_figures_read_once(db, tmp_path):
    sweep = StoredSweep(db, "toy-sweep")
    cells = sweep.cells()
    assert [c.as_dict() for c in cells] == [c.as_dict() for c in sweep_cells.cells(db, "toy-sweep")]
    assert sweep_cells.penalty_totals(cells, "f1") == {"fake-a": 12, "fake-b": 13}
    assert sweep.penalty_table(param="n_chars")["rows"] == {"fake-a": {1: 4, 2: 4}, "fake-b": {1: 4, 2: 4}}
    assert sweep.clean_scores() == sweep_cells.clean_scores(db, "toy-sweep")
    assert sweep.specs() == sweep_cells.sweep_specs(db, "toy-sweep") and sweep.specs()[0]["label"] == "TUQ"
    tuq = next(c for c in cells if c.model == "fake-a" and c.label == "TUQ")
    examples = sweep.cell_examples("fake-a", tuq.perturbation, tuq.params_json)
    # TUQ is deterministic (one repeat); fake-a answers "Berlin" for "three million" (loss 1), "palace"
    # for Würzburg (clean "Neumann": F1 2/3), "river Thames" for "Thames" (F1 2/3): worst first
    assert [round(r["f1_loss"], 3) for r in examples] == [1.0, 0.667, 0.333, 0.0, 0.0]
    # read once: with the file gone, the handle still answers from memory, the same objects
    db.rename(tmp_path / "moved.sqlite")
    assert sweep.cells() is cells and sweep.cell_examples("fake-a", tuq.perturbation, tuq.params_json) is examples
    with pytest.raises(Exception):
        sweep_cells.cells(db, "toy-sweep")


def test_cells_come_from_the_aggregates_stored_for_this_version_only(db):
    aggregates.store(db, "toy-sweep")
    sweep = StoredSweep(db, "toy-sweep")
    # mark the stored cells, to see which ones the handle reads
    with sqlite3.connect(db) as conn:
        (value,) = conn.execute("SELECT json FROM sweep_aggregates WHERE name = 'cells'").fetchone()
        marked = json.loads(value)
        marked[0]["label"] = "from the stored aggregate"
        conn.execute("UPDATE sweep_aggregates SET json = ? WHERE name = 'cells'", (json.dumps(marked),))
    assert StoredSweep(db, "toy-sweep").cells()[0].label == "from the stored aggregate"
    with sqlite3.connect(db) as conn:   # the sweep moved on: the stored cells no longer hold
        conn.execute("UPDATE sweeps SET updated_at = '2099-01-01T00:00:00+00:00'")
    newer = StoredSweep(db, "toy-sweep")
    assert newer.version != sweep.version and newer.cells()[0].label == sweep_cells.cells(db, "toy-sweep")[0].label


def test_backend_flips_need_another_sweep_of_the_same_database(db, tmp_path):
    sweep = StoredSweep(db, "toy-sweep")
    with pytest.raises(ValueError, match="two different sweeps"):
        sweep.backend_flips(StoredSweep(db, "toy-sweep"))
    other_db = tmp_path / "other.sqlite"
    build_sweep(other_db)
    with pytest.raises(ValueError, match="same database"):
        sweep.backend_flips(StoredSweep(other_db, "toy-sweep"))


def test_the_handle_lists_and_recognises_sweep_databases(db, tmp_path):
    assert [s["name"] for s in list_sweeps(db)] == ["toy-sweep"] and list_sweeps(db) == sweep_cells.list_sweeps(db)
    assert StoredSweep(db, "toy-sweep").info == list_sweeps(db)[0]
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database")
    assert is_sweep_database(db) and not is_sweep_database(text) and not is_sweep_database(tmp_path)
    assert text.read_text() == "not a database"   # looked at, never written


def test_the_rows_the_drill_and_the_gallery_read_through_the_handle(db):
    sweep = StoredSweep(db, "toy-sweep")
    table = sweep.rows()
    assert table.equals(rows.sweep_rows(db, "toy-sweep")) and sweep.rows() is not table   # read anew each time
    key = rows.row_key(table.iloc[0])
    detail = sweep.row_detail(key)
    assert detail == rows.row_detail(db, "toy-sweep", key) and sweep.row_detail(key) is detail
    # a limit asks SQLite for the first rows only; once the whole cell is read, it is cut from memory
    tuq = next(c for c in sweep.cells() if c.model == "fake-a" and c.label == "TUQ")
    first = sweep.cell_examples("fake-a", tuq.perturbation, tuq.params_json, limit=2)
    whole = sweep.cell_examples("fake-a", tuq.perturbation, tuq.params_json)
    assert first == whole[:2] == sweep_cells.cell_examples(db, "toy-sweep", "fake-a", tuq.perturbation,
                                                           tuq.params_json, limit=2)
    assert sweep.cell_examples("fake-a", tuq.perturbation, tuq.params_json, limit=3)[2] is whole[2]
    with Store(db, readonly=True) as store:
        assert sweep.clean_answers_by_model() == [dict(r) for r in store.clean_answers_by_model(sweep.id)]
        assert sweep.near_question_flips(0.5) == [dict(r) for r in store.near_question_flips(sweep.id, 0.5)]
    assert sweep.near_question_flips(0.5)   # DCRQ drops a character: right answers turn wrong
