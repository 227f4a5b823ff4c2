"""Translate or answer in the language? (core.models.routes): the three routes on XQuAD's parallel data."""
import json
from types import SimpleNamespace

import pytest

from core.models import routes
from core.types import Answer, QAExample


def _ds(lang, rows):
    return SimpleNamespace(examples=[QAExample(id=i, question=q, context=c, lang=lang,
                                               answers=tuple(Answer(a, c.index(a)) for a in golds))
                                     for i, q, c, golds in rows])


def test_parallel_items_pair_by_id_and_keep_both_golds():
    de = _ds("de", [("1", "Wer kam?", "Anna kam.", ["Anna"]), ("2", "Wo?", "In Rom.", ["Rom"]),
                    ("3", "Was?", "Nichts.", [])])
    en = _ds("en", [("1", "Who came?", "Anna came.", ["Anna"]), ("3", "What?", "Nothing.", ["Nothing"])])
    items = routes.parallel_items(de, en)
    assert [(it.id, it.question, it.context_en, it.answers, it.answers_en) for it in items] == [
        ("1", "Wer kam?", "Anna came.", ("Anna",), ("Anna",))]


def test_summary_has_each_routes_f1_and_the_paired_differences():
    row = routes.summarise("de", {"translate": [0.0, 1.0, 1.0, 0.0], "cross": [1.0, 1.0, 0.0, 0.0],
                                  "native": [1.0, 1.0, 1.0, 1.0]}, seed=3)
    assert row["n"] == 4
    assert {k: v["f1"] for k, v in row["routes"].items()} == {"translate": 50.0, "cross": 50.0, "native": 100.0}
    assert row["routes"]["native"]["ci95"] == [100.0, 100.0]
    diffs = {(d["a"], d["b"]): d["difference"] for d in row["differences"]}
    assert diffs == {("translate", "native"): 50.0, ("translate", "cross"): 0.0, ("cross", "native"): 50.0}
    low, high = row["routes"]["translate"]["ci95"]
    assert 0.0 <= low < 50.0 < high <= 100.0


@pytest.mark.slow
@pytest.mark.needs_data("xquad/xquad.de.json", "xquad/xquad.en.json")
def test_three_routes_on_real_german_items_with_a_perfect_translator(monkeypatch):
    """Route (a) given XQuAD's own English questions as the 'translation' is the English item
    itself: its answers are the model's answers to the English questions."""
    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.translate.translators import MappingTranslator

    de, en = load_dataset("xquad/xquad.de"), load_dataset("xquad/xquad.en")
    items = routes.parallel_items(de, en)[:6]
    english = {e.id: e.question for e in en.examples}
    perfect = MappingTranslator({("de", "en"): {it.question: english[it.id] for it in items}})
    engine = registry.load_engine("e5-qa-multi", EngineSettings(backend="torch"))
    seen = []
    monkeypatch.setattr(routes, "CHUNK", 4)
    row = routes.run_language("de", engine, engine, perfect, first=6, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4, 18), (6, 18), (10, 18), (12, 18), (16, 18), (18, 18)]   # questions, a chunk at a time
    assert row["n"] == 6 and set(row["routes"]) == {"translate", "cross", "native"}
    answers = [p.text for p in engine.predict([english[it.id] for it in items], [it.context_en for it in items],
                                              n_best=1)]
    expected = routes.route_scores({"translate": answers}, items, "de")["translate"]
    assert row["routes"]["translate"]["f1"] == round(100 * sum(expected) / 6, 2)
    no_mt = routes.run_language("de", engine, engine, None, first=6)
    assert set(no_mt["routes"]) == {"cross", "native"}
    assert no_mt["translate_missing"] == "no offline machine translation is installed"
    assert no_mt["routes"]["native"] == row["routes"]["native"]


def test_cli_refuses_english_or_a_bad_language_in_one_line(capsys):
    assert routes.main(["--source", "en", "--model", "e5-qa-multi"]) == 2
    assert "--source takes two-letter XQuAD languages other than en, got en" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:   # argparse's own refusal, while parsing
        routes.main(["--source", "de", "--model", "e5-qa-multi", "--first", "1"])
    assert refused.value.code == 2
    assert "argument --first: must be a whole number of at least 2, got '1'" in capsys.readouterr().err


def test_stored_results_table_reads_cli_rows(tmp_path, monkeypatch):
    from components.heatmaps import route_view

    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    row = routes.summarise("es", {"translate": [0.0, 1.0], "native": [1.0, 1.0]})
    (tmp_path / "routes").mkdir()
    (tmp_path / "routes" / "a.json").write_text(json.dumps([row | {"model": "m", "english_model": "m"}]))
    (tmp_path / "routes" / "broken.json").write_text("{")
    stored = route_view.stored_results()
    assert list(stored)[0] == "a.json" and "broken.json" not in stored
    assert all(name.endswith(" (bundled)") for name in list(stored)[1:])
    table = route_view.route_table(stored["a.json"])
    assert table.loc[0, routes.ROUTE_LABELS["native"]] == "100.0 (100.0–100.0)"
    assert table.loc[0, routes.ROUTE_LABELS["translate"]].startswith("50.0 (")
    assert table.loc[0, routes.ROUTE_LABELS["cross"]] == "—" and table.loc[0, "cross − translate"] == "—"
    assert table.loc[0, "native − translate"].startswith("+50.0")
