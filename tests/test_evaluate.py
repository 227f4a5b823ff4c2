"""The evaluation command: scores per language, and the model card it writes."""
import json

import pytest

from core.datasets import demo_dataset
from core.models.cards import write_card
from core.models.evaluate import evaluate


@pytest.fixture(scope="module")
def tiny_engine(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.qa.engine import EngineSettings, QAEngine

    return QAEngine(AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
                    AutoTokenizer.from_pretrained(tiny_qa_dir), EngineSettings(max_length=128, stride=32))


def test_evaluate_uses_the_language_scorer(tiny_engine):
    en = evaluate(tiny_engine, demo_dataset("en"))
    zh = evaluate(tiny_engine, demo_dataset("zh"))
    assert en["n"] == 12 and en["scorer"] == "squad-v1.1"
    assert zh["n"] == 12 and zh["scorer"] == "chinese-char"
    for r in (en, zh):
        assert 0 <= r["exact_match"] <= r["f1"] <= 100
        assert r["questions_per_second"] > 0


def test_write_card_merges_results_and_renders_readme(tmp_path, tiny_engine):
    (tmp_path / "model_card.json").write_text(json.dumps({"name": "m", "description": "d"}))
    r = evaluate(tiny_engine, demo_dataset("en"))
    write_card(tmp_path, [r])
    card = json.loads((tmp_path / "model_card.json").read_text())
    assert card["name"] == "m" and card["evaluations"]["demo.en"]["n"] == 12
    readme = (tmp_path / "README.md").read_text()
    assert "| demo.en | en | 12 |" in readme


def test_paired_comparison_of_a_model_with_itself_and_a_hand_made_pair(tiny_engine):
    from core.models.evaluate import compare_paired

    a = evaluate(tiny_engine, demo_dataset("en"), per_question=True)
    assert len(a["per_question_f1"]) == 12 and all(0 <= f <= 1 for f in a["per_question_f1"].values())
    assert round(100 * sum(a["per_question_f1"].values()) / 12, 2) == a["f1"]
    same = compare_paired(a, evaluate(tiny_engine, demo_dataset("en"), per_question=True))
    assert same["difference"] == 0 and same["ci95"] == [0, 0] and not same["significant"]
    # B gains 0.5 on two of four questions: +25 points, and resampling never gives a negative mean
    ra = {"dataset": "d", "model": "A", "per_question_f1": {"q1": 0.0, "q2": 0.5, "q3": 1.0, "q4": 0.25}}
    rb = {"dataset": "d", "model": "B", "per_question_f1": {"q1": 0.5, "q2": 1.0, "q3": 1.0, "q4": 0.25}}
    c = compare_paired(ra, rb)
    assert (c["f1_a"], c["f1_b"], c["difference"], c["n"]) == (43.75, 68.75, 25.0, 4)
    assert 0 <= c["ci95"][0] <= 25.0 <= c["ci95"][1] <= 50
    with pytest.raises(ValueError, match="same questions"):
        compare_paired(ra, {"dataset": "d", "per_question_f1": {"q1": 1.0}})


def test_paired_cli_needs_two_models():
    from core.models.evaluate import main

    with pytest.raises(SystemExit):
        main(["--model", "minilm-squad", "--dataset", "demo.en", "--paired"])
