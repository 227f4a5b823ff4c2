"""The backend as an axis (core.sweeps.analysis.backend_axis): two sweeps, one per backend, paired row by row."""
import contextlib
import csv
import io

import pytest
from test_app_heatmaps import ANSWERS_A, TOY, LookupEngine

from core.perturb.spec import parse_specs
from core.sweeps.analysis.backend_axis import backend_flips
from core.sweeps.analysis.curves import measured_noise
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Prediction, Span


class TorchLike(LookupEngine):
    """ANSWERS_A; a question it does not know gets the context's last word (not "The": SQuAD's
    normalisation drops articles, so "The" and no answer would not differ)."""

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = super().predict(questions, contexts, n_best, progress, skip_invalid)
        def last(c):
            word = c.rstrip(".").split()[-1]
            return Prediction([Span(word, c.rindex(word), c.rindex(word) + len(word), 0.5)])

        return [p if p.best else last(c) for p, c in zip(out, contexts)]


# the "other backend": two known questions answered differently, unknown questions not answered
OTHER = {**ANSWERS_A, "When was the tower built?": "tower", "WHAT IS THE CAPITAL OF FRANCE?": "capital"}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "sweeps.sqlite"
    specs = parse_specs("TUQ,drop_qmark_Q,DCRQ")
    run_sweep(SweepConfig("toy", specs, ["m"], repeats=1, seed=1, name="torch"),
              {"m": TorchLike(ANSWERS_A, "t1")}, path, dataset=TOY)
    run_sweep(SweepConfig("toy", specs, ["m"], repeats=1, seed=1, name="onnx"),
              {"m": LookupEngine(OTHER, "o1")}, path, dataset=TOY)
    return path


def test_flips_per_perturbation_against_hand_counts(db):
    rows = backend_flips(db, "torch", "onnx")
    got = [(r["model"], r["spec"], r["n"], r["flips"], r["flip %"]) for r in rows]
    assert got == [("m", "clean", 5, 1, 20.0),              # q2: 1889 -> tower
                   ("m", "TUQ", 5, 1, 20.0),                # q1 upper-cased: Paris -> capital
                   ("m", "drop_qmark_Q", 5, 0, 0.0),        # known questions: same answers
                   ("m", "DCRQ(n_chars=1, n_words=1)", 5, 5, 100.0)]   # unknown: last word vs nothing
    by = {r["spec"]: r for r in rows}
    # TUQ changes only the case: no Table-3 noise; DCRQ's flips sit at its variants' own CER
    assert by["TUQ"]["CER flipped"] == 0.0 and by["TUQ"]["CER kept"] == 0.0
    import sqlite3

    conn = sqlite3.connect(db)
    pairs = conn.execute("SELECT DISTINCT original_question, variant_question FROM result_rows "
                         "WHERE sweep = 'torch' AND perturbation = 'DCRQ'").fetchall()
    expected = round(sum(measured_noise(o, v, "cer") for o, v in pairs) / len(pairs), 2)
    assert by["DCRQ(n_chars=1, n_words=1)"]["CER flipped"] == expected > 0
    assert by["DCRQ(n_chars=1, n_words=1)"]["CER kept"] is None


def test_same_sweep_twice_is_refused(db):
    with pytest.raises(ValueError, match="two different sweeps"):
        backend_flips(db, "torch", "torch")


def test_cli_backend_vs_prints_and_writes_csv(db, tmp_path):
    from core.sweeps.cli import main

    out, err, csv_path = io.StringIO(), io.StringIO(), tmp_path / "flips.csv"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--show", "torch", "--db", str(db), "--backend-vs", "onnx", "--backend-csv", str(csv_path)])
    assert rc == 0, err.getvalue()
    assert "answers that differ between torch and onnx" in out.getvalue()
    rows = list(csv.DictReader(csv_path.open()))
    assert [(r["spec"], r["flips"]) for r in rows] == [("clean", "1"), ("TUQ", "1"), ("drop_qmark_Q", "0"),
                                                       ("DCRQ(n_chars=1, n_words=1)", "5")]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["--show", "torch", "--db", str(db), "--backend-csv", str(csv_path)]) == 2
        assert main(["--show", "torch", "--db", str(db), "--backend-vs", "nope"]) == 2
    assert "--backend-csv goes with" in err.getvalue()


def test_heatmaps_backend_flips_section(db, monkeypatch):
    from rendered import open_tab
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=120).run()
    assert not at.exception, at.exception
    at = open_tab(at, "Backend flips")
    (section,) = [e for e in at.expander if e.label.startswith("Backend flips")]
    assert section.selectbox(key="hm_backend_other").value is not None
    table = next(d.value for d in at.dataframe if "flip %" in d.value.columns)
    # the page shows the newest sweep (onnx) against the other (torch): flips are symmetric
    assert list(table["spec"]) == ["clean", "TUQ", "drop_qmark_Q", "DCRQ(n_chars=1, n_words=1)"]
    assert list(table["flips"]) == [1, 1, 0, 5]
