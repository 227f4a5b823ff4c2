"""Sweep reports (core.reports; ``python -m core.sweeps --show NAME --report OUT.html``; the Heatmaps
buttons): the numbers are the store's, hostile text stays text, bad input exits 2 and writes nothing.

The toy sweep is test_app_heatmaps' (two lookup engines, five questions, every cell worked out by
hand there): fake-a TUQ F1 93.33 clean -> 53.33 (-42.86 %, penalty 3), penalty totals 12 and 13,
clean F1 93.33 and 100.
"""
from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_app_heatmaps import ANSWERS_A, ANSWERS_B, SPECS, TOY, LookupEngine, build_sweep

from core import reports
from core.datasets import Dataset
from core.perturb.spec import parse_specs
from core.reports.content import collect, engine_backend
from core.sweeps.analysis import sweep_cells
from core.sweeps.analysis import tables as views
from core.sweeps.cli import main
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Answer, QAExample

PAGE = "../pages/heatmaps.py"


@pytest.fixture(scope="module")
def toy_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("report") / "sweeps.sqlite"
    build_sweep(db)
    return db


def _section(rep, title):
    return next(s for s in rep.sections if s.title == title)


def _table(section, prefix):
    return next(t for t in section.tables if t.title.startswith(prefix))


def test_report_tables_are_the_stores(toy_db):
    rep = collect(toy_db, "toy-sweep")
    heat = _section(rep, "Model × perturbation")
    cells = sweep_cells.cells(toy_db, "toy-sweep")
    assert _table(heat, "Every cell").rows == views.cell_rows(cells, ["fake-a", "fake-b"])
    tuq = next(r for r in _table(heat, "Every cell").rows if r["model"] == "fake-a" and r["label"] == "TUQ")
    assert (tuq["clean F1"], tuq["F1"], tuq["F1 % change"], tuq["F1 penalty"], tuq["N"]) == (93.33, 53.33, -42.86, 3, 5)
    dcrq = next(r for r in _table(heat, "Every cell").rows
                if r["model"] == "fake-b" and r["label"] == "DCRQ(n_chars=1, n_words=1)")
    assert (dcrq["repeats"], dcrq["F1"], dcrq["F1 penalty"]) == (2, 0.0, 4)
    penalties = {r["model"]: r["penalty total (F1)"] for r in _table(heat, "Penalty total").rows}
    assert penalties == {"fake-a": 12, "fake-b": 13}
    assert [(r["model"], r["clean F1"]) for r in _table(heat, "Clean scores").rows] == [("fake-a", 93.33),
                                                                                        ("fake-b", 100.0)]
    # the views Heatmaps shows for this sweep, and only those: DCRQ has n_chars, nothing is interface noise
    titles = [s.title for s in rep.sections]
    assert "Penalty by number of perturbed words / characters" in titles and "Model vs model" in titles
    assert "NoiseQA: interface noise" not in titles and "NoiseQA: question repair" not in titles
    by_n = _section(rep, "Penalty by number of perturbed words / characters").tables[0].rows
    assert by_n == views.penalty_rows(sweep_cells.penalty_table(toy_db, "toy-sweep", param="n_chars", metric="f1"))
    # each perturbation as one row with its n across, as docs/results/german-catalogue.md writes them
    grid = _table(_section(rep, "Penalty by number of perturbed words / characters"), "F1 % change per perturbation")
    assert grid.title == "F1 % change per perturbation and n_chars"
    assert [(r["perturbation"], r["n_chars=1"], r["n_chars=2"], r["no n"], r["penalty"])
            for r in grid.rows if r["model"] == "fake-a"] == [
        ("drop_qmark_Q", None, None, 0.0, 0), ("TUQ", None, None, -42.86, 3), ("RUQ", None, None, 50.0, 1),
        ("DCRQ(n_words=1)", -100.0, -100.0, None, 8)]
    assert [r["N"] for r in grid.rows if r["model"] == "fake-a"] == [5, 5, 1, 5]
    # the worst example: fake-a under TUQ on q4 ("Berlin" for "three million"), every model's spans
    worst = rep.examples[0]
    assert worst.row["f1_loss"] == 1.0 and len(rep.examples) <= 8
    assert [o["model"] for o in worst.across] == ["fake-a", "fake-b"]
    assert rep.header["engine backends"] == "fake-a: torch, fake-b: torch"
    assert rep.command.startswith("python -m core.sweeps --dataset toy --perturbations "
                                  "TUQ,RUQ,drop_qmark_Q,DCRQ:n_chars=1:n_words=1,DCRQ:n_chars=2:n_words=1 "
                                  "--models fake-a,fake-b --repeats 2 --seed 1 --engine-backend torch --name toy-sweep")


def test_html_and_markdown_tables_show_the_same_numbers(toy_db, tmp_path):
    html_path, md_path = reports.write(toy_db, "toy-sweep", tmp_path / "r.html")
    assert md_path == tmp_path / "r.md"
    page = html_path.read_text()
    frames = pd.read_html(io.StringIO(page))
    cells_df = next(f for f in frames if "F1 penalty" in f.columns)
    row = cells_df[(cells_df["model"] == "fake-a") & (cells_df["label"] == "TUQ")].iloc[0]
    assert (row["clean F1"], row["F1"], row["F1 % change"], row["F1 penalty"]) == (93.33, 53.33, -42.86, 3)
    assert page.count("plotly.js v") >= 1 and page.count('class="plotly-graph-div"') >= 3   # heatmap, curves
    assert "cdn" not in page.lower().split("<body>")[1].split("<script")[0]
    md = md_path.read_text()
    assert "| fake\\-a | case | TUQ | TUQ | \\{\\} | question | 5 | 1 | 0 | 93.33 | 53.33 | -42.86 | 40.00 |" in md
    assert "| fake\\-a | 12 | 12 | 80.00 | 93.33 | 5 |" in md


HOSTILE_MODEL = "<script>alert(1)</script>[m](http://127.0.0.1:9/m)"
HOSTILE_NAME = "x [l](http://127.0.0.1:9/n) www.evil.example <img src=http://127.0.0.1:9/i.png>"
HOSTILE_Q = "What is <u>it</u> [t](http://127.0.0.1:9/q) www.evil.example javascript:alert(1)?"
HOSTILE_C = "Paris <img src=http://127.0.0.1:9/c.png> is it, see www.evil.example and ![p](http://127.0.0.1:9/p.png)"


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("hostile") / "sweeps.sqlite"
    data = Dataset("toy", "en", [QAExample("q1 <i>", HOSTILE_Q, HOSTILE_C, (Answer("Paris", 0),))])
    config = SweepConfig("toy", parse_specs("TUQ,drop_qmark_Q"), [HOSTILE_MODEL, "plain"], name=HOSTILE_NAME)
    engines = {HOSTILE_MODEL: LookupEngine({HOSTILE_Q: "Paris"}, "h1"),
               "plain": LookupEngine({HOSTILE_Q: "Paris"}, "p1")}
    assert run_sweep(config, engines, db, dataset=data).status == "done"
    return db


def _outside(page: str, tag: str) -> str:
    return re.sub(rf"<{tag}\b.*?</{tag}>", "", page, flags=re.S)


def test_hostile_text_is_escaped(hostile_db, tmp_path):
    page, md = reports.build(hostile_db, HOSTILE_NAME)
    assert "<script>alert" not in page and "</script><script>" not in page   # plotly's JSON escapes "<"
    text = _outside(_outside(page, "script"), "code")
    for raw in ("<img", "<u>", "<i>", "](http", "www.evil", "javascript:", "http://"):
        assert raw not in text, raw
    assert re.findall(r"(?:href|src)=", text) == ["href="] and "href='data:,'" in text   # the empty icon only
    code = re.findall(r"<code>(.*?)</code>", page, flags=re.S)
    assert code and all("<" not in c for c in code)                  # the command, escaped as HTML
    # the worst example is shown, literally: TUQ's upper-cased question has no answer
    assert "F1 loss 100" in page and "&#60;u&#62;it&#60;&#47;u&#62;" in page
    prose = re.sub(r"```.*?```", "", md, flags=re.S)               # code fences are literal in Markdown
    for raw in ("<img", "<u>", "<script", "](http", "www.evil", "javascript:", "http://", "![p]"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), prose), raw      # only backslash-escaped
    assert "\\<u\\>it\\<\\/u\\>" in prose


def test_engine_backend_from_fingerprints():
    assert engine_backend("m:long_from=4000:backend=onnx-int8:per-token-v3").startswith("onnx")
    assert engine_backend("plain") == "torch"


def test_cli_report_and_bad_input(toy_db, tmp_path, capsys):
    out = tmp_path / "sub" / "toy.html"
    assert main(["--show", "toy-sweep", "--db", str(toy_db), "--report", str(out), "--quiet"]) == 0
    assert out.is_file() and (tmp_path / "sub" / "toy.md").is_file()
    assert "report ->" in capsys.readouterr().out
    before = out.read_bytes()
    for argv in (["--show", "nope", "--report", str(out)],               # unknown sweep
                 ["--show", "toy-sweep", "--report", str(toy_db)],        # the input itself
                 ["--show", "toy-sweep", "--report", str(tmp_path)],      # a folder
                 ["--show", "toy-sweep", "--report", "/proc/no/r.html"],  # unwritable
                 ["--report", str(out)],                                  # without --show
                 ["--show", "toy-sweep", "--report", str(tmp_path / "r.md")],   # the Markdown would be OUT
                 ["--show", "toy-sweep", "--report", str(out), "--curve", "cer"]):
        capsys.readouterr()
        assert main(["--db", str(toy_db), *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("python -m core.sweeps: error:"), err
    assert out.read_bytes() == before                                   # nothing was replaced
    md_db = tmp_path / "x.md"                                           # the Markdown beside OUT is an output too
    md_db.write_bytes(toy_db.read_bytes())
    assert main(["--db", str(md_db), "--show", "toy-sweep", "--report", str(tmp_path / "x.html")]) == 2
    assert not (tmp_path / "x.html").exists()
    notes = tmp_path / "notes.md"                                       # a file of the user's beside OUT: kept
    notes.write_text("my notes\n")
    capsys.readouterr()
    assert main(["--db", str(toy_db), "--show", "toy-sweep", "--report", str(tmp_path / "notes.html")]) == 2
    assert "is not a sweep report" in capsys.readouterr().err and notes.read_text() == "my notes\n"
    assert main(["--db", str(toy_db), "--show", "toy-sweep", "--report", str(out), "--quiet"]) == 0   # its own: again


def test_show_refuses_to_write_over_the_data_set_the_sweep_was_made_from(tmp_path, capsys):
    """A report or CSV named like the stored sweep's own data set (a slip of tab completion) is
    refused before anything is written: the data set is an input of --show, read from the store."""
    data = tmp_path / "mine.en.json"
    TOY.to_squad_json(data)
    before = data.read_bytes()
    db = tmp_path / "sweeps.sqlite"
    engines = {"fake-a": LookupEngine(ANSWERS_A, "a1"), "fake-b": LookupEngine(ANSWERS_B, "b1")}
    for name in ("mine", "mine-again"):
        config = SweepConfig(str(data), parse_specs(SPECS), ["fake-a", "fake-b"], repeats=2, seed=1, name=name)
        assert run_sweep(config, engines, db, dataset=TOY).status == "done"
    for argv in (["--show", "mine", "--report", str(data)],
                 ["--show", "mine", "--curve", "cer", "--curve-csv", str(data)],
                 ["--show", "mine", "--backend-vs", "mine-again", "--backend-csv", str(data)]):
        capsys.readouterr()
        assert main(["--db", str(db), *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "refusing to overwrite an input" in err and str(data) in err, err
    assert data.read_bytes() == before
    assert main(["--db", str(db), "--show", "mine", "--report", str(tmp_path / "r.html"), "--quiet"]) == 0


def test_heatmaps_report_buttons(toy_db, monkeypatch):
    monkeypatch.setenv("QAX_SWEEP_DB", str(toy_db))
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert not at.exception, at.exception
    labels = [b.label for b in at.get("download_button")]
    assert "⬇ Report (HTML)" not in labels
    at.button(key="hm_report_build").click().run()
    assert not at.exception, at.exception
    labels = [b.label for b in at.get("download_button")]
    assert "⬇ Report (HTML)" in labels and "⬇ Report (Markdown)" in labels
    built = at.session_state["hm_report"]
    html_text, md_text = built[1], built[2]
    assert "<h1>Sweep report&#58; toy&#45;sweep</h1>" in html_text
    assert "| fake\\-a | 12 | 12 | 80.00 | 93.33 | 5 |" in md_text


def test_views_that_apply_noiseqa_and_backend_flips(tmp_path):
    """keyboard_Q is interface noise: the NoiseQA section appears with Heatmaps' table. A second
    sweep of the same data and seed answered by another backend (its fingerprint says onnx), whose
    engine answers q1 "France" instead of "Paris": one clean flip in five for the one model."""
    from test_app_heatmaps import CLEAN_A, TOY


    db = tmp_path / "sweeps.sqlite"
    for name, answers, fingerprint in (("torch", CLEAN_A, "a1"),
                                       ("onnx", {**CLEAN_A, "What is the capital of France?": "France"},
                                        "a1:backend=onnx:fused-v5")):
        config = SweepConfig("toy", parse_specs("keyboard_Q,TUQ"), ["fake-a"], seed=3, name=name)
        assert run_sweep(config, {"fake-a": LookupEngine(answers, fingerprint)}, db, dataset=TOY).status == "done"
    rep = collect(db, "torch")
    assert rep.header["engine backends"] == "fake-a: torch"
    assert "--engine-backend torch --name torch" in rep.command
    noise = _section(rep, "NoiseQA: interface noise")
    cells = sweep_cells.cells(db, "torch")
    rates = sweep_cells.noise_rates(db, "torch")   # computed live: the report's are the stored aggregates
    assert noise.tables[0].rows == views.noiseqa_table(cells, rates)
    flips = _section(rep, "Backend flips").tables
    assert [t.title for t in flips] == ["against onnx"]
    clean = flips[0].rows[0]
    assert (clean["model"], clean["n"], clean["flips"]) == ("fake-a", 5, 1)
    assert collect(db, "onnx").header["engine backends"] == "fake-a: onnx"


def test_a_reports_backend_comes_from_the_load_receipt_without_loading_the_model(monkeypatch):
    """The report names each model's backend from its fingerprint; the model's load receipt holds
    the fingerprints a load here computed, so no torch copy is loaded for it (in a demo server that
    copy of each model was a GB more at the report's peak)."""
    from core.qa import registry
    from core.reports import content

    engine = registry.load_engine("minilm-squad-v2")   # the card's backend; its receipt records the fingerprint
    fingerprint = engine.fingerprint()

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(registry, "load_engine", no_load)
    content.model_backend.cache_clear()
    try:
        assert content.model_backend("minilm-squad-v2", fingerprint) == engine.resolve_backend()
    finally:
        content.model_backend.cache_clear()
