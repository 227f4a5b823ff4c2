"""Ask's pasted context is refused at input, with the limit in the message (issue 57, item 4): the
box takes at most one character more than core.qa.engine.MAX_CONTEXT_CHARS (the browser drops a
longer paste, so it never reaches the server; Streamlit cuts a longer value to max_chars), says the
limit under it, and a value over the limit that reaches the page is refused with a message before
the language guess, the models or anything else runs on it."""
import pytest
from streamlit.testing.v1 import AppTest

from core.qa.engine import MAX_CONTEXT_CHARS

PASTE = "paris is the capital of france . " * (MAX_CONTEXT_CHARS // 33 + 10)


@pytest.fixture
def pasting(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    assert not at.exception, at.exception
    return at


def test_the_box_refuses_a_longer_paste_and_says_its_limit(pasting):
    at = pasting
    assert MAX_CONTEXT_CHARS == 200_000 and len(PASTE) > MAX_CONTEXT_CHARS
    box = at.text_area(key="ask_context")
    assert box.max_chars == MAX_CONTEXT_CHARS + 1
    assert any("At most 200,000 characters" in c.value for c in at.caption)
    box.input(PASTE).run()   # as the browser does: a value over max_chars is not taken
    assert at.text_area(key="ask_context").value == ""
    at.text_area(key="ask_context").input(PASTE[:MAX_CONTEXT_CHARS]).run()   # at the limit: taken
    assert len(at.text_area(key="ask_context").value) == MAX_CONTEXT_CHARS
    assert not at.error


def test_a_longer_context_that_arrives_anyway_is_refused_before_any_work(pasting, monkeypatch):
    import core.explore.answers as answers
    import core.langid as langid

    at = pasting
    looked_at, guess, answer_all = [], langid.guess_language, answers.answer_all

    def guessing(text, *a, **k):
        looked_at.append(len(text))
        return guess(text, *a, **k)

    def answering(models, engine_for, question, context, *a, **k):
        looked_at.append(len(context))
        return answer_all(models, engine_for, question, context, *a, **k)

    monkeypatch.setattr(langid, "guess_language", guessing)
    monkeypatch.setattr(answers, "answer_all", answering)
    at.text_area(key="ask_context").set_value(PASTE).run()   # past the box: a crafted websocket message
    at.text_area(key="ask_question").input("what is the capital of france ?").run()
    assert not at.exception, at.exception
    refused = [e.value for e in at.error if "limit" in e.value]
    assert refused == ["The context is longer than 200,000 characters, the limit: paste a shorter one."]
    at.button(key="ask_go").click().run()
    assert not at.exception, at.exception
    assert looked_at and max(looked_at) < 100   # the question, never the refused context


def test_variants_typed_context_has_the_same_limit(pasting):
    at = AppTest.from_file("../pages/variants.py", default_timeout=120).run()
    at.radio(key="var_source").set_value("Type a question and context").run()
    box = at.text_area(key="var_context")
    assert box.max_chars == MAX_CONTEXT_CHARS + 1
    assert any("At most 200,000 characters" in c.value for c in at.caption)
    box.set_value(PASTE).run()   # past the box
    assert not at.exception, at.exception
    assert [e.value for e in at.error if "limit" in e.value] == [
        "The context is longer than 200,000 characters, the limit: paste a shorter one."]
