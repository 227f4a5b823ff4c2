"""benchmarks/course_recipe.py, the peer benchmarks/peers.py measures the engine against: on real
XQuAD-en questions with a shipped model it answers as the engine on torch does, and every answer
is a piece of its own context."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import course_recipe


@pytest.mark.slow   # a real model, twice
def test_the_course_recipe_answers_as_the_engine_on_torch():
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.datasets import load_dataset
    from core.qa.engine import EngineSettings
    from core.qa.registry import get_entry, load_engine

    entry = get_entry("minilm-squad-v2")
    if not entry.is_installed():
        pytest.skip(f"minilm-squad-v2 is not installed: {entry.status()}")
    examples = load_dataset("xquad/xquad.en").examples[:12]
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    tokenizer = AutoTokenizer.from_pretrained(entry.path)
    model = AutoModelForQuestionAnswering.from_pretrained(entry.path).eval()
    recipe = course_recipe.answers(tokenizer, model, questions, contexts)
    engine = load_engine("minilm-squad-v2", EngineSettings(backend="torch", threads=1))
    assert recipe == [p.text for p in engine.predict(questions, contexts, n_best=1)]
    assert all(a and a in c for a, c in zip(recipe, contexts))
    answers, one_qps, all_qps = course_recipe.timed(
        lambda qs, cs: course_recipe.answers(tokenizer, model, qs, cs), questions[:4], contexts[:4])
    assert answers == recipe[:4] and one_qps > 0 and all_qps > 0
