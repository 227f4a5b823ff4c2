"""The error-analysis UI (AppTest): Heatmaps' repair / slices / abstention sections on a hand-built
sweep, the Behaviour tests page, and Ask's repair and counterfactual panels with minilm-squad."""
from __future__ import annotations

import pytest
from rendered import open_tab, shown
from streamlit.testing.v1 import AppTest
from test_error_analysis import EXAMPLES, FILE, NOISY, TABLE, TOY, TableEngine

from core.datasets import Dataset
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import QAExample


def _frame(at, column: str):
    for df in at.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no table with column {column!r}")


@pytest.fixture
def sweep_db(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "noiseqa").mkdir(parents=True)
    Dataset("noisy", "en", [QAExample(ex.id, NOISY[ex.id], ex.context, ex.answers) for ex in EXAMPLES]) \
        .to_squad_json(data / "noiseqa" / "toy-keyboard-synthetic.json")
    db = tmp_path / "s.sqlite"
    run_sweep(SweepConfig("toy", [f"{FILE},{FILE}+repair_Q,repair_Q"], ["table"], name="toy"),
              {"table": TableEngine(TABLE)}, db, dataset=TOY, data_dir=data)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    return db


def test_heatmaps_repair_slices_and_abstention(sweep_db):
    at = open_tab(AppTest.from_file("../pages/heatmaps.py", default_timeout=180).run(), "Repair")
    assert not at.exception, at.exception
    repair = _frame(at, "repaired F1")
    row = repair[(repair["noise"] == "file:toy-keyboard-synthetic") & (repair["setting"] == "content")].iloc[0]
    assert (row["N"], row["noisy F1"], row["repaired F1"], row["gain"]) == (4, 50.0, 100.0, 50.0)
    open_tab(at, "Slices & calibration")
    slices = _frame(at, "slice group")
    noisy = slices[slices["spec"] == "file:toy-keyboard-synthetic"]
    assert dict(zip(noisy["slice group"], noisy["N"])) == {"what": 1, "who": 1, "when": 2}
    # drill down: the "when" group of the noisy column holds q1 and q2, q1 (F1 lost) first
    at.selectbox(key="hm_slice_group_wh").set_value("when").run()
    at.selectbox(key="hm_slice_col_wh").set_value(1).run()
    examples = _frame(at, "question as perturbed")
    assert examples["id"].tolist() == ["q1", "q2"]
    at.selectbox(key="hm_slice").set_value("cer").run()
    assert not at.exception
    cer = _frame(at, "slice group")
    assert set(cer["slice group"]) == {"unchanged", "<=5%", "5-10%"}
    calib = _frame(at, "coverage %")
    (row,) = calib[calib["perturbation"] == FILE].to_dict("records")
    assert (row["threshold"], row["coverage %"], row["answered F1"]) == (0.6, 50.0, 100.0)


def test_behaviour_page_runs_a_shipped_file(monkeypatch):
    at = AppTest.from_file("../pages/behaviour.py", default_timeout=300).run()
    assert not at.exception, at.exception
    at.multiselect(key="bt_models").set_value(["minilm-squad"]).run()
    at.selectbox(key="bt_file").set_value("en.toml").run()
    at.button(key="bt_go").click().run()
    assert not at.exception, at.exception
    summary = _frame(at, "failure rate %")
    assert len(summary) == 10 and set(summary["type"]) == {"MFT", "INV", "DIR"}
    assert summary["cases"].sum() == 200     # 9 tests x 20 cases, and 20 distinct pairs of 5 names
    failing = summary[summary["failed"] > 0]["test"].tolist()
    assert failing, "the shipped file has tests minilm-squad fails (typos, comparison)"
    html = "".join(m.value for m in at.markdown)
    assert 'class="qax-span"' in html


def test_behaviour_page_refuses_a_malformed_upload():
    at = AppTest.from_file("../pages/behaviour.py", default_timeout=120).run()
    at.radio(key="bt_source").set_value("Upload a file").run()
    assert not at.exception
    assert any("Upload a behaviour file" in i.value for i in at.info)


def test_ask_repair_and_counterfactual_with_minilm():
    at = AppTest.from_file("../pages/ask.py", default_timeout=300).run()
    assert not at.exception, at.exception
    at.multiselect(key="ask_models").set_value(["minilm-squad"]).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    context = ("Peyton Manning was the quarterback of the Denver Broncos. "
               "The Broncos won Super Bowl 50 in February 2016.")
    at.text_area(key="ask_context").input(context).run()
    at.text_area(key="ask_question").input("Who was the quartreback of the Broncos?").run()
    at.button(key="ask_go").click().run()
    assert not at.exception, at.exception
    changes = _frame(at, "why")
    assert changes.values.tolist() == [["quartreback", "quarterback", "closest context word, CER 0.18"]]
    at.button(key="ask_rep_go").click().run()
    assert not at.exception, at.exception
    table = _frame(at, "answer after")
    assert table.iloc[0]["answer after"] == "Peyton Manning"
    # counterfactual: "Peyton" -> "Eli" in the context; the answer keeps its span, with the new name in it
    at.radio(key="ask_cf_field").set_value("context").run()
    at.selectbox(key="ask_cf_index_context").set_value(0).run()
    at.text_input(key="ask_cf_new_context_0").input("Eli").run()
    at.button(key="ask_cf_go").click().run()
    assert not at.exception, at.exception
    moved = _frame(at, "movement").iloc[0]
    assert (moved["old answer"], moved["new answer"], moved["old span"], moved["new span"]) == (
        "Peyton Manning", "Eli Manning", "0-14", "0-11")
    assert moved["movement"] == "same span, with the edited word in it"
    assert shown(moved["new answer"]) == "Eli Manning"


def test_variants_repairs_the_selected_row_with_minilm():
    at = AppTest.from_file("../pages/variants.py", default_timeout=300).run()
    assert not at.exception, at.exception
    at.multiselect(key="var_models").set_value(["minilm-squad"]).run()
    at.radio(key="var_source").set_value("Type a question and context").run()
    at.text_area(key="var_context").input("Peyton Manning was the quarterback of the Denver Broncos.").run()
    at.text_area(key="var_question").input("Who was the quartreback of the Broncos?").run()
    at.multiselect(key="var_fam_case").set_value(["TLQ"]).run()
    at.button(key="var_go").click().run()
    assert not at.exception, at.exception
    # row 1 = TLQ: "who was the quartreback of the broncos?"; its repair restores the context's spelling
    at.selectbox(key="var_row").set_value(1).run()
    changes = _frame(at, "why")
    # ("broncos" stays: the comparison with the context ignores case)
    assert changes[["was", "now"]].values.tolist() == [["quartreback", "quarterback"]]
    at.button(key="var_rep_go").click().run()
    assert not at.exception, at.exception
    after = _frame(at, "answer after").iloc[0]
    assert after["model"] == "minilm-squad" and after["answer after"] == "Peyton Manning"


def test_sweeps_page_adds_repair_chains(monkeypatch, tiny_registry, tmp_path):
    import sqlite3

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "sweeps.sqlite"
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=180).run()
    at.number_input(key="sw_sample").set_value(4)
    at.multiselect(key="sw_models").set_value(["tiny-a"])
    at.multiselect(key="sw_fam_keyboard").set_value(["keyboard_Q"])
    at.multiselect(key="sw_repair").set_value(["spellcheck", "entities"])
    at.number_input(key="sw_repeats").set_value(2)
    at.text_input(key="sw_name").set_value("rep").run()
    assert not at.exception, at.exception
    # keyboard_Q (2 repeats), repair_Q x 2 settings (once), keyboard_Q+repair_Q x 2 (2 repeats each):
    # 4 examples x 1 model x (1 clean + 2 + 2 + 4) = 36 rows
    assert any("5 perturbation spec(s) × 4 examples × 1 model(s): 36 result rows" in c.value for c in at.caption)
    at.button(key="sw_start").click().run()
    job = at.session_state["sweep_job"]
    assert job.wait(240) and job.error is None and job.result.status == "done"
    conn = sqlite3.connect(db)
    # the chains score the same noisy questions as keyboard_Q alone, then repaired
    noisy = dict(conn.execute("SELECT example_hash || repeat, variant_question FROM result_rows "
                              "WHERE perturbation = 'keyboard_Q'").fetchall())
    pairs = conn.execute(
        "SELECT r.example_hash || r.repeat, r.variant_question, c.text FROM result_rows r JOIN examples e "
        "ON e.hash = r.example_hash JOIN contexts c ON c.hash = e.context_hash "
        "WHERE r.perturbation = 'keyboard_Q+repair_Q' AND r.params_json LIKE '%entities%'").fetchall()
    assert len(pairs) == 8 and set(noisy) == {k for k, _, _ in pairs}
    from core.perturb.repair import repair_question

    assert all(q == repair_question(noisy[k], ctx, "en", "entities").text for k, q, ctx in pairs)
    metas = [json_meta for (json_meta,) in conn.execute(
        "SELECT meta_json FROM variants WHERE perturbation = 'keyboard_Q+repair_Q'")]
    assert all('"steps"' in m for m in metas)


def test_behaviour_page_marks_models_not_trained_for_the_file_language(monkeypatch, tiny_registry):
    """The German shipped file: the English models are marked in the picker and named in a note."""
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file("../pages/behaviour.py", default_timeout=120).run()
    assert not at.exception, at.exception
    assert "tiny-a" in at.multiselect(key="bt_models").options   # en.toml: nothing to mark
    at.selectbox(key="bt_file").set_value("de.toml").run()
    assert not at.exception, at.exception
    assert "tiny-a · en only, not for de" in at.multiselect(key="bt_models").options
    assert any("The context is German; tiny-a, tiny-b were trained for English" in c.value for c in at.caption)
    at.radio(key="bt_source").set_value("Upload a file").run()   # no file yet: the picker still shows
    assert not at.exception, at.exception
    assert at.multiselect(key="bt_models").value == ["tiny-a", "tiny-b"]
