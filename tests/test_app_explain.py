"""AppTest: Ask's attribution button colours the question and context per model, escaped; "why
did it change?" on Variants and Heatmaps; nothing is attributed until its button is pressed."""
import re

import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def finished(at, page: str):
    """Wait for the page's attribution run (a background thread), then run the script again: the
    browser's polling fragment does that; AppTest does not run fragments by their timer."""
    run = at.session_state[f"{page}_attr_run"]
    assert run.wait(120), "the attribution did not finish"
    return at.run()


def test_ask_attribution_button_colours_tokens_per_model(tiny_env):
    from core.explain.run import running_runs

    at = AppTest.from_file("../app.py", default_timeout=180).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("<script>alert(1)</script> paris is the capital of france .").run()
    at.text_area(key="ask_question").input("what is the capital of <b>france</b> ?").run()
    at.button(key="ask_go").click().run()
    assert not [m for m in at.markdown if "qax-attr" in m.value]   # nothing until asked
    assert not running_runs() and "ask_attr_run" not in at.session_state
    # one model is picked to start with: the cheapest measured, else the first (tiny-a)
    assert at.multiselect(key="ask_attr_models").value == ["tiny-a"]
    at.button(key="ask_attr_go").click().run()
    finished(at, "ask")
    assert not at.exception
    assert len([m for m in at.markdown if 'class="qax-attr"' in m.value]) == 2
    at.multiselect(key="ask_attr_models").set_value(["tiny-a", "tiny-b"]).run()
    at.button(key="ask_attr_go").click().run()     # only tiny-b is computed: tiny-a's is kept
    assert [m.model for m in at.session_state["ask_attr_run"].models] == ["tiny-b"]
    finished(at, "ask")
    coloured = [m.value for m in at.markdown if 'class="qax-attr"' in m.value]
    assert len(coloured) == 4                       # question and context, for tiny-a and tiny-b
    assert all("<script>" not in h and "<b>" not in h for h in coloured)
    text = re.sub(r"<[^>]*>", "", coloured[1])     # the tags dropped: the context, escaped
    assert shown(text).startswith("<script>alert(1)</script> paris is")
    assert "rgba(" in coloured[0] and 'title="' in coloured[0]
    assert len([c for c in at.caption if "Attributions sum to the score's change" in c.value]) == 2


def test_variants_why_did_it_change_aligns_the_edited_question(tiny_env):
    import pandas as pd

    from core.explore.variants import Choice, variant_rng
    from core.perturb import registry

    at = AppTest.from_file("../pages/variants.py", default_timeout=180).run()
    at.multiselect(key="var_fam_word").set_value(["DRQ"])
    at.number_input(key="var_seed").set_value(22)
    at.number_input(key="var_repeats").set_value(2)
    at.run()
    at.button(key="var_go").click().run()
    assert not at.exception
    df = pd.DataFrame(at.session_state["var_result"]["table"])
    changed = [k for k, mark in enumerate(df["tiny-a: changed"]) if mark == "changed"]
    assert changed, "the toy model should change an answer under DRQ with seed 22"
    assert not [e for e in at.expander if e.label == "Why did it change?"]   # row 0: the original
    k = changed[0]
    at.selectbox(key="var_row").set_value(k).run()
    assert not at.exception
    assert "var_attr_run" not in at.session_state      # drawn, not computed: the button starts it
    at.button(key="var_attr_go").click().run()
    finished(at, "var")
    (why,) = [e for e in at.expander if e.label == "Why did it change?"]
    html = "\n".join(m.value for m in why.markdown)
    rows = at.session_state["var_result"]["rows"]
    drq = registry.get("DRQ").apply(rows[0].example, variant_rng(22, rows[0].example, Choice("DRQ"),
                                                                   rows[k].repeat))[0]
    (edit,) = drq.edits
    deleted = rows[0].example.question[edit.start:edit.end].strip()
    assert f"<td><b>{deleted}</b></td>" in html                # the deleted word, on the clean side only
    assert "<i>—</i>" in html and html.count("<tr>") == len(rows[0].example.question.split()) + 1
    assert re.search(r"Answer: (moved|grew|shrank|shifted|lost|found): '", shown(html))


def test_heatmap_drill_down_why_did_it_change(tiny_env, tmp_path, monkeypatch):
    from test_app_heatmaps import ANSWERS_A, TOY, LookupEngine

    from core.perturb.spec import parse_specs
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep

    db = tmp_path / "sweeps.sqlite"
    # the sweep's answers come from a lookup table; the expander explains the registered tiny-a itself
    run_sweep(SweepConfig("toy", parse_specs("TUQ"), ["tiny-a"], repeats=1, seed=1, name="toy"),
              {"tiny-a": LookupEngine(ANSWERS_A, "x1")}, db, dataset=TOY)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=180).run()
    assert not at.exception, at.exception
    # largest F1 loss first: q4, "Berlin" instead of "three million" under TUQ
    assert at.selectbox(key="hm_example").value == 0
    from core.explain.run import running_runs

    # the cell's example and its closed "why" panel are drawn; nothing is attributed until asked
    (why,) = [e for e in at.expander if e.label == "Why did it change?"]
    assert not why.markdown and not running_runs() and "hm_attr_run" not in at.session_state
    at.button(key="hm_attr_go").click().run()
    finished(at, "hm")
    (why,) = [e for e in at.expander if e.label == "Why did it change?"]
    html = shown("\n".join(m.value for m in why.markdown))
    assert "<td><b>How</b></td>" in html and "<td><b>HOW</b></td>" in html and "<td><b>BERLIN?</b></td>" in html
    assert html.count("<tr>") == len("How many people live in Berlin?".split()) + 1
    assert not why.error
