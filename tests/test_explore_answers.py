"""core.explore.answers.answer_all with the tiny model (tests/tiny_model.py) and a model that
cannot load: the answers come in the models' order, each timed and scored; a failing model is
named with its reason and does not hide the others; an input no model can answer is said once."""
from __future__ import annotations

import pytest

from core.explore.answers import answer_all, answer_rows, ask_export, load_engines
from core.qa import registry
from core.qa.engine import EngineSettings

CONTEXT = "paris is the capital of france . berlin is the capital of germany ."


@pytest.fixture
def engine_for(monkeypatch, tiny_registry):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return lambda name: registry.load_engine(name, EngineSettings(threads=1), path=tiny_registry)


def test_every_model_answers_and_a_broken_one_is_named(engine_for):
    direct = engine_for("tiny-a").answer("what is the capital of france ?", CONTEXT, n_best=3)
    got = answer_all(["tiny-a", "hub-model", "tiny-b"], engine_for, "what is the capital of france ?", CONTEXT,
                     n_best=3, golds=[direct.best.text])
    assert [a.model for a in got.answers] == ["tiny-a", "tiny-b"]
    assert [len(got.failures), got.failures[0].split(":")[0]] == [1, "hub-model"]
    for a in got.answers:   # the same spans as the engine gives directly, timed, scored against gold
        assert [(s.text, s.start, s.end) for s in a.prediction.nbest] == \
            [(s.text, s.start, s.end) for s in direct.nbest]
        assert CONTEXT[a.best.start:a.best.end] == a.best.text
        assert a.seconds > 0 and (a.em, a.f1) == (1.0, 1.0)
    rows = answer_rows(got.answers)
    assert [(r["model"], r["EM"], r["F1"]) for r in rows] == [("tiny-a", 100.0, 100.0), ("tiny-b", 100.0, 100.0)]
    export = ask_export(got.answers, {"question": "q"})
    assert export["question"] == "q" and len(export["nbest"]) == 2 * len(direct.nbest)


def test_unscored_without_gold_and_stop_at_failure(engine_for):
    got = answer_all(["tiny-a"], engine_for, "what is the capital of germany ?", CONTEXT)
    assert got.answers[0].em is None and "EM" not in answer_rows(got.answers)[0]
    first = answer_all(["hub-model", "tiny-a"], engine_for, "what ?", CONTEXT, stop_at_failure=True)
    assert first.answers == [] and len(first.failures) == 1


def test_an_input_no_model_can_answer_is_said_once(engine_for):
    got = answer_all(["tiny-a", "tiny-b"], engine_for, "   ", CONTEXT)
    assert got.answers == [] and got.failures == ["The question is empty."]


def test_load_engines_keeps_the_ones_that_load(engine_for):
    engines, failures = load_engines(["tiny-a", "hub-model"], engine_for)
    assert list(engines) == ["tiny-a"] and failures[0].startswith("hub-model: ")
