"""AppTest: the Models page shows the registry and every model card's measured figures, side by side."""
import json

from rendered import shown
from streamlit.testing.v1 import AppTest

from core.qa import registry

PAGE = "../pages/models.py"


def _page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def test_the_page_answers_which_model_for_german():
    """Issue 43: best per language on top, then one row per model for a chosen language, best first,
    with "—" (never "None") where a card holds no figure."""
    at = _page()
    best = at.table[0].value.set_index("language")
    assert best.loc["German (de)", "best model"] == "e5-qa-multi" and best.loc["German (de)", "F1"] == "66.2"
    assert best.loc["English (en)", "best model"] == "mpnet-squad-v2" and best.loc["English (en)", "F1"] == "85.2"
    assert best.loc["Chinese (zh)", "ticked by default"] == "e5-qa-multi, mpnet-cmrc-zh, minilm-cmrc-zh-v2"
    at.selectbox(key="models_lang").set_value("de").run()
    assert not at.exception
    board = at.dataframe[0].value
    # the generative reader ranks by its card's F1 (a 200-question sample) but is never ticked by default
    assert list(board["model"])[:4] == ["e5-qa-multi", "mpnet-mlqa-de", "qwen2.5-coder-0.5b", "minilm-mlqa-de"]
    assert list(board["XQuAD-de F1"])[:4] == ["66.2", "47.1", "39.6", "32.0"]   # the cards: 66.24, 47.14, 39.62, 32.01
    assert list(board["trained for de"])[:5] == ["yes", "yes", "yes", "yes", "no"]
    assert list(board["ticked by default"])[:5] == ["yes", "yes", "no", "yes", "no"]
    cells = [str(v) for col in board.columns for v in board[col]]   # what the browser shows
    # e5-qa-multi's card figure for the backend this machine answers with: openvino-int8-full where
    # the CPU has AVX-512 bf16 (31.54 ms on the card), onnx-int8 elsewhere (37.69 ms)
    expected = {"openvino-int8-full": "31.5", "onnx-int8": "37.7"}[registry.get_entry("e5-qa-multi").default_backend()]
    assert board.loc[0, "ms / question (CPU)"] == expected
    assert "None" not in cells and "nan" not in cells
    assert "⬇ CSV (German)" in [b.label for b in at.get("download_button")]


def test_shipped_registry_and_measured_figures_from_the_cards():
    at = _page()
    reg = at.dataframe[1].value
    assert list(reg["model"]) == [m.name for m in registry.load_registry()]
    status = dict(zip(reg["model"], reg["status"]))
    assert status["minilm-squad"] == "installed"
    assert status["mpnet-squad-lora"] == "installed (LoRA adapter)"
    assert status["roberta-base-squad2 (hub)"] == "hub (needs internet on first load)"
    ticked = dict(zip(reg["model"], reg["ticked by default"]))
    assert ticked["mpnet-squad-v2"] and not ticked["minilm-squad"] and not ticked["mpnet-squad-lora"]

    # The F1 matrix holds exactly what the cards hold; a model never run on a set has no value.
    f1 = at.dataframe[2].value   # models as rows, data sets as columns
    card = registry.get_entry("minilm-squad").model_card()["evaluations"]
    assert f1.loc["minilm-squad", "xquad/xquad.en"] == f"{card['xquad/xquad.en']['f1']:.1f}" == "71.2"
    assert f1.loc["mpnet-squad-lora", "xquad/xquad.en"] == "80.9"
    assert f1.loc["minilm-cmrc-zh", "train/cmrc2018/cmrc2018_dev"] == "47.3"   # a card key given as a path
    assert f1.loc["minilm-cmrc-zh", "noiseqa/Synthetic/xquad-keyboard-synthetic"] == "—"
    assert "roberta-base-squad2 (hub)" not in f1.index   # no card, no figures

    at.radio(key="models_metric").set_value("exact_match").run()
    assert at.dataframe[2].value.loc["minilm-squad", "xquad/xquad.en"] == "57.0"   # 56.97
    labels = [b.label for b in at.get("download_button")]
    for expected in ("⬇ CSV", "⬇ CSV (EM matrix)", "⬇ CSV (full table)", "⬇ JSON (full table)", "⬇ model_card.json"):
        assert expected in labels, labels
    assert [shown(e.label) for e in at.expander][2:4] == ["minilm-squad: installed", "minilm-squad-noise: installed"]

    # every declared metric listed with its paper and implementation, as the declarations hold them
    assert shown(at.expander[1].label) == "Metrics: what each measures, and its sources"
    sources = at.dataframe[4].value.set_index("metric")
    assert sorted(sources.index) == sorted(["EM", "F1", "DPR", "% change", "penalty", "CER", "WER", "BLEU"])
    assert sources.loc["F1", "citation"].startswith("Rajpurkar, Zhang, Lopyrev and Liang (2016)")
    assert sources.loc["WER", "reference"] == "https://github.com/jitsi/jiwer"
    assert sources.loc["DPR", "better"] == "lower is better"
    assert "⬇ CSV (metrics and sources)" in labels


def test_model_without_card_malformed_card_and_bad_registry(monkeypatch, tmp_path, tiny_qa_dir):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(tiny_qa_dir, bad)
    (bad / "model_card.json").write_text("{not json")
    reg = tmp_path / "models.toml"
    reg.write_text(f'[[model]]\nname = "tiny"\npath = "{tiny_qa_dir}"\n\n'
                   f'[[model]]\nname = "tiny-bad-card"\npath = "{bad}"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    at = _page()
    assert list(at.dataframe[1].value["model"]) == ["tiny", "tiny-bad-card"]
    assert any("tiny-bad-card: its model card cannot be read" in shown(w.value) for w in at.warning)
    assert any("No model card holds measured figures yet" in i.value for i in at.info)

    reg.write_text('[[model]]\nname = "broken"\npath = \n')
    at = _page()
    assert at.error and "The model registry cannot be read" in at.error[0].value


def test_card_figures_reach_the_matrix(monkeypatch, tmp_path, tiny_qa_dir):
    import shutil

    d = tmp_path / "m"
    shutil.copytree(tiny_qa_dir, d)
    ev = {"demo.en": {"dataset": "demo.en", "lang": "en", "n": 12, "exact_match": 50.0, "f1": 62.5,
                      "ms_per_question": 3.1, "questions_per_second": 322.6, "threads": 1,
                      "hardware": "x86_64, 2 cores", "date": "2026-11-24"}}
    (d / "model_card.json").write_text(json.dumps({"name": "m", "description": "<b>bold?</b>", "evaluations": ev}))
    reg = tmp_path / "models.toml"
    reg.write_text(f'[[model]]\nname = "m"\npath = "{d}"\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    at = _page()
    assert at.dataframe[2].value.loc["m", "demo.en"] == "62.5"
    assert at.dataframe[3].value.to_dict("records")[0]["n"] == 12
    card_md = [m.value for m in at.markdown if m.value.startswith("# m")]
    assert card_md and "| demo\\.en | en | 12 | 50.0 | 62.5 |" in card_md[0]
    # the card's text is data: its HTML and Markdown are escaped, the table stays a table
    assert shown(card_md[0]).splitlines()[2] == "<b>bold?</b>" and "<b>" not in card_md[0]


def test_the_page_shows_the_loaded_models_their_size_and_the_budget(monkeypatch, tiny_registry):
    """Issue 53: what the server holds now, each model's measured size, and the budget."""
    from core.qa.engine import EngineSettings

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("QAX_MODEL_MEMORY_MB", "700")
    monkeypatch.setattr(registry, "_engines", None)
    at = _page()
    assert any("No model is loaded yet" in i.value for i in at.info)
    registry.engines().get("tiny-a", EngineSettings(backend="torch"))
    at = _page()
    [held] = registry.engines().loaded()
    table = at.dataframe[-1].value
    assert list(table["model"]) == ["tiny-a"] and list(table["backend"]) == ["torch"]
    assert list(table["MB"]) == [round(held.mb)] and held.mb > 0
    assert any(f"{held.mb:,.0f} MB of the 700 MB model memory budget" in shown(c.value) for c in at.caption)
