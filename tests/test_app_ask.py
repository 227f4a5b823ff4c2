"""AppTest: the Ask page answers with every selected model and highlights spans."""
import pytest
from rendered import container_places, shown
from streamlit.testing.v1 import AppTest


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _html(at) -> str:
    """The pages' Markdown as a reader sees it (escapes undone)."""
    return shown("\n".join(m.value for m in at.markdown))


def test_ask_page_answers_with_two_models(tiny_env):
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    assert not at.exception
    assert at.multiselect(key="ask_models").value == ["tiny-a", "tiny-b"]
    assert at.text_area(key="ask_question").value  # prefilled from the demo item
    at.button(key="ask_go").click().run()
    assert not at.exception
    html = _html(at)
    assert html.count('class="qax-span"') >= 1
    assert "tiny-a" in html and "tiny-b" in html
    assert any("EM" in c.value and "ms" in c.value for c in at.caption)


def test_ask_page_escapes_pasted_context(tiny_env):
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("<script>alert(1)</script> paris is the capital of france .").run()
    at.text_area(key="ask_question").input("what is the capital of france ?").run()
    at.button(key="ask_go").click().run()
    context_html = [m.value for m in at.markdown if "qax-context" in m.value and "<div" in m.value]
    assert len(context_html) == 1
    assert "<script>" not in context_html[0] and "</script>" in shown(context_html[0])
    assert any(t.value.startswith("Answer: ") for t in at.text)


def test_ask_page_refuses_empty_question(tiny_env):
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.text_area(key="ask_question").input("   ").run()
    at.button(key="ask_go").click().run()
    assert any("question is empty" in e.value for e in at.error)


def test_app_says_plainly_when_no_model_is_installed(monkeypatch, tmp_path):
    reg = tmp_path / "models.toml"
    reg.write_text('[[model]]\nname = "absent"\npath = "/nonexistent/model"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert any("No QA model is installed" in w.value for w in at.warning)


def test_models_for_other_languages_are_offered_but_not_preselected(monkeypatch, tmp_path, tiny_registry):
    """A Chinese model is listed, marked against the item's language; the English models answer by default,
    except one whose registry entry says preselect = false."""
    from tiny_model import build_tiny_qa

    zh = tmp_path / "zh"
    build_tiny_qa(zh)
    reg = tmp_path / "models.toml"
    reg.write_text(tiny_registry.read_text() + f'\n[[model]]\nname = "tiny-zh"\npath = "{zh}"\nlanguages = ["zh"]\n'
                   f'\n[[model]]\nname = "tiny-slow"\npath = "{zh}"\npreselect = false\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    assert not at.exception
    picker = at.multiselect(key="ask_models")
    assert picker.value == ["tiny-a", "tiny-b"]
    assert "tiny-zh · zh only, not for en" in picker.options   # marked against the English item
    assert "tiny-slow" in picker.options  # preselect = false: offered, not chosen by default
    picker.set_value(["tiny-a", "tiny-zh"]).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("埃菲尔铁塔位于巴黎，建于1889年。").run()
    at.text_area(key="ask_question").input("埃菲尔铁塔建于哪一年？").run()
    notes = [c.value for c in at.caption if "will answer poorly" in c.value]
    assert notes == ["The context is Chinese; tiny-a was trained for English and will answer poorly."]
    at.button(key="ask_go").click().run()
    assert not at.exception and "tiny-zh" in _html(at)


def test_translation_model_is_chosen_among_server_folders_never_typed(tiny_env, tmp_path, monkeypatch):
    """The own-translation-model field is a picker of seq2seq folders under the configured roots;
    a folder elsewhere on the server is not offered, and there is no text box to name one."""
    import json

    inside, outside = tmp_path / "data" / "mt" / "opus-es-en", tmp_path / "elsewhere" / "opus-de-en"
    for folder in (inside, outside):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"is_encoder_decoder": True}))
    monkeypatch.setenv("QAX_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.selectbox(key="ask_qlang").set_value("es").run()
    assert not at.exception
    assert not [t for t in at.text_input if t.key == "ask_mt_model"]
    picker = at.selectbox(key="ask_mt_model")
    # offered by its folder's name: the server's folders stay hidden (QAX_SHOW_PATHS unset, issue 57)
    assert picker.options == ["none (Apertium only)", "opus-es-en"]


def test_ask_picker_marks_models_not_trained_for_the_passage_language_and_hub_models(tiny_env):
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    picker = at.multiselect(key="ask_models")
    assert picker.options == ["tiny-a", "tiny-b", "hub-model · needs internet"]
    at.selectbox(key="ask_dataset").set_value("demo.de").run()
    picker = at.multiselect(key="ask_models")
    assert picker.options == ["tiny-a · en only, not for de", "tiny-b · en only, not for de",
                              "hub-model · en only, not for de · needs internet"]
    assert picker.value == ["tiny-a", "tiny-b"]          # a hub model is never ticked for the user
    picker.set_value(["tiny-a", "hub-model"]).run()
    at.button(key="ask_go").click().run()
    assert not at.exception
    errors = shown(" ".join(e.value for e in at.error))
    assert "hub-model" in errors and "HF_HUB_OFFLINE is set" in errors   # offline: why, at once
    assert "tiny-a" in _html(at)                                          # the others still answer


def test_question_follows_the_item_when_the_browser_sends_the_old_question_back(tiny_env, monkeypatch):
    """A click that lands while the new item's run is still drawing carries the question box's old
    value, twice in a row on a loaded server; the box (and what the models answer) stays the new
    item's question. Once the browser has sent the new question back, or half a minute later, a
    question typed is the user's, even the old one."""
    from components import pickers

    at = AppTest.from_file("../app.py", default_timeout=120).run()
    first = at.text_area(key="ask_question").value
    at.number_input(key="ask_item").set_value(1).run()
    second = at.text_area(key="ask_question").value
    assert second and second != first
    for _ in range(2):   # the browser's stale value, sent with two clicks
        at.text_area(key="ask_question").set_value(first)
        at.button(key="ask_go").click().run()
        assert not at.exception
        assert at.text_area(key="ask_question").value == second
        assert at.session_state["ask_result"]["question"] == second
    at.run()   # the browser sends the new question back: in step from here on
    at.text_area(key="ask_question").input(first).run()   # typed on purpose, later: kept
    at.button(key="ask_go").click().run()
    assert at.text_area(key="ask_question").value == first
    assert at.session_state["ask_result"]["question"] == first

    at.number_input(key="ask_item").set_value(2).run()   # no run in step this time, but half a minute on
    third = at.text_area(key="ask_question").value
    now = pickers.time.monotonic()
    monkeypatch.setattr(pickers.time, "monotonic", lambda: now + pickers.STALE_S + 1)
    at.text_area(key="ask_question").input(first).run()
    at.button(key="ask_go").click().run()
    assert third != first and at.session_state["ask_result"]["question"] == first


def test_the_not_scored_note_points_to_the_gold_box_where_it_is(tiny_env):
    """Issue 53: the note said "Type a gold answer above" while the box is in Options, under the answers."""
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.text_area(key="ask_question").input("Who kept the light burning?").run()
    at.button(key="ask_go").click().run()
    assert not at.exception
    order = [(type(e).__name__, getattr(e, "label", None) or getattr(e, "value", None)) for e in at.main]
    note = next(i for i, (_, v) in enumerate(order) if isinstance(v, str) and v.startswith("Not scored"))
    assert "in Options, below the answers," in shown(order[note][1]) and "above" not in order[note][1]
    options = next(i for i, (_, v) in enumerate(order) if isinstance(v, str) and v.startswith("Options:"))
    assert options > note   # the box is where the note says
    at.text_input(key="ask_gold").input("Margaret Ellison").run()
    at.button(key="ask_go").click().run()
    assert "EM/F1 against the gold answer you typed." in [shown(c.value) for c in at.caption]


def test_the_answers_expanders_keep_their_place_on_the_run_after_the_answer(tiny_env):
    from core.qa import registry

    registry.engines().clear()   # the models load in the answering run, as on a fresh server
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    at.button(key="ask_go").click().run()
    answered = container_places(at)
    assert any("Counterfactual" in label for label in answered) and any("Repair" in label for label in answered)
    at.run()   # the next run: a widget touched in a panel, say
    assert container_places(at) == answered
