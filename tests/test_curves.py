"""Noise-level curves (core.sweeps.analysis.curves): bins, bootstrap bands, break points, the CLI and CSV."""
import contextlib
import csv
import io
import sqlite3
from pathlib import Path

import jiwer
import pytest

from core.sweeps.analysis.curves import break_points, curve, measured_noise, sweep_curves

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sweep_v1.sql"
POINTS = [("a", 0.0, 1.0), ("a", 1.0, 0.5), ("a", 3.0, 0.0), ("a", 12.0, 0.0),
          ("b", 0.0, 1.0), ("b", 6.0, 1.0), ("b", 25.0, 0.2)]   # b's 25 is past the last edge: dropped


def test_bins_against_hand_computed_means():
    bins = curve(POINTS, (0, 5, 10, 20), n_boot=500, seed=3)
    got = [(b.model, b.lo, b.hi, b.n, b.f1) for b in bins]
    assert got == [("a", 0, 5, 3, 50.0), ("a", 5, 10, 0, None), ("a", 10, 20, 1, 0.0),
                   ("b", 0, 5, 1, 100.0), ("b", 5, 10, 1, 100.0), ("b", 10, 20, 0, None)]
    a0 = bins[0]
    # 3 values {100, 50, 0}: a resampled mean is a multiple of 50/3 in [0, 100]; the 95 % band is
    # strictly inside [0, 100] once 500 draws are made, and holds the mean
    assert 0 <= a0.low < 50 < a0.high <= 100
    assert all(b.low == b.high == b.f1 for b in bins if b.n == 1)   # one row: no spread


def test_bands_are_seeded():
    one = curve(POINTS, (0, 5, 10, 20), n_boot=200, seed=1)
    assert one == curve(POINTS, (0, 5, 10, 20), n_boot=200, seed=1)
    assert [(b.low, b.high) for b in one] != [(b.low, b.high) for b in curve(POINTS, (0, 5, 10, 20), n_boot=200,
                                                                          seed=2)]


def test_break_point_is_the_first_bin_below_ninety_percent_of_clean():
    bins = curve(POINTS, (0, 5, 10, 20), n_boot=50)
    # a: bins 50.0, (empty), 0.0. Clean 60 -> 54: bin 0 is below. Clean 55 -> 49.5: bin 0 (50) is
    # not, the empty bin is skipped, bin 10-20 (0) is. b never falls below 90 % of 100.
    assert break_points(bins, {"a": 60.0, "b": 100.0}) == {"a": 0, "b": None}
    assert break_points(bins, {"a": 55.0, "b": 100.0}) == {"a": 10, "b": None}


def test_bleu_bins_run_from_no_noise_down():
    bins = curve([("m", 100.0, 1.0), ("m", 70.0, 0.5), ("m", 10.0, 0.0)], (100, 50, 0), n_boot=20)
    assert [(b.lo, b.hi, b.n, b.f1) for b in bins] == [(100, 50, 2, 75.0), (50, 0, 1, 0.0)]
    assert break_points(bins, {"m": 100.0}) == {"m": 100}


def test_measured_noise_is_table3_form():
    # lower-cased, punctuation dropped: "Wh?" case-only changes are no noise
    assert measured_noise("Who wrote it?", "who wrote it", "cer") == 0.0
    assert measured_noise("what year did it end", "what year it ended", "wer") == 40.0
    assert measured_noise("a b c d", "a b c d", "bleu") == 100.0
    with pytest.raises(ValueError, match="unknown noise measure"):
        measured_noise("a", "b", "ter")


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "sweeps.db"
    conn = sqlite3.connect(path)
    conn.executescript(FIXTURE.read_text(encoding="utf-8"))
    conn.close()
    return path


def test_sweep_curve_on_the_stored_fixture(db):
    c = sweep_curves(db, "sweep-v1", "cer", seed=0)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT original_question, variant_question, f1 FROM result_rows WHERE status = 'ok' "
                        "AND field = 'question'").fetchall()
    assert sum(b.n for b in c.bins) == len(rows) == 21
    # bin 0-2.5 recomputed here with jiwer directly on the lower-cased, unpunctuated questions
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip()])
    low = [f1 for o, v, f1 in rows if 100 * jiwer.cer(norm(o), norm(v)) < 2.5]
    assert (c.bins[0].n, round(c.bins[0].f1, 2)) == (len(low), round(100 * sum(low) / len(low), 2)) == (11, 82.94)
    assert round(c.clean["minilm-squad"], 2) == 77.06
    assert c.breaks == {"minilm-squad": 2.5}    # 53.3 < 0.9 x 77.06 = 69.4 in bin 2.5-5


def _sweeps(argv):
    from core.sweeps.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_cli_curve_prints_and_writes_csv(db, tmp_path):
    out = tmp_path / "curve.csv"
    rc, text, err = _sweeps(["--show", "sweep-v1", "--db", str(db), "--curve", "wer", "--curve-csv", str(out)])
    assert rc == 0, err
    assert "break point (F1 < 90% of clean)" in text
    rows = list(csv.DictReader(out.open()))
    assert [r["from"] for r in rows] == ["0", "10", "20", "35", "50", "75"]
    assert rows[-1]["to"] == "inf"
    assert sum(int(r["n"]) for r in rows) == 21
    assert {r["measure"] for r in rows} == {"wer"} and {r["clean_f1"] for r in rows} == {"77.06"}


@pytest.mark.parametrize("extra, message", [
    (["--curve-csv", "x.csv"], "--curve-csv goes with"),
    (["--curve", "cer", "--repair"], "choose one of"),
])
def test_cli_curve_refusals(db, extra, message):
    rc, _, err = _sweeps(["--show", "sweep-v1", "--db", str(db), *extra])
    assert rc == 2 and message in err


def test_cli_curve_csv_may_not_be_the_database(db):
    rc, _, err = _sweeps(["--show", "sweep-v1", "--db", str(db), "--curve", "cer", "--curve-csv", str(db)])
    assert rc == 2 and "refusing to overwrite an input" in err
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0] > 0
