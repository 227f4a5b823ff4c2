"""AppTest: pages opened with a link (query parameters) show its state once, and bad links are
one clear line with the page still working."""
from __future__ import annotations

import pytest
from rendered import shown
from streamlit.testing.v1 import AppTest


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(page, default_timeout=120)
    if page.endswith("app.py") and params.pop("_variants", False):
        at.switch_page("pages/variants.py")
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def _errors(at) -> list[str]:
    return [shown(e.value) for e in at.error]


def test_ask_opens_the_linked_item_models_and_answers_once(tiny_env):
    # demo.en item 1: "How tall is the tower?"
    at = _open("../app.py", v="1", ds="demo.en", id="demo-en-01-q2", m=["tiny-b"], nbest="3")
    assert not at.exception and not _errors(at)
    assert at.number_input(key="ask_item").value == 1
    assert at.text_area(key="ask_question").value == "How tall is the tower?"
    assert at.multiselect(key="ask_models").value == ["tiny-b"]
    assert at.slider(key="ask_nbest").value == 3
    assert any(t.value.startswith("Answer: ") for t in at.text)   # answered at once: go=1 is the default
    # applied once: the user's own change stays on the next run
    at.multiselect(key="ask_models").set_value(["tiny-a"]).run()
    at.run()
    assert at.multiselect(key="ask_models").value == ["tiny-a"]


def test_ask_opens_a_pasted_context_with_its_question_and_gold(tiny_env):
    at = _open("../app.py", v="1", ctx="paris is the capital of france .", q="what is the capital of france ?",
               m=["tiny-a"], gold="paris", go="0")
    assert not at.exception and not _errors(at)
    assert at.radio(key="ask_source").value == "Paste a context"
    assert at.text_area(key="ask_context").value == "paris is the capital of france ."
    assert at.text_area(key="ask_question").value == "what is the capital of france ?"
    assert at.text_input(key="ask_gold").value == "paris"
    assert not any(t.value.startswith("Answer: ") for t in at.text)   # go=0: not answered


def test_ask_link_naming_what_the_server_lacks_is_one_line_and_the_page_works(tiny_env):
    at = _open("../app.py", v="1", ds="demo.en", id="no-such-item", m=["tiny-a"])
    assert not at.exception
    assert _errors(at) == ["This link cannot be opened: link parameter id: no item 'no-such-item' in demo.en. "
                           "The page opens without it."]
    assert at.text_area(key="ask_question").value == "When was Carrow Point Lighthouse first lit?"   # item 0
    hostile = _open("../app.py", v="1", ds="demo.en", id="x", m=["<img src=x onerror=alert(1)>"])
    assert not hostile.exception
    assert _errors(hostile)[0].startswith("This link cannot be opened: link parameter m: '<img src=x "
                                          "onerror=alert(1)>' is not a model this server offers")
    assert "\\<img src\\=x" in hostile.error[0].value   # escaped: Markdown shows it as text, never as HTML
    hostile.button(key="ask_go").click().run()
    assert not hostile.exception and any(t.value.startswith("Answer: ") for t in hostile.text)


def test_ask_link_with_html_in_its_context_shows_it_as_text(tiny_env):
    at = _open("../app.py", v="1", ctx="<script>alert(1)</script> paris is the capital of france .",
               q="<b>what</b> is the capital of france ?", m=["tiny-a"], gold="<img src=x>")
    assert not at.exception and not _errors(at)
    context_html = [m.value for m in at.markdown if "qax-context" in m.value and "<div" in m.value]
    assert len(context_html) == 1
    assert "<script>" not in context_html[0] and context_html[0].count("&#60;script&#62;") == 1
    assert all("<img" not in m.value and "<b>what" not in m.value for m in at.markdown)


def test_ask_says_when_a_pasted_context_is_too_long_to_link(tiny_env):
    at = _open("../app.py", v="1", ctx="paris is the capital of france .", q="what ?", m=["tiny-a"], go="0")
    at.text_area(key="ask_context").input("word " * 401).run()   # 2,005 characters
    assert any("No link for this view: the pasted context is 2,005 characters; a link carries at most 2,000"
               in shown(c.value) for c in at.caption)


def test_variants_opens_with_the_linked_perturbations_and_generates(tiny_env):
    at = _open("../app.py", _variants=True, v="1", ds="demo.en", id="demo-en-01-q2", m=["tiny-a", "tiny-b"],
               p=["keyboard_Q:p=0.5", "TUQ"], chain=["TUQ", "keyboard_Q:p=0.5"], seed="7", n="2", row="3")
    assert not at.exception and not _errors(at)
    assert at.multiselect(key="var_fam_keyboard").value == ["keyboard_Q"]
    assert at.multiselect(key="var_fam_case").value == ["TUQ"]
    assert at.slider(key="var_param_keyboard_Q_p").value == 0.5
    assert at.number_input(key="var_seed").value == 7 and at.number_input(key="var_repeats").value == 2
    assert at.multiselect(key="var_chain").value == ["TUQ", "keyboard_Q"]
    # the original, keyboard_Q's two repeats, TUQ once (deterministic), the chain TUQ+keyboard_Q twice
    rows = at.session_state["var_result"]["rows"]
    assert len(rows) == 6 and [r.perturbation for r in rows].count("TUQ+keyboard_Q") == 2
    # the view's own link: the same state (the perturbations in the page's family order)
    assert _link_data(at, "var_link")["query"] == (
        "v=1&ds=demo.en&id=demo-en-01-q2&m=tiny-a&m=tiny-b&p=TUQ&p=keyboard_Q%3Ap%3D0.5&chain=TUQ"
        "&chain=keyboard_Q%3Ap%3D0.5&seed=7&n=2&go=1&row=3")
    assert at.selectbox(key="var_row").value == 3   # the row the link shows in detail
    at.selectbox(key="var_row").set_value(5).run()
    assert _link_data(at, "var_link")["query"].endswith("&go=1&row=5")


def test_variants_says_when_too_many_perturbations_are_chosen_to_link(tiny_env):
    """The round organiser's audit (2026-11-29): 24 chosen specs made a link that a fresh browser
    refused ("24 specs; a link carries at most 20") and opened without them."""
    at = _open("../app.py", _variants=True, v="1", ds="demo.en", id="demo-en-01-q2", m=["tiny-a"], p=["TUQ"])
    families = [w for w in at.multiselect if w.key and w.key.startswith("var_fam_")]
    for widget in families:
        widget.set_value(list(widget.options))
    at.run()
    chosen = sum(len(w.value) for w in at.multiselect if w.key and w.key.startswith("var_fam_"))
    assert chosen > 20
    assert any(f"No link for this view: {chosen} perturbations chosen; a link carries at most 20."
               == shown(c.value) for c in at.caption), [shown(c.value) for c in at.caption]


def test_heatmaps_opens_the_linked_cell_and_example(sweep_db):
    at = _open("../pages/heatmaps.py", v="1", db="sweeps.sqlite", sweep="toy-sweep", model="fake-b", cell="RUQ",
               show="clean", metric="em")
    assert not at.exception
    assert at.radio(key="hm_metric").value == "em"
    assert at.selectbox(key="hm_cell").value == 7                       # fake-b is the second row: 5 + RUQ's 2
    assert any("fake\\-b under RUQ" in c.value for c in at.caption)
    assert at.radio(key="hm_show_answers").value == "clean answers"


@pytest.mark.parametrize("params, message", [
    ({"db": "../../etc/passwd", "sweep": "toy-sweep"}, "link parameter db: '../../etc/passwd' is a path"),
    ({"db": "elsewhere.sqlite", "sweep": "toy-sweep"}, "link parameter db: 'elsewhere.sqlite' is not a sweep"),
    ({"db": "sweeps.sqlite", "sweep": "<b>gone</b>"}, "link parameter sweep: no sweep named '<b>gone</b>'"),
    ({"db": "sweeps.sqlite", "sweep": "toy-sweep", "model": "fake-a", "cell": "XYZ"},
     "link parameter cell: this sweep has no cell fake-a × XYZ"),
    ({"db": "sweeps.sqlite", "sweep": "toy-sweep", "tab": "Secrets"}, "link parameter tab: this sweep has no tab"),
])
def test_heatmaps_bad_links_are_one_line_and_the_heatmap_still_shows(sweep_db, params, message):
    at = _open("../pages/heatmaps.py", v="1", **params)
    assert not at.exception
    assert len(at.error) == 1 and _errors(at)[0].startswith("This link cannot be opened: " + message)
    assert at.selectbox(key="hm_cell").value == 0                        # the page as without the link


def test_gallery_opens_the_linked_example_first_in_its_tab(sweep_db):
    at = _open("../pages/gallery.py", v="1", db="sweeps.sqlite", sweep="toy-sweep", kind="flip", id="q5",
               q="Wo built the palace in Würzburg?")
    assert not at.exception and not _errors(at)
    captions = [shown(c.value) for c in at.caption]
    linked = captions.index("🔗 The example this link names")
    assert captions[linked + 1].startswith("toy-sweep · toy · q5 ·")
    typed = [shown(m.value) for m in at.markdown if "Typed:" in m.value]
    assert "Wo built the palace in Würzburg?" in typed[0]   # the linked flip comes first


def test_heatmaps_copy_link_names_the_store_and_the_shown_cell(sweep_db):
    """The link box gets the query of the cell on screen (the address itself is built in the browser)."""
    at = _open("../pages/heatmaps.py")
    at.selectbox(key="hm_cell").set_value(1).run()          # fake-a x TUQ
    assert _link_data(at, "hm_link") == {"page": "heatmaps", "query": "v=1&db=sweeps.sqlite&sweep=toy-sweep"
                                                                      "&tab=Heatmap&model=fake-a&cell=TUQ"}
    assert str(sweep_db.parent) not in _link_data(at, "hm_link")["query"]


def test_ask_copy_link_follows_the_view(tiny_env):
    at = _open("../app.py")
    assert _link_data(at, "ask_link") == {"page": "", "query": "v=1&ds=demo.en&id=demo-en-01-q1&m=tiny-a&m=tiny-b"
                                                                   "&nbest=5&go=0"}
    at.button(key="ask_go").click().run()
    assert _link_data(at, "ask_link")["query"].endswith("&go=1")   # the answers are part of the view


def _link_data(at, key: str) -> dict:
    """What the link box was given: the view's page and its query (JSON data of the component)."""
    import json

    boxes = [e.proto for e in at.main if type(e).__name__ == "UnknownElement"
             and getattr(e.proto, "component_name", "") == "qax_copy_link" and e.proto.id.endswith(key)]
    assert len(boxes) == 1, f"{len(boxes)} link boxes {key}"
    data = json.loads(boxes[0].json)
    return {"page": data["page"], "query": data["query"]}


def test_the_bundled_demo_sweep_is_linked_by_its_store_name(sweep_db):
    """The demo sweep lives in the cache, not among the listed databases: its links name it
    ``bundled-demo``, and such a link opens it even where the user's own sweeps are the default."""
    from core.explore.demo_sweep import DEMO_NAME

    at = _open("../pages/heatmaps.py", v="1", db="bundled-demo", sweep=DEMO_NAME)
    assert not at.exception and not _errors(at)
    assert any("bundled demo sweep" in i.value for i in at.info)
    query = _link_data(at, "hm_link")["query"]
    assert query.startswith("v=1&db=bundled-demo&sweep=demo+%C2%B7+demo.en+%28bundled%29&tab=Heatmap&model=")


def test_heatmaps_link_to_another_tab_opens_without_a_complaint(sweep_db):
    at = _open("../pages/heatmaps.py", v="1", db="sweeps.sqlite", sweep="toy-sweep", tab="Model vs model")
    assert not at.exception and not _errors(at)
    assert at.selectbox(key="hm_diff_a").value == "fake-a"   # that tab's content is drawn
