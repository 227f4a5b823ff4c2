"""Gallery (issue #26): striking examples found in stored sweeps and Beat-the-AI attempts, each
opened on Ask or Variants in one click.

The toy sweep of tests/test_app_heatmaps.py: DCRQ(n_chars=1) deletes one character of each
question and neither lookup engine knows a misspelt question, so each right answer (clean F1 >=
0.5) turns into no answer after one keystroke; TUQ and RUQ change more than one character, and
drop_qmark_Q changes one but both engines answer as before: none of those is a flip. A second
sweep where fake-c answers "France" to q1 gives the one disagreement.
"""
from __future__ import annotations

import pytest
from rapidfuzz.distance import Levenshtein
from streamlit.testing.v1 import AppTest
from test_app_heatmaps import CLEAN_A, TOY, LookupEngine, build_sweep

from core.collect import beat, beat_store
from core.explore import gallery as cg
from core.perturb.spec import parse_specs
from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep

APP = "../app.py"
Q1 = "What is the capital of France?"


@pytest.fixture
def stores(tmp_path, monkeypatch, tiny_registry):
    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    engines = {"fake-a": LookupEngine(CLEAN_A, "a1"), "fake-c": LookupEngine({**CLEAN_A, Q1: "France"}, "c1")}
    run_sweep(SweepConfig("toy", parse_specs("TUQ"), list(engines), name="toy-disagree"), engines, db, dataset=TOY)
    beat_db = tmp_path / "beat.sqlite"
    [passage] = [p for p in beat.passages(TOY) if "Paris" in p.context]
    with beat_store.BeatStore(beat_db) as store:
        start = passage.context.index("France")
        store.record_attempt(passage, "Which country has Paris as its capital?", (start, start + 6),
                             {"tiny-a": None}, user="ada", session="s1", browser="b1")
    for k, v in {"QAX_SWEEP_DB": db, "QAX_BEAT_DB": beat_db, "QAX_MODELS_TOML": tiny_registry,
                 "HF_HUB_OFFLINE": "1", "QAX_CACHE_DIR": tmp_path / "cache"}.items():
        monkeypatch.setenv(k, str(v))
    return db


def test_findings_of_each_kind(stores):
    flips = cg.one_keystroke_flips(StoredSweep(stores, "toy-sweep"))
    assert flips and all(Levenshtein.distance(f.question, f.original_question) == 1 for f in flips)
    assert {f.perturbation for f in flips} == {"DCRQ"}   # not TUQ/RUQ (more edits), not drop_qmark_Q (same answers)
    q1 = [f for f in flips if f.original_question == Q1]
    assert {tuple(f.answers.values()) for f in q1} == {("Paris", "")}
    assert {f.example_id for f in flips} == {"q1", "q2", "q3", "q4", "q5"}
    [dis] = cg.disagreements(StoredSweep(stores, "toy-disagree"))
    assert (dis.example_id, dis.answers, dis.golds) == ("q1", {"fake-a": "Paris", "fake-c": "France"}, ("Paris",))
    assert cg.disagreements(StoredSweep(stores, "toy-sweep")) == []   # fake-a's "Neumann" (F1 2/3) is right too
    [won] = cg.beaten(beat_store.BeatStore().attempts())
    assert won.question == "Which country has Paris as its capital?" and won.golds == ("France",)
    # the Gallery's CSV/JSON rows: one per finding, an answer column per model
    [row] = cg.export_rows([dis])
    assert (row["kind"], row["example_id"], row["gold"], row["answer: fake-a"], row["answer: fake-c"]) == \
        ("disagree", "q1", "Paris", "Paris", "France")


def test_gallery_opens_an_example_on_ask_and_on_variants(stores):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/gallery.py").run()
    assert not at.exception, at.exception
    at.multiselect(key="gal_sweeps").set_value([1, 2]).run()
    labels = [t.label for t in at.tabs]
    assert labels[0] == "Models disagree (1)" and labels[2] == "The AI was beaten (1)"
    assert labels[1].startswith("One keystroke flips the answer (")
    assert labels[1] != "One keystroke flips the answer (0)"
    # each list with findings has its CSV and JSON download
    assert len(at.get("download_button")) == 6
    # a flip opened on Ask: the toy set is no data set Ask offers, so its passage is pasted, with
    # the flipped question and the gold answer to score it against
    at.button(key="gal_ask_flip_0").click().run()
    assert not at.exception, at.exception
    flip = cg.find_all(stores, [1, 2])["flip"][0]
    assert at.radio(key="ask_source").value == "Paste a context"
    assert at.text_area(key="ask_context").value == flip.context
    assert at.text_area(key="ask_question").value == flip.question
    assert at.text_input(key="ask_gold").value == flip.golds[0]
    # issue 53: and answered at once, scored against that gold answer (it used to wait for Answer)
    result = at.session_state["ask_result"]
    assert result["question"] == flip.question and result["gold"] == [(flip.golds[0], flip.context.find(flip.golds[0]))]
    assert [a.model for a in result["answered"].answers] == at.multiselect(key="ask_models").value
    assert any("EM/F1 against the gold answer you typed" in c.value.replace("\\", "") for c in at.caption)
    # the same flip on Variants: the original question, with its perturbation chosen
    at.switch_page("pages/gallery.py").run()
    at.button(key="gal_var_flip_0").click().run()
    assert not at.exception, at.exception
    assert at.text_area(key="var_question").value == flip.original_question
    assert at.multiselect(key="var_fam_character").value == ["DCRQ"]
    assert at.text_input(key="var_gold").value == flip.golds[0]   # the toy set is pasted: its gold travels
    # a Beat-the-AI win on Variants carries the author's answer as gold (the round organiser's audit:
    # "Without a gold answer there is no EM/F1")
    at.switch_page("pages/gallery.py").run()
    at.button(key="gal_var_beaten_0").click().run()
    assert not at.exception, at.exception
    assert at.text_area(key="var_question").value == "Which country has Paris as its capital?"
    assert at.text_input(key="var_gold").value == "France"
    assert not any("Without a gold answer" in c.value for c in at.caption)


def test_a_sweep_stored_since_the_last_visit_is_looked_in_until_the_user_picks(stores, tmp_path):
    """Sweeps are looked in newest first by default; a sweep that finished after the Gallery was
    opened (the user ran it on Sweeps and came back) joins them, as long as the user has not
    chosen sweeps themself. A choice of their own is kept."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/gallery.py").run()
    assert at.multiselect(key="gal_sweeps").value == [2, 1]
    engines = {"fake-a": LookupEngine(CLEAN_A, "a1"), "fake-c": LookupEngine({**CLEAN_A, Q1: "France"}, "c1")}
    run_sweep(SweepConfig("toy", parse_specs("TLQ"), list(engines), name="toy-new"), engines, stores, dataset=TOY)
    at.switch_page("pages/sweeps.py").run()
    at.switch_page("pages/gallery.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="gal_sweeps").value == [3, 2, 1]
    # the user's own choice stays, new sweeps or not
    at.multiselect(key="gal_sweeps").set_value([1]).run()
    run_sweep(SweepConfig("toy", parse_specs("TTQ"), list(engines), name="toy-newer"), engines, stores, dataset=TOY)
    at.switch_page("pages/sweeps.py").run()
    at.switch_page("pages/gallery.py").run()
    assert at.multiselect(key="gal_sweeps").value == [1]


def test_the_same_finding_in_two_sweeps_is_listed_once(stores):
    """Two sweeps over the same data set and models share their clean answers: their disagreement
    is one finding, not one per sweep (the Gallery listed it twice)."""
    engines = {"fake-a": LookupEngine(CLEAN_A, "a1"), "fake-c": LookupEngine({**CLEAN_A, Q1: "France"}, "c1")}
    run_sweep(SweepConfig("toy", parse_specs("TLQ"), list(engines), name="toy-disagree-again"), engines, stores,
              dataset=TOY)
    found = cg.find_all(stores, [2, 3])
    assert [(f.example_id, f.answers) for f in found["disagree"]] == \
        [("q1", {"fake-a": "Paris", "fake-c": "France"})]
