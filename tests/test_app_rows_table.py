"""Heatmaps' Rows tab (AppTest): filter the toy sweep's answers, select a row, pin two side by side.

The sweep and its hand-checked rows are test_sweep_rows.py's (fake-a / fake-b under TUQ, RUQ and
DCRQ n_chars=1..2 on the five-question toy set: 32 scored answers).
"""
from __future__ import annotations

import html

import pytest
from streamlit.testing.v1 import AppTest
from test_sweep_rows import build_rows_sweep

from core.sweeps.analysis import rows as rt

PAGE = "../pages/heatmaps.py"


@pytest.fixture
def rows_db(tmp_path, monkeypatch):
    db = tmp_path / "sweeps.sqlite"
    build_rows_sweep(db)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    return db


def _rows_frame(at):
    (frame,) = [d.value for d in at.dataframe if list(d.value.columns) == rt.COLUMNS]
    return frame


def _key(db, example, model, perturbation):
    t = rt.sweep_rows(db, "toy-rows")
    row = t[(t["example"] == example) & (t["model"] == model) & (t["perturbation"] == perturbation)].iloc[0]
    return rt.row_key(row)


def _pinned(at) -> list[str]:
    return [html.unescape(m.value) for m in at.markdown if 'class="qax-pinned"' in m.value]


def _rows_tab():
    """The page with its Rows tab open (the tab is built only when shown)."""
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert [t.label for t in at.tabs][:2] == ["Heatmap", "Rows"]
    assert not [d for d in at.dataframe if list(d.value.columns) == rt.COLUMNS]   # not built while hidden
    at.session_state["hm_tabs"] = "Rows"
    return at.run()


def test_filter_select_and_pin_two(rows_db):
    at = _rows_tab()
    assert not at.exception, at.exception
    assert len(_rows_frame(at)) == 32
    assert any("Rows 1–32 of 32 rows that pass the filters (32 scored answers" in c.value.replace("\\", "")
               for c in at.caption)

    at.multiselect(key="rows_perts").set_value(["TUQ"])
    at.radio(key="rows_changed").set_value("changed").run()
    assert not at.exception, at.exception
    shown = _rows_frame(at)
    assert list(zip(shown["example"], shown["model"], shown["answer"])) == [
        ("q3", "fake-a", "river Thames"), ("q4", "fake-a", "Berlin"), ("q5", "fake-a", "palace"),
        ("q5", "fake-b", "Neumann")]
    at.selectbox(key="rows_sort").set_value("F1").run()
    assert list(_rows_frame(at)["F1"].round(1)) == [0.0, 0.0, 66.7, 66.7]

    # select q4 (fake-a, TUQ): the drill-down shows both models' answers in the context
    at.selectbox(key="rows_pick").set_value(_key(rows_db, "q4", "fake-a", "TUQ")).run()
    assert not at.exception, at.exception
    assert any(s.value.replace("\\", "") == "Row: q4 · fake-a · TUQ · r0" for s in at.subheader)
    contexts = [html.unescape(m.value) for m in at.markdown if 'class="qax-context"' in m.value]
    assert any('title="fake-a">Berlin</mark>' in c and 'title="fake-b, gold answer">three million</mark>' in c
               for c in contexts)
    assert [b.label for b in at.button if b.key in ("rows_open_ask", "rows_open_variants")] == [
        "Open in Ask", "Open in Variants"]
    at.button(key="rows_pin").click().run()
    assert not at.exception, at.exception
    (one,) = _pinned(at)
    assert one.count('class="qax-pinned-card"') == 1

    # pin a second row: both side by side, each with its answer marked and its question's edits
    at.selectbox(key="rows_pick").set_value(_key(rows_db, "q5", "fake-b", "TUQ")).run()
    at.button(key="rows_pin").click().run()
    assert not at.exception, at.exception
    (two,) = _pinned(at)
    assert two.count('class="qax-pinned-card"') == 2
    assert two.index("1. q4 · fake-a · TUQ · r0") < two.index("2. q5 · fake-b · TUQ · r0")
    # fake-b's "Neumann" lies inside the gold "Balthasar Neumann"
    assert 'title="fake-a">Berlin</mark>' in two and 'title="fake-b, gold answer">Neumann</mark>' in two
    assert "F1 0.0 · EM 0" in two and "F1 66.7 · EM 0" in two
    assert "<del" in two and "<ins" in two                      # upper-casing marked as edits
    assert at.button(key="rows_pin").disabled                  # two are the most
    at.button(key="rows_unpin_0").click().run()
    (left,) = _pinned(at)
    assert left.count('class="qax-pinned-card"') == 1 and "q5 · fake-b · TUQ" in left


def test_text_search_and_noise_range(rows_db):
    at = _rows_tab()
    at.text_input(key="rows_text").set_value("wuerzburg").run()
    assert list(_rows_frame(at)["perturbation"]) == ["RUQ", "RUQ"]
    at.session_state["hm_tabs"] = "Heatmap"      # another tab and back: the filter is kept
    at.run()
    at.session_state["hm_tabs"] = "Rows"
    at.run()
    assert at.text_input(key="rows_text").value == "wuerzburg"
    assert list(_rows_frame(at)["perturbation"]) == ["RUQ", "RUQ"]
    at.text_input(key="rows_text").set_value("").run()
    at.multiselect(key="rows_perts").set_value(["TUQ", "RUQ"])
    at.slider(key="rows_noise_range").set_value((5.0, 10.0)).run()   # RUQ's CER is 6.25 %, TUQ's 0
    assert not at.exception, at.exception
    assert list(_rows_frame(at)["CER %"]) == [6.25, 6.25]


def test_pinned_cards_escape_what_the_store_holds():
    import pandas as pd

    from components.heatmaps.rows_table import pinned_html

    hostile = "![x](http://h/p.png) <img src=x onerror=alert(1)>"
    row = pd.Series({"example": "<b>q</b>", "model": "m<script>", "perturbation": "[t](http://h)", "repeat": 0,
                     "span start": 0, "span end": 2, "answer": hostile, "clean answer": "<i>", "changed": True,
                     "F1": 0.0, "EM": 0.0, "CER %": 1.0, "WER %": 2.0})
    detail = {"context": hostile, "perturbed_context": None, "golds": ["<i>"], "perturbed_golds": [],
              "perturbed_gold_starts": [], "original_question": hostile, "variant_question": hostile + "?"}
    out = pinned_html([row], [detail])
    assert "<img" not in out and "<script" not in out and "<b>q" not in out and "](" not in out
    assert "&#60;img" in out and out.count('class="qax-pinned-card"') == 1
