"""Issue 43, never empty: a fresh clone's Heatmaps and Gallery open on the bundled demo sweep
(shipped as text, assets/demo/demo-sweep.sql, turned into a store in the cache), labelled as a demo;
the user's own sweeps replace it as soon as there are any. An empty database chosen on purpose offers
to build the demo sweep into it in one click (core.explore.demo_sweep, with the shipped models).
Heatmaps shows only the tabs that apply."""
from __future__ import annotations

import sqlite3

import pytest
from streamlit.testing.v1 import AppTest
from test_app_heatmaps import build_sweep

from components.sweep_db_picker import DEMO, STATE_KEY
from core.explore import demo_sweep
from core.perturb.spec import parse_specs
from core.qa import registry
from core.sweeps.analysis import sweep_cells

# no "Backend flips": the demo is alone in its store, so there is no other backend's run to pair it with
DEMO_TABS = ["Heatmap", "Rows", "Model vs model", "Penalty by n", "NoiseQA", "DuReader-robust", "Slices & calibration",
             "Noise curves", "Translate or answer?", "Natural against synthetic"]


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch):
    """An empty sweep database and an empty cache, as on a fresh clone (and none of a developer's
    own sweeps in the checkout's runs/)."""
    from core import config

    monkeypatch.delenv("QAX_MODELS_TOML", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "runs" / "sweeps.sqlite"
    db.parent.mkdir()
    monkeypatch.setattr(config, "runs_dir", lambda: db.parent)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    return db


def test_the_shipped_dump_is_the_demo_sweep_and_opens_as_a_store(fresh_clone, tmp_path):
    store = demo_sweep.shipped_store()
    assert store.parent == tmp_path / "cache" / "demo" and demo_sweep.shipped_store() == store   # made once
    [sweep] = sweep_cells.list_sweeps(store)
    assert sweep["name"] == demo_sweep.DEMO_NAME and sweep["dataset"] == "demo.en"
    assert sweep["done_units"] == sweep["total_units"] == 264   # 12 questions x 11 rows x 2 models
    assert sweep["models"] == ["mpnet-squad-v2", "minilm-squad-v2"]
    assert sweep["config"]["repeats"] == demo_sweep.DEMO_REPEATS and sweep["config"]["seed"] == 0
    stored = sweep_cells.sweep_specs(store, sweep["id"])   # the declared defaults filled in
    asked = parse_specs(demo_sweep.DEMO_SPECS)
    assert [a.id for a in asked] == [sp["perturbation"] for sp in stored]
    assert all(a.params_dict.items() <= sp["params"].items() for a, sp in zip(asked, stored))
    cells = {(c.model, c.label): c for c in sweep_cells.cells(store, demo_sweep.DEMO_NAME)}
    # real answers of the real models: mpnet right on 11.8 of 12 clean questions, and keyboard noise
    # costs the small model more than the strong one
    assert round(cells[("mpnet-squad-v2", "keyboard_Q(p=0.25)")].clean_f1, 1) == 98.3
    assert cells[("minilm-squad-v2", "keyboard_Q(p=0.25)")].f1 < cells[("mpnet-squad-v2", "keyboard_Q(p=0.25)")].f1
    with sqlite3.connect(store) as con:   # no trace of the machine that built it
        assert con.execute("SELECT owner_pid, owner_host, owner_start FROM sweeps").fetchall() == [(None, None, None)]


def test_a_changed_dump_makes_a_new_store(fresh_clone, tmp_path):
    text = demo_sweep.SHIPPED_DUMP.read_text(encoding="utf-8")
    other = tmp_path / "other.sql"
    other.write_text(text.replace("demo · demo.en (bundled)", "demo · renamed"), encoding="utf-8")
    a, b = demo_sweep.shipped_store(), demo_sweep.shipped_store(other)
    assert a != b and [s["name"] for s in sweep_cells.list_sweeps(b)] == ["demo · renamed"]


def test_heatmaps_and_gallery_open_on_the_demo_then_on_the_users_own(fresh_clone):
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=300).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="hm_db").value == DEMO
    assert [i for i in at.info if "bundled demo sweep" in i.value]
    [demo] = sweep_cells.list_sweeps(demo_sweep.shipped_store())
    assert at.selectbox(key="hm_sweep").value == demo["id"]
    assert [t.label for t in at.tabs] == DEMO_TABS   # no repaired spec in the demo, so no Repair tab
    tables = [d.value for d in at.dataframe if "model" in d.value.columns]
    assert tables and all(set(t["model"]) <= {"mpnet-squad-v2", "minilm-squad-v2", "(all)"} for t in tables)
    assert not [b for b in at.button if b.key == "hm_demo_sweep"]        # nothing to build: it is shown

    gal = AppTest.from_file("../pages/gallery.py", default_timeout=300).run()
    assert not gal.exception, gal.exception
    assert gal.selectbox(key="gal_db").value == DEMO
    assert gal.multiselect(key="gal_sweeps").value == [demo["id"]]

    build_sweep(fresh_clone)   # the user's own sweep (tests/test_app_heatmaps.py's toy sweep)...
    at.run()                   # ...replaces the demo in the same session
    assert at.selectbox(key="hm_db").value == str(fresh_clone)
    own = next(s["id"] for s in sweep_cells.list_sweeps(fresh_clone) if s["name"] == "toy-sweep")
    assert at.selectbox(key="hm_sweep").value == own
    assert not [i for i in at.info if "bundled demo sweep" in i.value]
    assert "Bundled demo sweep (read-only)" in at.selectbox(key="hm_db").options   # still one choice away
    gal = AppTest.from_file("../pages/gallery.py", default_timeout=300).run()
    assert gal.selectbox(key="gal_db").value == str(fresh_clone)
    assert gal.multiselect(key="gal_sweeps").value == [own]


def test_heatmaps_opens_on_a_database_with_sweeps_not_on_the_empty_one_sweeps_remembered(fresh_clone):
    """The speech researcher's audit (2026-11-29): their sweeps were in another database of the
    server's, and Heatmaps opened on the empty default that the Sweeps page had remembered ("This
    sweep database holds no sweep yet")."""
    other = fresh_clone.parent / "trials.sqlite"
    build_sweep(other)
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=300)
    at.session_state[STATE_KEY] = str(fresh_clone)   # what opening the Sweeps page leaves
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="hm_db").value == str(other)
    assert [s["name"] for s in sweep_cells.list_sweeps(other)] == ["toy-sweep"]


def test_a_demo_chosen_by_the_user_stays_chosen(fresh_clone):
    build_sweep(fresh_clone)
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=300).run()
    assert at.selectbox(key="hm_db").value == str(fresh_clone)
    at.selectbox(key="hm_db").set_value(DEMO).run()
    at.run()
    assert not at.exception and at.selectbox(key="hm_db").value == DEMO
    assert at.selectbox(key="hm_sweep").format_func(at.selectbox(key="hm_sweep").value).startswith(demo_sweep.DEMO_NAME)


@pytest.mark.slow
def test_an_empty_database_chosen_builds_the_demo_sweep_in_one_click(fresh_clone, monkeypatch):
    monkeypatch.delenv("QAX_CACHE_DIR")   # the shipped models' converted graphs live in the real cache
    if demo_sweep.demo_models(registry.installed_models()) != ["mpnet-squad-v2", "minilm-squad-v2"]:
        pytest.skip("the shipped models are not installed (./run.sh setup)")
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=600).run()
    at.selectbox(key="hm_db").set_value(str(fresh_clone)).run()
    assert not [s for s in at.selectbox if s.key == "hm_sweep"]         # nothing in it yet...
    at.button(key="hm_demo_sweep").click().run()                        # ...but one click away
    assert not at.exception, at.exception
    sweeps = sweep_cells.list_sweeps(fresh_clone)
    assert [s["name"] for s in sweeps] == [demo_sweep.DEMO_NAME]
    assert sweeps[0]["done_units"] == sweeps[0]["total_units"] == 264
    assert at.selectbox(key="hm_db").value == str(fresh_clone) and at.selectbox(key="hm_sweep").value == sweeps[0]["id"]


@pytest.mark.slow
def test_the_shipped_dump_is_what_the_demo_sweep_builds(tmp_path, monkeypatch):
    """Rebuilt here with the shipped models, the demo sweep asks the same perturbed questions (seeded)
    and gives the same answers; int8 kernels may round differently on another CPU, so answers are
    compared as a share."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("QAX_MODELS_TOML", raising=False)
    if demo_sweep.demo_models(registry.installed_models()) != ["mpnet-squad-v2", "minilm-squad-v2"]:
        pytest.skip("the shipped models are not installed (./run.sh setup)")
    out = demo_sweep.write_dump(tmp_path / "rebuilt.sql")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    shipped, rebuilt = demo_sweep.shipped_store(), demo_sweep.shipped_store(out)
    q = "SELECT key, question, status FROM variants ORDER BY key"
    a = ("SELECT model, perturbation, params_json, repeat, example_hash, status, em, f1 FROM results "
         "ORDER BY model, perturbation, params_json, repeat, example_hash")
    with sqlite3.connect(shipped) as s, sqlite3.connect(rebuilt) as r:
        assert s.execute(q).fetchall() == r.execute(q).fetchall()
        ours, theirs = s.execute(a).fetchall(), r.execute(a).fetchall()
    assert len(ours) == len(theirs) == 240
    assert sum(x == y for x, y in zip(ours, theirs)) >= 0.95 * len(ours)
