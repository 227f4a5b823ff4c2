"""The evaluation command: scores per language, and the model card it writes."""
import json

import pytest

from core.datasets import demo_dataset
from core.evaluate import evaluate, write_card


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
