"""AppTest: the Variants page perturbs a demo question, answers every variant, shows spans per row."""
import html
import re

import pandas as pd
import pytest
from rendered import container_places
from streamlit.testing.v1 import AppTest

from components.edits import edits_html
from core import datasets
from core.explore.variants import Choice, variant_rng
from core.metrics import predictions_differ
from core.perturb import registry

PAGE = "../pages/variants.py"


@pytest.fixture
def tiny_env(monkeypatch, tiny_registry):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _page(seed: int, repeats: int, picks: dict[str, list[str]]) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert not at.exception
    for family, ids in picks.items():
        at.multiselect(key=f"var_fam_{family}").set_value(ids)
    at.number_input(key="var_seed").set_value(seed)
    at.number_input(key="var_repeats").set_value(repeats)
    at.run()
    assert not at.exception
    at.button(key="var_go").click().run()
    assert not at.exception
    return at


def _context_html(at) -> list[str]:
    return [m.value for m in at.markdown if 'class="qax-context"' in m.value]


def _strip_tags(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_variants_table_rows_texts_and_changed_answers(tiny_env):
    at = _page(22, 2, {"case": ["TLQ"], "keyboard": ["keyboard_Q"], "word": ["DRQ"]})
    example = datasets.demo_dataset("en").examples[0]  # the page's default item: demo.en, item 0
    df = at.dataframe[0].value

    # Original first; TLQ is deterministic (once), the two randomised ones twice each.
    assert list(df["perturbation"]) == ["original", "TLQ", "keyboard_Q", "keyboard_Q", "DRQ", "DRQ"]
    assert list(df["repeat"].astype(object).where(df["repeat"].notna(), None)) == [None, 0, 0, 1, 0, 1]

    # The exact texts the registry gives under the documented seed rule.
    expected = [example.question]
    for pid, r in [("TLQ", 0), ("keyboard_Q", 0), ("keyboard_Q", 1), ("DRQ", 0), ("DRQ", 1)]:
        expected.append(registry.get(pid).apply(example, variant_rng(22, example, Choice(pid), r))[0].text)
    assert list(df["text"]) == expected
    # Hand-checked values for seed 22 (the seed rule is core.perturb.spec.rng_for, the sweep's).
    assert expected[1:] == [
        "when was carrow point lighthouse first lit?",
        "When was Carrow Point Lighthouse first lit?",   # p=0.25 picked no word this time
        "When waa Carrow Piint Lighthouse first lut?",
        "When was Carrow Point first lit?",
        "When Carrow Point Lighthouse first lit?",
    ]
    marked = [
        "⟦W→w⟧hen was ⟦C→c⟧arrow ⟦P→p⟧oint ⟦L→l⟧ighthouse first lit?",
        "When was Carrow Point Lighthouse first lit?",
        "When wa⟦s→a⟧ Carrow P⟦o→i⟧int Lighthouse first l⟦i→u⟧t?",
        "When was Carrow Point ⟦−Lighthouse ⟧first lit?",
        "When ⟦−was ⟧Carrow Point Lighthouse first lit?",
    ]
    assert list(pd.DataFrame(at.session_state["var_result"]["table"])["variant (edits marked)"])[1:] == marked
    # on screen the variant's cell names its perturbation (its own column is hidden: three models fit at 800 px)
    specs = [p + (f"({q})" if q else "") for p, q in zip(df["perturbation"], df["params"])]
    # and a draw that edited nothing says so (keyboard_Q's second row)
    said = ["", " (unchanged: this draw edited nothing)", "", "", ""]
    assert list(df["variant (edits marked)"])[1:] == [f"{p}{u}: {m}" for p, u, m in zip(specs[1:], said, marked)]
    assert list(df["n edits"]) == [0, 4, 0, 3, 1, 1]

    # Per model: answer, changed mark consistent with the answers, EM/F1 present (demo has gold);
    # on screen one column per model, in the CSV (the full table) each part apart.
    shown_df, df = df, pd.DataFrame(at.session_state["var_result"]["table"])
    for model in ("tiny-a", "tiny-b"):
        assert list(shown_df[model]) == [
            (f"{m}: {a or '∅'}" if m else a or "∅") + f" · F1 {f:.0f}"
            for m, a, f in zip(df[f"{model}: changed"], df[f"{model}: answer"], df[f"{model}: F1"])]
        answers = list(df[f"{model}: answer"])
        marks = list(df[f"{model}: changed"])
        assert marks[0] == ""
        assert marks[1:] == ["changed" if predictions_differ(answers[0], a) else "same" for a in answers[1:]]
        # keyboard_Q r0 left the question as it was: the same model must give the same answer
        assert marks[2] == "same"
        assert df[f"{model}: EM"].notna().all() and df[f"{model}: F1"].notna().all()
    assert list(df["tiny-a: answer"]) == list(df["tiny-b: answer"])  # same weights, same answers

    assert [b.label for b in at.download_button] == ["Export CSV"]


def test_variants_row_choice_highlights_spans_and_renders_edits(tiny_env):
    at = _page(3, 1, {"word": ["DRQ", "DRC"]})
    example = datasets.demo_dataset("en").examples[0]
    df = at.dataframe[0].value
    assert list(df["perturbation"]) == ["original", "DRQ", "DRC"]

    # Row 0 by default: the original context with the models' spans and the gold underline.
    ctx = _context_html(at)
    assert len(ctx) == 1 and _strip_tags(ctx[0]) == example.context
    assert 'class="qax-span"' in ctx[0] and "gold answer" in ctx[0]

    # Choose the context-perturbation row: the highlighted context is the perturbed one.
    drc = registry.get("DRC").apply(example, variant_rng(3, example, Choice("DRC"), 0))[0]
    at.selectbox(key="var_row").set_value(2).run()
    assert not at.exception
    ctx = _context_html(at)
    assert len(ctx) == 1 and _strip_tags(ctx[0]) == drc.example.context != example.context
    assert 'class="qax-span"' in ctx[0]
    edits = [m.value for m in at.markdown if 'class="qax-edits"' in m.value]
    assert len(edits) == 1
    (edit,) = drc.edits
    deleted = example.context[edit.start:edit.end].replace(" ", "␣")
    assert f'title="delete_word">{deleted}</del>' in html.unescape(edits[0])
    legend = [m.value for m in at.markdown if 'class="qax-legend"' in m.value]
    assert "tiny-a" in html.unescape(legend[0]) and "tiny-b" in html.unescape(legend[0])

    # The question row shows the deletion in the question, and the original context again.
    drq = registry.get("DRQ").apply(example, variant_rng(3, example, Choice("DRQ"), 0))[0]
    at.selectbox(key="var_row").set_value(1).run()
    edits = [m.value for m in at.markdown if 'class="qax-edits"' in m.value]
    assert edits == [edits_html(example.question, drq.edits)]
    assert "<del" in edits[0]
    assert _strip_tags(_context_html(at)[0]) == example.context


def test_variants_not_applicable_and_incompatible_are_explained(tiny_env):
    # RUQ finds no umlaut in an English question: a note, no row. A German-only reason appears for
    # perturbations limited to other languages only when the item is German, so here check RUQ.
    at = _page(0, 1, {"character": ["RUQ"], "case": ["TUQ"]})
    df = at.dataframe[0].value
    assert list(df["perturbation"]) == ["original", "TUQ"]
    assert any("RUQ r0 (n/a)" in w.value.replace("\\", "") for w in at.warning)
    assert any("RUQ replaces umlauts and ß, and this question has none" in w.value.replace("\\", "")
               for w in at.warning)


def test_an_option_with_nothing_to_change_in_the_item_says_so(tiny_env):
    """A Chinese item: the case perturbations' options say there is nothing to change, before they
    are chosen; typo_Q's does not (its layout, below, decides)."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.selectbox(key="var_dataset").set_value("demo.zh").run()
    assert not at.exception
    case = at.multiselect(key="var_fam_case").options
    assert case and all(o.endswith(" · nothing to change here") for o in case), case
    assert not any("nothing to change" in o for o in at.multiselect(key="var_fam_keyboard").options
                   if o.startswith("typo_Q"))


def test_variants_page_lists_reasons_for_a_german_item(tiny_env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.selectbox(key="var_dataset").set_value("demo.de").run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert "paraphrase_rules_Q: paraphrase_rules_Q supports languages en, not 'de'" in texts
    at.multiselect(key="var_fam_paraphrase").set_value(["paraphrase_rules_Q"]).run()
    assert any("paraphrase_rules_Q will be skipped" in w.value.replace("\\", "") for w in at.warning)


def test_typed_question_and_context_without_then_with_a_gold_answer(tiny_env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.radio(key="var_source").set_value("Type a question and context").run()
    at.text_area(key="var_context").input("<b>paris</b> is the capital of france .").run()
    at.text_area(key="var_question").input("What is the capital of France?").run()
    at.multiselect(key="var_fam_case").set_value(["TUQ"]).run()
    at.button(key="var_go").click().run()
    assert not at.exception
    df = at.dataframe[0].value
    assert list(df["text"]) == ["What is the capital of France?", "WHAT IS THE CAPITAL OF FRANCE?"]
    assert "F1" not in " ".join(df["tiny-a"])   # no gold, no score
    df = pd.DataFrame(at.session_state["var_result"]["table"])
    assert df["tiny-a: EM"].isna().all() and df["tiny-a: answer"].str.len().gt(0).all()
    ctx = _context_html(at)
    assert len(ctx) == 1 and "<b>" not in ctx[0] and "&#60;b" in ctx[0]
    assert _strip_tags(ctx[0]) == "<b>paris</b> is the capital of france ."
    assert "gold answer" not in ctx[0]
    # a gold answer typed beside the passage scores the question and its variants, as on Ask
    at.text_input(key="var_gold").input("paris").run()
    at.button(key="var_go").click().run()
    assert not at.exception
    df = pd.DataFrame(at.session_state["var_result"]["table"])
    assert at.session_state["var_result"]["scored"] and df["tiny-a: F1"].notna().all()


def test_another_question_on_a_dataset_item_is_not_scored_as_on_ask(tiny_env):
    """Issue 53: a question that is not the item's own has no gold answer: no F1 0 for every model,
    "Not scored" as Ask says; the item's own question is scored again when it comes back."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.text_area(key="var_question").input("Who kept the light burning?").run()
    at.multiselect(key="var_fam_case").set_value(["TUQ"]).run()
    at.button(key="var_go").click().run()
    assert not at.exception
    table = pd.DataFrame(at.session_state["var_result"]["table"])
    assert list(table["question"]) == ["Who kept the light burning?", "WHO KEPT THE LIGHT BURNING?"]
    assert table["tiny-a: F1"].isna().all() and table["tiny-b: EM"].isna().all()
    assert "F1" not in " ".join(at.dataframe[0].value["tiny-a"])
    assert any(c.value.startswith("Not scored: this is not the item's own question") for c in at.caption)
    assert "gold answer" not in _context_html(at)[0]   # no gold underlined for a question without one

    at.text_area(key="var_question").input(datasets.demo_dataset("en").examples[0].question).run()
    at.button(key="var_go").click().run()
    table = pd.DataFrame(at.session_state["var_result"]["table"])
    assert table["tiny-a: F1"].notna().all()
    assert not any(c.value.startswith("Not scored") for c in at.caption)


def test_empty_question_is_refused(tiny_env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.text_area(key="var_question").input("  ").run()
    at.multiselect(key="var_fam_case").set_value(["TUQ"]).run()
    at.button(key="var_go").click().run()
    assert any("question is empty" in e.value for e in at.error)
    assert len(at.dataframe) == 0


def test_chain_row_uses_the_step_parameters(tiny_env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.multiselect(key="var_chain").set_value(["TLQ", "keyboard_Q"]).run()
    at.slider(key="var_param_keyboard_Q_p").set_value(0.5).run()
    at.number_input(key="var_seed").set_value(7)
    at.number_input(key="var_repeats").set_value(2).run()
    at.button(key="var_go").click().run()
    assert not at.exception
    df = at.dataframe[0].value
    assert list(df["perturbation"]) == ["original", "TLQ+keyboard_Q", "TLQ+keyboard_Q"]
    assert list(df["params"])[1:] == ["keyboard_Q.p=0.5"] * 2
    # the chain's spec as a sweep draws it (tests/test_variants.py checks the same texts)
    assert list(df["text"])[1:] == ["when was carrow point lighthouse first lit?",
                                    "whem was carroq point lighthouse firdt liy?"]


def test_generate_button_says_what_it_waits_for(tiny_env):
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert not at.exception and at.button(key="var_go").disabled
    assert "Choose at least one perturbation to generate variants." in [c.value for c in at.caption]
    at.multiselect(key="var_fam_case").set_value(["TLQ"]).run()
    assert not at.button(key="var_go").disabled
    assert not any(c.value.startswith("Choose at least") for c in at.caption)


def test_parameter_boxes_come_from_the_declarations(tiny_env):
    """The box shows each declared parameter with its help; ReplaceRQ's mlm_model names a model
    folder, so it is the server's setting, never a text field (as on Sweeps)."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.multiselect(key="var_fam_word").set_value(["ReplaceRQ", "DRQ"]).run()
    assert not at.exception, at.exception
    assert "var_param_ReplaceRQ_mlm_model" not in [t.key for t in at.text_input]
    assert any("ReplaceRQ · mlm_model: the server’s setting (set on the server, not here)"
               in c.value.replace("\\", "") for c in at.caption)
    source = at.selectbox(key="var_param_ReplaceRQ_source")
    assert source.options == ["auto", "mlm", "wordnet"] and source.value == "auto"
    n_words = at.number_input(key="var_param_DRQ_n_words")
    assert (n_words.value, n_words.min, n_words.max) == (1, 1, 4)
    assert n_words.help == registry.get("DRQ").config_spec()["n_words"].help


def test_the_row_panels_keep_their_place_on_the_run_after_generating(tiny_env):
    from core.qa import registry as models

    models.engines().clear()   # the models load in the generating run, as on a fresh server
    at = _page(22, 2, {"case": ["TLQ"], "keyboard": ["keyboard_Q"], "word": ["DRQ"]})
    generated = container_places(at)
    assert any("Repair the question" in label for label in generated)   # the row's panel, below the table
    at.run()   # the next run: a widget touched in that panel, say
    assert container_places(at) == generated


def test_a_typed_german_context_is_german(tiny_env):
    """A pasted German passage is German on Variants as on Ask (the script alone said English, so the
    English models were ticked and the German ones warned about)."""
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.radio(key="var_source").set_value("Type a question and context").run()
    at.text_area(key="var_context").input("Die Bäckerei in der Schulstraße wurde im Jahr 1962 von Käthe Übelhör "
                                          "gegründet, und sie verkaufte dort jeden Tag mehr als hundert Brote.").run()
    assert not at.exception
    assert any("Language detected from the context: de" in c.value for c in at.caption)
