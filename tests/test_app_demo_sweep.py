"""Issue 43, never empty: a fresh clone's Heatmaps and Gallery offer the demo sweep in one click
(core.explore.demo_sweep, run here with the shipped models), show it labelled as a demo, and put the
user's own sweeps before it as soon as there are any. Heatmaps shows only the tabs that apply."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from test_app_heatmaps import build_sweep

from core.explore import demo_sweep
from core.qa import registry
from core.sweeps.analysis import report


@pytest.fixture
def fresh_db(tmp_path, monkeypatch):
    monkeypatch.delenv("QAX_MODELS_TOML", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "sweeps.sqlite"
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    if demo_sweep.demo_models(registry.installed_models()) != ["mpnet-squad-v2", "minilm-squad-v2"]:
        pytest.skip("the shipped models are not installed (./run.sh setup)")
    return db


def test_heatmaps_and_gallery_open_on_the_demo_sweep_then_on_the_users_own(fresh_db):
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=600).run()
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "hm_sweep"]         # nothing to show yet...
    assert not [i for i in at.info if "Run a sweep first" in i.value]
    at.button(key="hm_demo_sweep").click().run()                        # ...but one click away
    assert not at.exception, at.exception
    sweeps = report.list_sweeps(fresh_db)
    assert [s["name"] for s in sweeps] == [demo_sweep.DEMO_NAME]
    assert sweeps[0]["done_units"] == sweeps[0]["total_units"] == 264   # 12 questions x 11 rows x 2 models
    assert at.selectbox(key="hm_sweep").value == sweeps[0]["id"]
    # only the views that apply: no repaired spec in the demo, so no Repair tab
    assert [t.label for t in at.tabs] == ["Heatmap", "Model vs model", "Penalty by n", "NoiseQA",
                                          "DuReader-robust", "Slices & calibration", "Noise curves", "Backend flips",
                                          "Translate or answer?"]
    tables = [d.value for d in at.dataframe if "model" in d.value.columns]
    assert tables and all(set(t["model"]) <= {"mpnet-squad-v2", "minilm-squad-v2", "(all)"} for t in tables)
    cells = {(c.model, c.label): c for c in report.cells(fresh_db, demo_sweep.DEMO_NAME)}
    # real answers of the real models: both right on 11.8 of 12 clean questions, and keyboard noise
    # costs the small model more than the strong one
    assert round(cells[("mpnet-squad-v2", "keyboard_Q(p=0.25)")].clean_f1, 1) == 98.3
    assert cells[("minilm-squad-v2", "keyboard_Q(p=0.25)")].f1 < cells[("mpnet-squad-v2", "keyboard_Q(p=0.25)")].f1

    gal = AppTest.from_file("../pages/gallery.py", default_timeout=300).run()
    assert not gal.exception
    assert gal.multiselect(key="gal_sweeps").value == [sweeps[0]["id"]]
    assert not [b for b in gal.button if b.key == "gal_demo_sweep"]     # there is a sweep: no offer

    build_sweep(fresh_db)   # the user's own sweep (tests/test_app_heatmaps.py's toy sweep)
    own = next(s["id"] for s in report.list_sweeps(fresh_db) if s["name"] == "toy-sweep")
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=300).run()
    assert at.selectbox(key="hm_sweep").value == own
    assert at.selectbox(key="hm_sweep").options[-1].startswith(demo_sweep.DEMO_NAME)   # the demo last
    gal = AppTest.from_file("../pages/gallery.py", default_timeout=300).run()
    assert gal.multiselect(key="gal_sweeps").value == [own]
