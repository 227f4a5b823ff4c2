"""Paired differences with XQuAD's paragraphs apart (core.sweeps.analysis.paired_subsets) on the toy sweep."""
from __future__ import annotations

import pytest

from core.sweeps.analysis import paired_subsets, sweep_cells


def test_model_gain_over_all_questions_is_the_model_vs_model_tabs_figure(sweep_db):
    rows = paired_subsets.model_gain(sweep_db, "toy-sweep", "fake-a", "fake-b")
    tab = {r["spec"]: r for r in sweep_cells.model_differences(sweep_db, "toy-sweep", "fake-a", "fake-b")}
    everything = [r for r in rows if r["questions"] == "all"]
    assert [r["condition"] for r in everything] == list(tab)
    for r in everything:
        assert (r["n"], r["difference"], r["ci95_low"], r["ci95_high"]) == \
            (tab[r["condition"]]["n"], tab[r["condition"]]["difference"], tab[r["condition"]]["ci95_low"],
             tab[r["condition"]]["ci95_high"])
    # the toy contexts are not XQuAD's: every question is in the second subset
    for r in rows:
        if r["questions"] == "xquad paragraphs":
            assert r["n"] == 0 and r["difference"] is None
        if r["questions"] == "other paragraphs":
            assert r["n"] == next(e["n"] for e in everything if e["condition"] == r["condition"])


def test_step_gain_names_a_missing_spec(sweep_db):
    specs = [s["label"] for s in sweep_cells.sweep_specs(sweep_db, "toy-sweep")]
    rows = paired_subsets.step_gain(sweep_db, "toy-sweep", specs[0], specs[1])
    assert {r["model"] for r in rows} == {"fake-a", "fake-b"}
    with pytest.raises(ValueError, match="no spec 'nope'"):
        paired_subsets.step_gain(sweep_db, "toy-sweep", "nope", specs[0])


def test_the_printed_rows_leave_out_a_subset_without_questions(sweep_db):
    printed = paired_subsets.format_rows(paired_subsets.model_gain(sweep_db, "toy-sweep", "fake-a", "fake-b"),
                                         "condition")
    assert "xquad paragraphs" not in printed and "None" not in printed
    ruq = next(line for line in printed.splitlines() if line.startswith("RUQ ") and " all " in line)
    assert ruq.split()[2:] == ["n=1", "—", "(fewer", "than", "2", "questions)"]
    assert printed.count("other paragraphs") == printed.count(" all ")
