"""AppTests of a live demo's state (issue #26): nothing resets, leaks between pages or goes stale.

Each test reproduces one reported bug on the tiny test models (tests/tiny_model.py) and the
bundled demo sets; each failed before the fix it guards.
"""
from __future__ import annotations

import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest

APP = "../app.py"


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry, tmp_path):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QAX_TRIALS_DIR", str(tmp_path / "trials"))


def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    return at


def go(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def html(at) -> str:
    return shown("\n".join(m.value for m in at.markdown))


# ------------------------------------------------------------------------------------------- bug 1

def test_ask_context_switch_keeps_dataset_item_and_question(tiny_env):
    at = app()
    at.selectbox(key="ask_dataset").set_value("demo.de").run()
    at.number_input(key="ask_item").set_value(2).run()
    question = at.text_area(key="ask_question").value
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("Paris ist die Hauptstadt Frankreichs.").run()
    at.radio(key="ask_source").set_value("Dataset item").run()
    assert not at.exception
    assert at.selectbox(key="ask_dataset").value == "demo.de"
    assert at.number_input(key="ask_item").value == 2
    assert at.text_area(key="ask_question").value == question
    # and the pasted context is still there when going back to it
    at.radio(key="ask_source").set_value("Paste a context").run()
    assert at.text_area(key="ask_context").value == "Paris ist die Hauptstadt Frankreichs."


def test_ask_keeps_its_inputs_across_pages(tiny_env):
    at = app()
    at.selectbox(key="ask_dataset").set_value("demo.de").run()
    at.number_input(key="ask_item").set_value(3).run()
    at.text_area(key="ask_question").input("Wer hat das gebaut?").run()
    go(at, "sweeps")
    go(at, "ask")
    assert at.selectbox(key="ask_dataset").value == "demo.de"
    assert at.number_input(key="ask_item").value == 3
    assert at.text_area(key="ask_question").value == "Wer hat das gebaut?"


# ------------------------------------------------------------------------------------------- bug 2

def test_ask_marks_stale_answers_when_the_question_changes(tiny_env):
    at = app()
    at.button(key="ask_go").click().run()
    assert not [i for i in at.info if "changed since these answers" in i.value]
    at.text_area(key="ask_question").input("Something else entirely?").run()
    assert [i for i in at.info if "changed since these answers" in i.value]
    at.button(key="ask_go").click().run()
    assert not [i for i in at.info if "changed since these answers" in i.value]


def test_ask_scores_only_the_items_own_question_or_a_typed_gold(tiny_env):
    at = app()
    own = at.text_area(key="ask_question").value
    at.text_area(key="ask_question").input(own.lower().rstrip("?")).run()   # still its own question
    at.button(key="ask_go").click().run()
    assert any("EM" in c.value and "ms" in c.value for c in at.caption)
    at.text_area(key="ask_question").input("What year was it?").run()
    at.button(key="ask_go").click().run()
    answer_lines = [c.value for c in at.caption if " ms " in c.value]
    assert answer_lines and not [c for c in answer_lines if "EM" in c]
    assert any("Not scored" in c.value for c in at.caption)
    # the user's own gold answer: the answer is scored against it
    answer = next(t.value for t in at.text if t.value.startswith("Answer: "))[len("Answer: "):]
    at.text_input(key="ask_gold").input(answer).run()
    at.button(key="ask_go").click().run()
    assert any("EM 100" in c.value and "F1 100.0" in c.value for c in at.caption)


def test_ask_shows_the_passage_before_answer(tiny_env):
    at = app()
    at.number_input(key="ask_item").set_value(1).run()
    passages = [m.value for m in at.markdown if "<div class=\"qax-context" in m.value]
    assert len(passages) == 1 and "qax-span" not in passages[0]
    at.button(key="ask_go").click().run()
    passages = [m.value for m in at.markdown if "<div class=\"qax-context" in m.value]
    assert len(passages) == 1 and "qax-span" in passages[0]   # the answers' highlights replace it


# ------------------------------------------------------------------------------------------- bug 3

def test_each_page_keeps_its_own_model_selection(tiny_env):
    at = app()
    assert at.multiselect(key="ask_models").value == ["tiny-a", "tiny-b"]
    go(at, "sweeps")
    at.multiselect(key="sw_models").set_value(["tiny-b"]).run()
    go(at, "beat_the_ai")
    assert at.multiselect(key="beat_models").value == ["tiny-a", "tiny-b"]
    go(at, "variants")
    assert at.multiselect(key="var_models").value == ["tiny-a", "tiny-b"]
    at.multiselect(key="var_models").set_value(["tiny-a"]).run()
    go(at, "ask")
    assert at.multiselect(key="ask_models").value == ["tiny-a", "tiny-b"]
    go(at, "sweeps")
    assert at.multiselect(key="sw_models").value == ["tiny-b"]
    go(at, "variants")
    assert at.multiselect(key="var_models").value == ["tiny-a"]


# ------------------------------------------------------------------------------------ perturb this

def test_perturb_this_question_opens_variants_on_the_same_item_and_question(tiny_env):
    at = app()
    at.selectbox(key="ask_dataset").set_value("demo.de").run()
    at.number_input(key="ask_item").set_value(2).run()
    at.text_area(key="ask_question").input("Wer hat es wirklich gebaut?").run()
    at.button(key="ask_perturb").click().run()
    assert not at.exception
    assert at.selectbox(key="var_dataset").value == "demo.de"
    assert at.number_input(key="var_item").value == 2
    assert at.text_area(key="var_question").value == "Wer hat es wirklich gebaut?"
