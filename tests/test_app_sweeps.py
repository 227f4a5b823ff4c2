"""AppTest: the Sweeps page configures a sweep, runs it on a background thread to completion with a
progress panel, lists it, and cancels / resumes one (the tiny models of tests/conftest.py)."""
from __future__ import annotations

import sqlite3
import threading

import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest

from core.datasets import demo_dataset, sample_examples
from core.sweeps.analysis import sweep_cells

PAGE = "../pages/sweeps.py"


@pytest.fixture
def env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = tmp_path / "sweeps.sqlite"
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    return db


def _configure(at: AppTest, name: str) -> AppTest:
    at.number_input(key="sw_sample").set_value(5)
    at.multiselect(key="sw_fam_case").set_value(["TUQ"])
    at.multiselect(key="sw_fam_word").set_value(["DRQ"]).run()
    at.slider(key="sw_param_DRQ_n_words").set_value((1, 2))
    at.number_input(key="sw_repeats").set_value(2)
    at.number_input(key="sw_seed").set_value(3)
    at.number_input(key="sw_chunk").set_value(8)
    at.text_input(key="sw_name").set_value(name).run()
    assert not at.exception, at.exception
    return at


def _wait_for_job(at: AppTest, timeout: float = 240) -> None:
    job = at.session_state["sweep_job"]
    assert job.wait(timeout), "the sweep did not finish in time"
    at.run()   # the page notices the end and reruns to refresh the list
    assert not at.exception, at.exception


def test_sweep_runs_to_completion_and_is_stored(env):
    at = AppTest.from_file("../app.py", default_timeout=180).run()   # the app: its button opens Heatmaps
    at.switch_page("pages/sweeps.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="sw_models").value == ["tiny-a", "tiny-b"]
    assert "Choose at least one perturbation to start a sweep." in [c.value for c in at.caption]
    _configure(at, "app-sweep")
    # 3 specs (TUQ once; DRQ n_words=1 and 2, twice each) x 5 examples x 2 models: 5 x 2 x (1 + 1 + 2 + 2)
    assert any("3 perturbation spec(s) × 5 examples × 2 model(s): 60 result rows" in c.value for c in at.caption)

    at.button(key="sw_start").click().run()
    assert not at.exception, at.exception
    _wait_for_job(at)
    job = at.session_state["sweep_job"]
    assert job.error is None and job.result.status == "done"
    assert any("Sweep 'app-sweep' finished: 60/60 result rows" in s.value.replace("\\", "") for s in at.success)

    # Stored: the rows, the configuration, and the page's list of sweeps.
    conn = sqlite3.connect(env)
    assert conn.execute("SELECT COUNT(*) FROM clean_results").fetchone()[0] == 10
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 50
    assert conn.execute("SELECT perturbation, params_json, COUNT(*) FROM results GROUP BY 1, 2 ORDER BY 1, 2"
                        ).fetchall() == [("DRQ", '{"n_words":1}', 20), ("DRQ", '{"n_words":2}', 20),
                                         ("TUQ", "{}", 10)]
    [sweep] = sweep_cells.list_sweeps(env)
    assert (sweep["name"], sweep["status"], sweep["done_units"], sweep["total_units"]) == ("app-sweep", "done", 60, 60)
    assert sweep["models"] == ["tiny-a", "tiny-b"]
    assert sweep["perturbations"] == ["TUQ", "DRQ(n_words=1)", "DRQ(n_words=2)"]
    assert (sweep["config"]["sample"], sweep["config"]["seed"], sweep["config"]["repeats"]) == (5, 3, 2)
    usable = [e for e in demo_dataset("en").examples if e.answers and not e.is_impossible]
    expected_ids = [e.id for e in sample_examples(usable, 5, 3)]
    assert [r[0] for r in conn.execute(
        "SELECT e.id FROM sweep_examples s JOIN examples e ON e.hash = s.example_hash ORDER BY s.position")] \
        == expected_ids
    # TUQ upper-cases each question exactly
    assert sorted(r[0] for r in conn.execute(
        "SELECT DISTINCT variant_question FROM result_rows WHERE perturbation = 'TUQ'")) == \
        sorted(e.question.upper() for e in demo_dataset("en").examples if e.id in expected_ids)
    listed = at.dataframe[0].value
    assert list(listed["name"]) == ["app-sweep"] and list(listed["status"]) == ["done"]
    assert list(listed["rows done"]) == [60] and list(listed["done %"]) == [100.0]
    assert any("Every stored sweep is complete" in c.value for c in at.caption)

    # Issue 53: the finished sweep offers a button to Heatmaps (it said so in plain text), opening this sweep
    at.button(key="sw_open_heatmaps").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Heatmaps"
    assert at.selectbox(key="hm_sweep").value == sweep["id"]
    assert at.selectbox(key="hm_db").value == str(env)


def test_cancel_then_resume(env, monkeypatch):
    """Predictions wait on a gate, so Cancel lands while the first chunk is in flight: the sweep stops
    after that chunk, is listed as cancelled, and Resume finishes it without redoing stored rows."""
    from core.qa.engine import QAEngine

    gate = threading.Event()
    entered = threading.Event()  # the sweep thread has reached its first prediction
    original = QAEngine.predict

    def gated(self, *args, **kwargs):
        entered.set()
        assert gate.wait(120), "the test never opened the gate"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QAEngine, "predict", gated)
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    _configure(at, "to-cancel")
    at.button(key="sw_start").click().run()
    assert not at.exception, at.exception
    job = at.session_state["sweep_job"]
    assert job.running
    assert any("Preparing sweep" in p.proto.text or "result rows" in p.proto.text
               for p in at.get("progress"))
    # Cancel only once the first chunk is in flight: before that, cancelling stops at 0 rows.
    assert entered.wait(120), "the sweep never reached its first prediction"
    at.button(key="sw_cancel").click().run()
    assert job.cancel_requested
    assert any("Cancelling" in i.value for i in at.info)
    gate.set()
    _wait_for_job(at)
    assert job.result.status == "cancelled" and 0 < job.result.done_units < 60
    stopped_at = job.result.done_units
    assert any("was cancelled" in s.value for s in at.success)
    assert list(at.dataframe[0].value["status"]) == ["cancelled"]

    assert at.selectbox(key="sw_resume_pick").value == "to-cancel"
    at.button(key="sw_resume").click().run()
    assert not at.exception, at.exception
    _wait_for_job(at)
    resumed = at.session_state["sweep_job"]
    assert resumed is not job and resumed.result.status == "done"
    assert (resumed.result.resumed_units, resumed.result.done_units) == (stopped_at, 60)
    conn = sqlite3.connect(env)
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 50
    assert conn.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0] == 1
    assert sweep_cells.list_sweeps(env)[0]["status"] == "done"


def test_page_without_database_or_models(tmp_path, monkeypatch):
    missing = tmp_path / "models.toml"
    missing.write_text('[[model]]\nname = "absent"\npath = "/no/such/folder"\nlanguages = ["en"]\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(missing))
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "none.sqlite"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    assert any("No QA model is installed" in w.value for w in at.warning)
    assert at.button(key="sw_start").disabled
    assert any("No sweep database" in i.value for i in at.info)
    assert not (tmp_path / "none.sqlite").exists()


def test_sample_size_returns_to_the_default_when_the_data_set_changes(env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert at.selectbox(key="sw_dataset").value == "demo.en"
    assert at.number_input(key="sw_sample").value == 12          # min(100, the 12 demo questions)
    at.number_input(key="sw_sample").set_value(5).run()
    at.selectbox(key="sw_dataset").set_value("demo.de").run()
    assert not at.exception, at.exception
    n_de = at.number_input(key="sw_sample").max
    assert at.number_input(key="sw_sample").value == min(100, n_de) != 5
    at.number_input(key="sw_sample").set_value(3).run()          # kept while the data set stays
    assert at.number_input(key="sw_sample").value == 3


def test_sweep_job_reports_errors_and_results(tmp_path):
    """SweepJob: a run_sweep error becomes a message (the thread never dies silently); a good run
    fills done/total and result."""
    from core.datasets import Dataset
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.job import SweepJob
    from core.types import Answer, Prediction, QAExample, Span

    class Echo:
        fingerprint = "echo-1"

        def predict(self, questions, contexts, **kw):
            return [Prediction([Span(c.split()[0], 0, len(c.split()[0]), 1.0)]) for c in contexts]

    toy = Dataset("toy", "en", [QAExample("q1", "Who?", "Anna came.", (Answer("Anna", 0),)),
                                QAExample("q2", "What came?", "Bob came.", (Answer("Bob", 0),))])
    bad = SweepJob(SweepConfig("toy", ["NOPE"], ["echo"]), {"echo": Echo()}, tmp_path / "s.sqlite", dataset=toy)
    assert not bad.running and bad.fraction == 0.0
    assert bad.start().wait(30) and not bad.running
    assert bad.result is None and bad.error.startswith("SweepError: unknown perturbation id 'NOPE'")
    with pytest.raises(RuntimeError, match="already started"):
        bad.start()
    good = SweepJob(SweepConfig("toy", ["TUQ", "drop_qmark_Q"], ["echo"], name="ok"), {"echo": Echo()},
                    tmp_path / "s.sqlite", dataset=toy).start()
    assert good.wait(30) and good.error is None
    assert (good.result.status, good.done, good.total, good.fraction) == ("done", 6, 6, 1.0)
    assert sweep_cells.cells(tmp_path / "s.sqlite", "ok")[0].f1 == 100.0   # the first word is the answer

    # Left unnamed, the job learns the stored sweep's name as it starts (the page compares it with
    # the stored sweeps to tell its own running sweep from one running elsewhere).
    seen = []

    class Watching(SweepJob):
        def _progress(self, done, total):
            seen.append(self.name)
            super()._progress(done, total)

    unnamed = Watching(SweepConfig("toy", ["TUQ"], ["echo"]), {"echo": Echo()}, tmp_path / "s.sqlite",
                       dataset=toy)
    assert unnamed.name is None
    assert unnamed.start().wait(30) and unnamed.error is None
    assert unnamed.name == unnamed.result.name and unnamed.name.startswith("toy-") and len(unnamed.name) == 12
    assert seen and set(seen) == {unnamed.name}   # known from the first progress report on


def test_typed_specs_chain_and_range_run_in_a_sweep(env):
    """The command line's spec language on the page: a chain (TUQ then DPQ) and a range (DCRQ:n_chars=1..2)
    typed in the text field run as their own specs; a file: spec, a model folder and an unknown id are
    refused with the reason, and the sweep cannot start with them."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.number_input(key="sw_sample").set_value(3)
    for bad, reason in [("file:/etc/passwd", "challenge files are chosen above"),
                        ("ReplaceRQ:mlm_model=/srv/bert", "only the command line may set it"),
                        ("TUQ+nosuch_Q", "nosuch_Q"), ("DCRQ:n_chars=0", "n_chars")]:
        at.text_input(key="sw_spec_text").set_value(bad).run()
        assert not at.exception, at.exception
        assert any(reason in e.value.replace("\\", "") for e in at.error), (bad, [e.value for e in at.error])
        assert at.button(key="sw_start").disabled, bad
    at.text_input(key="sw_spec_text").set_value("TUQ+DPQ, DCRQ:n_chars=1..2").run()
    at.text_input(key="sw_name").set_value("typed").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # 3 specs: TUQ+DPQ once, DCRQ n_chars=1 and 2 three times each (default repeats): 3 x 2 x (1 + 1 + 3 + 3)
    assert any("3 perturbation spec(s) × 3 examples × 2 model(s): 48 result rows" in c.value for c in at.caption)
    at.button(key="sw_start").click().run()
    _wait_for_job(at)
    conn = sqlite3.connect(env)
    assert conn.execute("SELECT perturbation, params_json, COUNT(*) FROM results GROUP BY 1, 2 ORDER BY 1, 2"
                        ).fetchall() == [("DCRQ", '{"n_chars":1,"n_words":1}', 18),
                                         ("DCRQ", '{"n_chars":2,"n_words":1}', 18), ("TUQ+DPQ", "{}", 6)]
    # the chain upper-cases, then drops the punctuation: no "?" is left in any of its questions
    chained = [r[0] for r in conn.execute("SELECT variant_question FROM result_rows WHERE perturbation = 'TUQ+DPQ'")]
    assert chained and all(q == q.upper() and "?" not in q for q in chained)


def test_a_reloaded_page_follows_its_sweep_still_running_on_this_server(env, monkeypatch):
    """A reload starts a new session: the sweep started before it still runs on this server's thread.
    The new page says so (not "in the CLI or another browser tab"), and Follow it here brings back
    its progress bar and Cancel."""
    from core.qa.engine import QAEngine

    gate = threading.Event()
    entered = threading.Event()
    original = QAEngine.predict

    def gated(self, *args, **kwargs):
        entered.set()
        assert gate.wait(120), "the test never opened the gate"
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QAEngine, "predict", gated)
    first = AppTest.from_file(PAGE, default_timeout=180).run()
    _configure(first, "before-reload")
    first.button(key="sw_start").click().run()
    job = first.session_state["sweep_job"]
    try:
        assert entered.wait(120), "the sweep never reached its first prediction"
        reloaded = AppTest.from_file(PAGE, default_timeout=180).run()   # a new session: the reload
        assert not reloaded.exception, reloaded.exception
        assert reloaded.selectbox(key="sw_resume_pick").value == "before-reload"
        assert not any("another browser tab" in w.value for w in reloaded.warning)
        assert any("running on this server" in i.value for i in reloaded.info)
        reloaded.button(key="sw_follow").click().run()
        assert not reloaded.exception, reloaded.exception
        assert reloaded.session_state["sweep_job"] is job
        assert any("before-reload" in p.proto.text.replace("\\", "") for p in reloaded.get("progress"))
        reloaded.button(key="sw_cancel").click().run()
        assert job.cancel_requested
    finally:
        gate.set()
        assert job.wait(120)
    from core.sweeps.running.job import running_on_this_server
    assert running_on_this_server(env, "before-reload") is None   # a finished job is forgotten


def _preparing_ray_job():
    from types import SimpleNamespace

    from components.job_progress import running_job
    from core.sweeps.running.job import RayOptions

    job = SimpleNamespace(result=None, name="on-ray", config=SimpleNamespace(name="on-ray", dataset="demo.en"),
                          phase="sweep", total=0, done=0, fraction=0.0, ray=RayOptions(), cancel_requested=False)
    running_job(job, "sw")


def test_a_ray_sweep_being_prepared_says_ray_is_starting():
    """Before its first row a Ray sweep starts Ray and loads the models in its workers (13-52 s on
    this machine): the bar says so, not only 'making variants'."""
    at = AppTest.from_function(_preparing_ray_job, default_timeout=60).run()
    assert not at.exception, at.exception
    [bar] = at.get("progress")
    assert "starting Ray and loading the models in its workers" in bar.proto.text.replace("\\", "")


def test_repeats_and_workers_over_the_budget_say_why_and_keep_start_disabled(env, monkeypatch):
    """Issue 57: the boxes only turned red at the budget; now the page says the limit and the
    server setting that sets it, and Start stays disabled until the value is within it."""
    monkeypatch.delenv("QAX_MAX_REPEATS", raising=False)
    monkeypatch.setenv("QAX_MAX_RAY_WORKERS", "3")
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.multiselect(key="sw_fam_case").set_value(["TUQ"]).run()
    assert not at.button(key="sw_start").disabled
    at.number_input(key="sw_repeats").set_value(150).run()
    assert not at.exception, at.exception
    assert [e.value.replace("\\", "") for e in at.error] == [
        "the sweep asks for 150 repeats; the limit is 100 (the server's QAX_MAX_REPEATS)"]
    assert at.button(key="sw_start").disabled
    at.number_input(key="sw_repeats").set_value(100).run()
    assert not at.error and not at.button(key="sw_start").disabled

    at.radio(key="sw_where").set_value("Ray on this machine").run()
    at.number_input(key="sw_workers").set_value(4).run()
    assert [e.value.replace("\\", "") for e in at.error] == [
        "the sweep asks for 4 workers; the limit is 3 (the server's QAX_MAX_RAY_WORKERS)"]
    assert at.button(key="sw_start").disabled
    at.number_input(key="sw_workers").set_value(3).run()
    assert not at.error and not at.button(key="sw_start").disabled


@pytest.mark.needs_data("natural/heysquad/dev-common-original-1002.json")
def test_perturbations_that_cannot_run_on_the_planned_questions_are_named_before_the_sweep(env):
    """Before Start: a perturbation for another language, or natural noise whose set holds none of
    the planned ids, is named with the count it runs on and why; one that runs everywhere is not."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.multiselect(key="sw_fam_case").set_value(["TUQ"])
    at.multiselect(key="sw_fam_natural").set_value(["natural_Q"])
    at.multiselect(key="sw_fam_character").set_value(["RUQ"]).run()
    assert not at.exception, at.exception
    warned = shown(" ".join(w.value for w in at.warning))
    assert ("**RUQ** can run on none of the 12 planned questions (the first it cannot: RUQ replaces umlauts and ß, "
            "and this question has none)") in warned   # told from the questions' text: an empty column
    assert ("**natural_Q(source=asr_human)** can run on none of the 12 planned questions (the first it cannot: "
            "HeySQuAD has no natural version of question 'demo-en-01-q1')") in warned
    assert "TUQ" not in warned
    at.selectbox(key="sw_dataset").set_value("demo.de").run()
    at.multiselect(key="sw_fam_keyboard").set_value(["misspell_Q", "keyboard_Q"]).run()
    warned = shown(" ".join(w.value for w in at.warning))
    n_de = at.number_input(key="sw_sample").value
    assert (f"**misspell_Q(p=1.0)** can run on none of the {n_de} planned questions (the first it cannot: "
            f"misspell_Q supports languages en, not 'de')") in warned
    assert "keyboard_Q" not in warned and "TUQ" not in warned
    assert at.button(key="sw_start").disabled is False   # said, not refused: the others still run
