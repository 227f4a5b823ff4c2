"""A sweep's answers as one table (core.sweeps.analysis.rows), on a toy sweep whose every row is worked out by hand.

Two lookup-table engines (those of test_app_heatmaps) answer the five-question toy set:

clean: fake-a answers q1-q4 right and q5 "Neumann" (gold "Balthasar Neumann": F1 2/3);
       fake-b answers all five right.
TUQ (upper case): fake-a q1, q2 right and unchanged; q3 "river Thames" (F1 2/3, changed),
                  q4 "Berlin" and q5 "palace" (F1 0, changed). fake-b: q1-q4 as clean; q5
                  "Neumann" (F1 2/3, changed from "Balthasar Neumann").
RUQ (umlauts; only q5 has one, "Würzburg" -> "Wuerzburg"): fake-a "Balthasar Neumann" (F1 100,
                  changed from "Neumann"); fake-b "palace" (F1 0, changed).
Noise, NoiseQA's Table 3 form (lower-cased, no punctuation): TUQ changes only the case: CER 0.
RUQ: "who built the palace in würzburg" (32 characters, 6 words) -> "...wuerzburg": 2 character
edits (ü -> u, e inserted), CER 2/32 = 6.25 %; one word of six, WER 16.67 %.
DCRQ(n_chars=1|2): neither engine knows a misspelt question: no answer, F1 0, changed.
"""
from __future__ import annotations

import pandas as pd
import pytest
from test_app_heatmaps import ANSWERS_A, ANSWERS_B, TOY, LookupEngine

from core.perturb.spec import parse_specs
from core.sweeps.analysis import rows as rt
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep


def build_rows_sweep(db) -> str:
    config = SweepConfig("toy", parse_specs("TUQ,RUQ,DCRQ:n_chars=1..2"), ["fake-a", "fake-b"], repeats=1, seed=1,
                         name="toy-rows")
    run = run_sweep(config, {"fake-a": LookupEngine(ANSWERS_A, "a1"), "fake-b": LookupEngine(ANSWERS_B, "b1")},
                    db, dataset=TOY)
    assert run.status == "done"
    return run.name


@pytest.fixture(scope="module")
def table_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("rows") / "sweeps.sqlite"
    build_rows_sweep(db)
    return db


@pytest.fixture(scope="module")
def table(table_db):
    return rt.sweep_rows(table_db, "toy-rows")


def _get(table, example, model, perturbation):
    hit = table[(table["example"] == example) & (table["model"] == model) & (table["perturbation"] == perturbation)]
    assert len(hit) == 1, hit
    return hit.iloc[0]


def test_one_row_per_scored_answer_with_hand_checked_values(table):
    # TUQ 5 + RUQ 1 + DCRQ 2 x 5 per model; RUQ's four n/a rows hold no answer
    assert len(table) == 2 * (5 + 1 + 10)
    assert list(table.columns) == rt.COLUMNS + rt.KEY_COLUMNS
    assert table.attrs["n_param"] == "n_chars"
    # the sweep's order: examples first, then models, then specs
    assert list(table["example"][:4]) == ["q1"] * 4 and list(table["model"][:4]) == ["fake-a"] * 3 + ["fake-b"]
    tuq = table[table["perturbation"] == "TUQ"]
    assert list(zip(tuq["example"], tuq["model"], tuq["changed"], tuq["F1"].round(2))) == [
        ("q1", "fake-a", False, 100.0), ("q1", "fake-b", False, 100.0), ("q2", "fake-a", False, 100.0),
        ("q2", "fake-b", False, 100.0), ("q3", "fake-a", True, 66.67), ("q3", "fake-b", False, 100.0),
        ("q4", "fake-a", True, 0.0), ("q4", "fake-b", False, 100.0), ("q5", "fake-a", True, 0.0),
        ("q5", "fake-b", True, 66.67)]
    assert set(tuq["CER %"]) == {0.0} and set(tuq["WER %"]) == {0.0}      # case only: no Table 3 noise
    a5 = _get(table, "q5", "fake-a", "RUQ")
    assert (a5["answer"], a5["clean answer"], a5["changed"], a5["F1"], a5["EM"]) == (
        "Balthasar Neumann", "Neumann", True, 100.0, 100.0)
    assert a5["clean F1"] == pytest.approx(200 / 3)
    assert a5["CER %"] == pytest.approx(6.25) and a5["WER %"] == pytest.approx(100 / 6)
    assert a5["perturbed question"] == "Who built the palace in Wuerzburg?"
    assert a5["question"] == "Who built the palace in Würzburg?"
    ctx = TOY.examples[4].context
    assert ctx[a5["span start"]:a5["span end"]] == "Balthasar Neumann"
    assert pd.isna(a5["seed"]) and pd.isna(a5["n"]) and a5["repeat"] == 0   # deterministic, no n
    b4 = _get(table, "q4", "fake-a", "TUQ")
    assert (b4["answer"], b4["clean answer"], b4["F1"]) == ("Berlin", "three million", 0.0)
    # slices: core.sweeps.analysis.slices' groups of the original example; the edit size of the variant
    assert (b4["question word"], b4["answer type"], b4["word overlap"], b4["question length"]) == (
        "how many/much", "number", "<50%", "1-6")          # {people, berlin} of 6 question words
    assert a5["edit size"] == "5-10%" and b4["edit size"] == ">20%"   # raw CER 2/33; every letter upper-cased
    dcrq = table[table["perturbation id"] == "DCRQ"]
    assert sorted(set(dcrq["n"])) == [1, 2] and set(dcrq["seed"]) == {1}
    assert set(dcrq["F1"]) == {0.0} and dcrq["changed"].all() and set(dcrq["answer"]) == {""}


def test_progress_is_reported_up_to_the_whole(table_db):
    seen = []
    rt.sweep_rows(table_db, "toy-rows", lambda f, what: seen.append((f, what)))
    assert seen[0] == (0.6, "slicing 5 examples")            # reported once every 200 and at the end
    assert seen[-1] == (1.0, "measuring the noise of 32 answers")
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)


def test_filters(table):
    def ids(f):
        got = rt.filter_rows(table, f)
        return list(zip(got["example"], got["model"], got["perturbation"]))

    changed_tuq = rt.RowFilter(perturbations=("TUQ",), changed=True)
    assert ids(changed_tuq) == [("q3", "fake-a", "TUQ"), ("q4", "fake-a", "TUQ"), ("q5", "fake-a", "TUQ"),
                                ("q5", "fake-b", "TUQ")]
    assert ids(rt.RowFilter(perturbations=("TUQ", "RUQ"), models=("fake-b",), changed=True)) == [
        ("q5", "fake-b", "TUQ"), ("q5", "fake-b", "RUQ")]
    # F1 in [50, 80]: the two 2/3 answers
    assert ids(rt.RowFilter(f1=(50, 80))) == [("q3", "fake-a", "TUQ"), ("q5", "fake-b", "TUQ")]
    # of TUQ and RUQ, only RUQ's rows have WER in [10, 20] (DCRQ's one word of 5-6 does too)
    assert ids(rt.RowFilter(perturbations=("TUQ", "RUQ"), noise="wer", noise_range=(10, 20))) == [
        ("q5", "fake-a", "RUQ"), ("q5", "fake-b", "RUQ")]
    assert ids(rt.RowFilter(perturbations=("TUQ", "RUQ"), noise="cer", noise_range=(6.25, 6.25))) == [
        ("q5", "fake-a", "RUQ"), ("q5", "fake-b", "RUQ")]
    assert ids(rt.RowFilter(slice_name="wh", groups=("which",), perturbations=("TUQ",))) == [
        ("q3", "fake-a", "TUQ"), ("q3", "fake-b", "TUQ")]
    # text: questions (either), answers, example id; case-insensitive and literal
    assert ids(rt.RowFilter(text="wuerZBURG")) == [("q5", "fake-a", "RUQ"), ("q5", "fake-b", "RUQ")]
    assert ids(rt.RowFilter(text="river thames")) == [("q3", "fake-a", "TUQ")]
    assert ids(rt.RowFilter(text="(")) == []
    with pytest.raises(ValueError, match="unknown slice"):
        rt.filter_rows(table, rt.RowFilter(slice_name="colour", groups=("red",)))


def test_sort_and_pages(table):
    tuq = rt.filter_rows(table, rt.RowFilter(perturbations=("TUQ",)))
    worst = rt.sort_rows(tuq, "F1")
    assert list(zip(worst["example"], worst["model"]))[:4] == [("q4", "fake-a"), ("q5", "fake-a"), ("q3", "fake-a"),
                                                               ("q5", "fake-b")]
    by_answer = rt.sort_rows(tuq, "answer", descending=True)
    assert list(by_answer["answer"][:3]) == ["three million", "river Thames", "palace"]
    first, pages = rt.page_of(worst, 1, 4)
    last, _ = rt.page_of(worst, 3, 4)
    assert pages == 3 and len(first) == 4
    assert list(zip(last["example"], last["model"])) == [("q3", "fake-b"), ("q4", "fake-b")]
    with pytest.raises(ValueError, match="no such column"):
        rt.sort_rows(tuq, "colour")


def test_a_row_opens_its_detail(table, table_db):
    row = _get(table, "q4", "fake-a", "TUQ")
    key = rt.row_key(row)
    assert key == ("fake-a", "TUQ", "{}", row["example_hash"], 0)
    detail = rt.row_detail(table_db, "toy-rows", key)
    assert detail["context"] == TOY.examples[3].context and detail["golds"] == ["three million"]
    assert detail["variant_question"] == "HOW MANY PEOPLE LIVE IN BERLIN?" and detail["answer"] == "Berlin"
    assert rt.row_detail(table_db, "toy-rows", ("fake-a", "TUQ", "{}", "no-such-hash", 0)) is None
