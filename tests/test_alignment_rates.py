"""How a generative reader's answers were found in the passage, per perturbation, from a stored
sweep (core.sweeps.analysis.alignment): the real reader (tidying, alignment, scoring) over scripted
replies, stored by the real sweep runner and read back by StoredSweep. Hand-checked: the clean
replies are all copied from the passage (5 exact); under TUQ (the questions upper-cased) two are
exact, one has a typo ("Balthasar Neuman": 96.97 similar, approximate), one names a city not in the
passage ("Munich") and one is empty."""
from __future__ import annotations

from test_app_heatmaps import TOY

from core.qa.generative.prompts import GenerationSettings
from core.qa.generative.reader import GenerativeReader
from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep

REPLIES = {
    "What is the capital of France?": "Paris", "When was the tower built?": "1889",
    "Which river flows through London?": "Thames", "How many people live in Berlin?": "three million",
    "Who built the palace in Würzburg?": "Answer: Balthasar Neumann.",
    "WHAT IS THE CAPITAL OF FRANCE?": "\"Paris\"", "WHEN WAS THE TOWER BUILT?": "1889",
    "WHICH RIVER FLOWS THROUGH LONDON?": "", "HOW MANY PEOPLE LIVE IN BERLIN?": "Munich",
    "WHO BUILT THE PALACE IN WÜRZBURG?": "Balthasar Neuman",
}


class ScriptedReplies:
    """A runtime that replies to each question with a fixed text (the LLM's part, scripted)."""

    name = "scripted"

    def identity(self) -> str:
        return "scripted-v1"

    def complete(self, messages, settings) -> str:
        prompt = messages[-1]["content"]
        return next(reply for question, reply in REPLIES.items() if question in prompt)


def test_rates_per_spec_from_the_stored_answers(tmp_path):
    db = tmp_path / "s.sqlite"
    reader = GenerativeReader(ScriptedReplies(), GenerationSettings(), languages=["en"])
    run = run_sweep(SweepConfig("toy", ["TUQ"], ["llm"], name="llm-align"), {"llm": reader}, db, dataset=TOY)
    assert run.status == "done"
    rows = StoredSweep(db, "llm-align").alignment_rates(["llm"])
    by_spec = {r["spec"]: r for r in rows}
    assert set(by_spec) == {"clean", "TUQ"}
    clean = by_spec["clean"]
    assert (clean["N"], clean["exact %"], clean["not in the passage %"]) == (5, 100.0, 0.0)
    tuq = by_spec["TUQ"]
    assert (tuq["N"], tuq["exact %"], tuq["approximate %"], tuq["not in the passage %"], tuq["no answer %"]) == (
        5, 40.0, 20.0, 20.0, 20.0)


def test_heatmaps_shows_the_rates_in_a_tab_for_a_sweep_with_a_generative_reader(tmp_path, monkeypatch):
    from rendered import open_tab
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "s.sqlite"
    reader = GenerativeReader(ScriptedReplies(), GenerationSettings(), languages=["en"])
    run_sweep(SweepConfig("toy", ["TUQ"], ["llm"], name="llm-align"), {"llm": reader}, db, dataset=TOY)
    registry = tmp_path / "models.toml"
    registry.write_text('[[model]]\nname = "llm"\nkind = "generative"\nlanguages = ["en"]\n'
                        f'path = "{tmp_path}"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(registry))
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=120).run()
    assert not at.exception, at.exception
    assert "LLM answers" in [t.label for t in at.tabs]
    at = open_tab(at, "LLM answers")
    table = next(df.value for df in at.dataframe if "not in the passage %" in df.value.columns)
    assert table.set_index("spec").loc["TUQ", ["exact %", "approximate %", "not in the passage %"]].tolist() == [
        40.0, 20.0, 20.0]
    assert "⬇ CSV" in [b.label for b in at.get("download_button")]


def test_the_report_has_the_llm_answers_and_compares_every_model_with_the_first(tmp_path, monkeypatch):
    """The LLM researcher's audit (2026-11-29): the report left out the LLM answers table and its
    Model vs model compared only the first two models, so an LLM listed third was never compared."""
    from test_app_heatmaps import ANSWERS_A, ANSWERS_B, LookupEngine

    from core.reports.content import collect

    db = tmp_path / "s.sqlite"
    reader = GenerativeReader(ScriptedReplies(), GenerationSettings(), languages=["en"])
    engines = {"fake-a": LookupEngine(ANSWERS_A, "a1"), "fake-b": LookupEngine(ANSWERS_B, "b1"), "llm": reader}
    run_sweep(SweepConfig("toy", ["TUQ"], list(engines), name="three"), engines, db, dataset=TOY)
    registry = tmp_path / "models.toml"
    registry.write_text('[[model]]\nname = "llm"\nkind = "generative"\nlanguages = ["en"]\n'
                        f'path = "{tmp_path}"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(registry))
    rep = collect(db, "three")
    vs = next(s for s in rep.sections if s.title == "Model vs model")
    assert [t.title for t in vs.tables] == ["fake-b − fake-a", "llm − fake-a"]
    llm = next(s for s in rep.sections if s.title == "LLM answers")
    [table] = llm.tables
    tuq = next(r for r in table.rows if r["spec"] == "TUQ")
    assert (tuq["model"], tuq["exact %"], tuq["approximate %"], tuq["not in the passage %"]) == (
        "llm", 40.0, 20.0, 20.0)
