"""AppTest: Ask's attribution toggle colours the question and context per model, escaped."""
import re

import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_ask_attribution_toggle_colours_tokens_per_model(tiny_env):
    at = AppTest.from_file("../app.py", default_timeout=180).run()
    at.radio(key="ask_source").set_value("Paste a context").run()
    at.text_area(key="ask_context").input("<script>alert(1)</script> paris is the capital of france .").run()
    at.text_area(key="ask_question").input("what is the capital of <b>france</b> ?").run()
    at.button(key="ask_go").click().run()
    assert not [m for m in at.markdown if "qax-attr" in m.value]   # off until toggled
    at.toggle(key="ask_attr_toggle").set_value(True).run()
    assert not at.exception
    coloured = [m.value for m in at.markdown if 'class="qax-attr"' in m.value]
    assert len(coloured) == 4                       # question and context, for tiny-a and tiny-b
    assert all("<script>" not in h and "<b>" not in h for h in coloured)
    text = re.sub(r"<[^>]*>", "", coloured[1])     # the tags dropped: the context, escaped
    assert shown(text).startswith("<script>alert(1)</script> paris is")
    assert "rgba(" in coloured[0] and 'title="' in coloured[0]
