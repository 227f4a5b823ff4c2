"""Self-training labels (core.training.pseudo_label): a real model's spans become gold answers,
only the confident ones, and the file they make is training data the trainer accepts."""
import json

import pytest

from core.config import data_dir
from core.datasets import has_gold, load_squad
from core.training import pseudo_label
from core.training.train import load_training_examples

# Written for this test (no evaluation data): two answerable questions and one the passage cannot answer.
CONTEXT = ("The Bell Rock Lighthouse, off the coast of Angus in Scotland, was built between 1807 and 1810 "
           "by Robert Stevenson. It is the world's oldest surviving sea-washed lighthouse.")
QUESTIONS = [("b1", "Who built the Bell Rock Lighthouse?"), ("b2", "When was the Bell Rock Lighthouse finished?"),
             ("b3", "What colour is the keeper's cat?")]


@pytest.fixture
def unlabelled(tmp_path):
    path = tmp_path / "unlabelled.json"
    qas = [{"id": i, "question": q, "answers": []} for i, q in QUESTIONS]
    path.write_text(json.dumps({"version": "1.1", "data": [
        {"title": "Lighthouses", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]}))
    return path


def _label(unlabelled, out, min_score):
    return pseudo_label.main(["--model", "minilm-squad", "--backend", "torch", "--data", str(unlabelled),
                              "--min-score", str(min_score), "--output", str(out)])


def test_every_answer_is_the_models_own_span_with_its_score(unlabelled, tmp_path):
    out = tmp_path / "labelled.json"
    assert _label(unlabelled, out, 0.0) == 0
    doc = json.loads(out.read_text())
    answers = {q["id"]: q["answers"][0] for q in doc["data"][0]["paragraphs"][0]["qas"]}
    assert {i: (a["text"], a["answer_start"]) for i, a in answers.items()} == {
        "b1": ("Robert Stevenson", 97), "b2": ("between 1807 and 1810", 72), "b3": ("Bell Rock Lighthouse", 4)}
    # minilm-squad's torch scores: sure of the builder, unsure of the question it cannot answer
    assert answers["b1"]["pseudo_score"] == pytest.approx(0.985, abs=0.005)
    assert answers["b3"]["pseudo_score"] == pytest.approx(0.459, abs=0.005)
    meta = doc["pseudo_labels"]
    assert (meta["model"], meta["backend"], meta["questions"], meta["kept"]) == ("minilm-squad", "torch", 3, 3)


def test_the_threshold_keeps_the_confident_and_the_trainer_takes_them(unlabelled, tmp_path):
    out = tmp_path / "labelled.json"
    assert _label(unlabelled, out, 0.6) == 0
    ds = load_squad(out)
    assert [(e.id, e.answer_texts) for e in ds.examples] == [("b1", ["Robert Stevenson"]),
                                                              ("b2", ["between 1807 and 1810"])]
    assert all(has_gold(e) for e in ds.examples)
    # the evaluation-set guard reads the real evaluation sets: these contexts are none of theirs
    examples, counts = load_training_examples([str(out)], use_squad_dev=False, data_dir=data_dir())
    assert [e.id for e in examples] == ["b1", "b2"]
    assert counts[str(out)]["questions"] == 2


def test_bad_input_is_one_line_before_any_model_loads(unlabelled, tmp_path, capsys):
    out = tmp_path / "labelled.json"
    assert _label(unlabelled, out, 1.5) == 2
    assert "--min-score is a probability, between 0 and 1, not 1.5" in capsys.readouterr().err
    assert pseudo_label.main(["--model", "no-such-model", "--data", str(unlabelled), "--output", str(out)]) == 2
    assert "no-such-model" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"version": "1.1", "data": []}))
    assert pseudo_label.main(["--model", "minilm-squad", "--data", str(empty), "--output", str(out)]) == 2
    assert "no question to label" in capsys.readouterr().err
    assert not out.exists()


MLQA_DE_TEST = "eval/mlqa/test-context-de-question-de.partial.json"


@pytest.mark.needs_data(MLQA_DE_TEST)
def test_labels_of_mlqa_questions_train_only_with_their_source_named(tmp_path):
    """The module's documented route: labels made from MLQA-de's unanswered test questions are
    refused like MLQA itself, and accepted with --allow-mlqa when the source file is named too."""
    from core.training.train import TrainingDataError

    source, out = data_dir() / MLQA_DE_TEST, tmp_path / "labelled.json"
    assert pseudo_label.main(["--model", "minilm-squad", "--backend", "torch", "--data", str(source),
                              "--first", "3", "--min-score", "0", "--output", str(out)]) == 0
    with pytest.raises(TrainingDataError, match="also occur in an evaluation set"):
        load_training_examples([str(out)], use_squad_dev=False, data_dir=data_dir())
    examples, counts = load_training_examples([str(source), str(out)], use_squad_dev=False,
                                              data_dir=data_dir(), allow_mlqa=True)
    assert len(examples) == 3 and all(has_gold(e) for e in examples)
    assert counts[str(source)]["questions"] == 0       # the source itself has no answer to teach
