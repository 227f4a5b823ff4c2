"""AppTest: the speech trial's "Synthetic against natural noise" section, with no trial, with a
trial that has no recording, and with a recorded trial (the comparison run with the tiny model;
marked slow: it speaks and transcribes)."""
from __future__ import annotations

import pandas as pd
import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest

from core.collect import flip_agreement as agreement
from core.collect import trials
from core.datasets import demo_dataset


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))


def trial_page() -> AppTest:
    return AppTest.from_file("../pages/speech_trial.py", default_timeout=240).run()


def section_text(at: AppTest) -> str:
    return "\n".join(shown(m.value) for m in at.markdown)


def test_without_a_trial_the_section_explains_what_to_record(tiny_env):
    at = trial_page()
    assert not at.exception
    assert [h.value for h in at.subheader if h.value == "Synthetic against natural noise"]
    text = section_text(at)
    assert "start a trial above" in text and "What to record." in text and "about **100**" in text
    hw = agreement.kappa_halfwidth(100, 0.2)
    assert f"±{hw:.2f} with 100" in text                               # ±0.22, computed, not typed
    assert any("No recordings of real speakers ship with the app" in c.value for c in at.caption)
    assert "agree_run" not in [b.key for b in at.button]


def test_a_trial_without_recordings_gets_the_explanation(tiny_env):
    trials.create_trial(trials.Speaker("Ana"), demo_dataset("en"), 3, seed=0, trial_id="ana")
    at = trial_page()
    at.radio(key="trial_mode").set_value("Resume a trial").run()
    assert not at.exception
    assert "this trial has no transcribed recording yet" in section_text(at)
    assert "agree_run" not in [b.key for b in at.button]


@pytest.mark.slow
def test_a_recorded_trial_shows_flips_kappa_and_the_per_question_table(tiny_env, tmp_path):
    from trial_fixture import demo_trial

    trial = demo_trial(trials.trials_root(), n=4)
    at = trial_page()
    at.radio(key="trial_mode").set_value("Resume a trial").run()
    assert at.multiselect(key="agree_asr").value == ["pocketsphinx"]
    at.multiselect(key="agree_models").set_value(["tiny-a"]).run()
    # one condition left (the recordings alone) is nothing to compare: said, and the button waits
    at.multiselect(key="agree_tts").set_value([])
    at.number_input(key="agree_p").set_value(0.0).run()
    assert at.button(key="agree_run").disabled
    assert any("at least two conditions" in c.value for c in at.caption)
    at.multiselect(key="agree_tts").set_value(["pocketsphinx"])
    at.number_input(key="agree_p").set_value(0.25).run()
    assert not at.button(key="agree_run").disabled
    at.button(key="agree_run").click().run()
    assert not at.exception, at.exception
    result = at.session_state[agreement_key()][trial.id]
    conditions = ["natural:pocketsphinx", "tts:flite:kal16>pocketsphinx", "keyboard:p=0.25"]
    assert result.conditions == conditions and result.models == ["tiny-a"]
    frames = [df.value for df in at.dataframe]
    rates = next(df for df in frames if "flip %" in df.columns)
    matrix = next(df for df in frames if list(df.columns) == conditions)
    assert list(rates["condition"]) == conditions and set(rates["questions"]) == {4}
    assert list(matrix.index) == conditions
    assert [matrix.loc[c, c] for c in conditions] == ["1", "1", "1"]
    for row in result.kappas:                                           # each cell is its row's label
        assert matrix.loc[row["a"], row["b"]] == agreement.kappa_label(row, short=True)
    per_question = next(df for df in frames if "question" in df.columns)
    assert list(per_question["question"]) == [ex.question for ex in trial.examples]
    natural = {s.example.question: s.transcripts["pocketsphinx"].text for s in trial.states()}
    assert list(per_question["natural:pocketsphinx question"]) == [natural[q] for q in per_question["question"]]
    # the recogniser's words as measured: flite slt read them (the "speaker"), flite kal16 spoke them
    # (TTS -> ASR), PocketSphinx 5.1.1 heard both
    keeper = natural["Who was the best-known keeper of the lighthouse?"]
    assert keeper == "whew is the best known keeper of the light towns"
    synthetic = dict(zip(per_question["question"], per_question["tts:flite:kal16>pocketsphinx question"]))
    assert synthetic["Who founded the Greyford Clock Museum?"] == "who founded the preferred clock museum"
    assert isinstance(per_question, pd.DataFrame) and per_question["natural:pocketsphinx flip"].dtype == bool
    labels = [b.label for b in at.get("download_button")][:3]
    assert labels == ["⬇ Kappa CSV", "⬇ Per-question CSV", "⬇ All (JSON)"]


def agreement_key() -> str:
    from components.trial_agreement import RESULTS

    return RESULTS
