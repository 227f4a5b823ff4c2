"""AppTest with the shipped registry: the model pickers tick the best measured models of the item's
language (core.qa.registry.models_for_language) and follow the item until the user chooses."""
import pytest
from streamlit.testing.v1 import AppTest

from core.qa import registry

EN = ["mpnet-squad-v2", "e5-qa-multi", "minilm-squad-v2"]
DE = ["e5-qa-multi", "mpnet-mlqa-de", "minilm-mlqa-de"]
ZH = ["e5-qa-multi", "mpnet-cmrc-zh", "minilm-cmrc-zh-v2"]


@pytest.fixture(autouse=True)
def shipped(monkeypatch):
    monkeypatch.delenv("QAX_MODELS_TOML", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    installed = {m.name for m in registry.installed_models()}
    if not set(EN + DE + ZH) <= installed:
        pytest.skip("the shipped models' bases are not installed (./run.sh setup)")


def _buttons(at) -> list[str]:
    return [b.label for b in at.button]


@pytest.mark.parametrize("page,key", [("../app.py", "ask"), ("../pages/variants.py", "var")])
def test_the_ticked_models_follow_the_items_language_until_the_user_chooses(page, key):
    at = AppTest.from_file(page, default_timeout=120).run()
    assert not at.exception
    assert at.multiselect(key=f"{key}_models").value == EN
    at.selectbox(key=f"{key}_dataset").set_value("demo.de").run()
    assert at.multiselect(key=f"{key}_models").value == DE
    at.selectbox(key=f"{key}_dataset").set_value("demo.zh").run()
    assert at.multiselect(key=f"{key}_models").value == ZH
    at.selectbox(key=f"{key}_dataset").set_value("demo.en").run()
    assert at.multiselect(key=f"{key}_models").value == EN
    assert "Use the English models" not in _buttons(at)

    # the user's own choice stays across items; a one-click way to the language's best appears
    at.multiselect(key=f"{key}_models").set_value(["minilm-squad", "mpnet-squad-v2"]).run()
    at.selectbox(key=f"{key}_dataset").set_value("demo.de").run()
    assert at.multiselect(key=f"{key}_models").value == ["minilm-squad", "mpnet-squad-v2"]
    assert "Use the German models" in _buttons(at)
    next(b for b in at.button if b.label == "Use the German models").click().run()
    assert not at.exception
    assert at.multiselect(key=f"{key}_models").value == DE
    assert "Use the German models" not in _buttons(at)
    # ...and, chosen by that button, the selection follows the language again
    at.selectbox(key=f"{key}_dataset").set_value("demo.zh").run()
    assert at.multiselect(key=f"{key}_models").value == ZH
