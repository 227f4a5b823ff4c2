"""Noise augmentation for training (core.training.augment.augment_examples): reproducible from a seed, the old
uniform rule unchanged, weights and per-entry params honoured, round-trip MT translated in one
batch, and questions a perturbation cannot handle skipped rather than ending the run."""
import random

import pytest

from core.perturb.catalogue import translation
from core.training.augment import augment_examples, parse_augment_spec
from core.types import Answer, QAExample

CONTEXT = "The Panthers defense gave up just 308 points, ranking sixth in the league."
QUESTIONS = ["How many points did the Panthers defense surrender?", "Which rank did the Panthers defense reach?",
             "What did the Panthers defense give up?", "Who gave up just 308 points?",
             "In which league position was the defense?", "How many points were surrendered?"]


def _examples(questions=QUESTIONS):
    return [QAExample(id=f"q{i}", question=q, context=CONTEXT, answers=(Answer("308", CONTEXT.index("308")),))
            for i, q in enumerate(questions)]


@pytest.mark.needs_data("misspellings/wikipedia.json")   # misspell_Q draws from Wikipedia's list
def test_same_seed_same_questions_and_uniform_rule_kept():
    from core.perturb import registry

    ex = _examples()
    a, counts_a = augment_examples(ex, 1.0, ["keyboard_Q", "misspell_Q"], random.Random(7))
    b, counts_b = augment_examples(ex, 1.0, ["keyboard_Q", "misspell_Q"], random.Random(7))
    assert [e.question for e in a] == [e.question for e in b] and counts_a == counts_b
    assert sum(counts_a.values()) == len(a) >= 4   # misspell_Q skips a question with no listed misspelling
    # without weights the draws are those of the first augmented runs, so their commands reproduce
    rng, old = random.Random(7), []
    perturbations = [registry.get("keyboard_Q"), registry.get("misspell_Q")]
    for e in rng.sample(ex, 6):
        p = rng.choice(perturbations)
        variants = p.apply(e, rng) if p.is_compatible(e) else None
        if variants:
            old.append(variants[0].example.question)
    assert [e.question for e in a] == old


def test_weights_decide_the_share():
    ex = _examples()
    entries, weights = parse_augment_spec("keyboard_Q:weight=1000000,misspell_Q:weight=0.000001")
    added, counts = augment_examples(ex, 1.0, entries, random.Random(3), weights)
    assert counts == {"keyboard_Q": 6, "misspell_Q": 0}
    assert len(added) == 6


def test_backtranslation_is_batched_and_real():
    ex = _examples(QUESTIONS[:1])
    translation._cache.clear()
    added, counts = augment_examples(ex, 1.0, ["backtranslate_Q"], random.Random(0))
    assert counts == {"backtranslate_Q": 1}
    # Apertium (Debian), English -> Spanish -> English
    assert added[0].question == "How many points did the surrender of defence of the Panthers?"
    assert ("apertium", "en", "es", QUESTIONS[0]) in translation._cache   # prepared before apply


def test_unspeakable_question_is_skipped_not_fatal():
    pytest.importorskip("pocketsphinx")
    ex = _examples(["...", "How many points did the Panthers defense surrender?"])
    logged = []
    entries, weights = parse_augment_spec("asr_Q:engine=pocketsphinx:voice=flite:kal16")
    added, counts = augment_examples(ex, 1.0, entries, random.Random(0), weights, log=logged.append)
    assert counts == {"asr_Q(engine=pocketsphinx, voice=flite:kal16)": 1}
    assert added[0].question.startswith("how many points")
    assert any("augmentation skipped q0" in line and "no audio" in line for line in logged)


def test_bad_augment_spec_stops_training_before_any_model_loads(capsys):
    from core.training import cli as train

    with pytest.raises(SystemExit):
        train.main(["--base", "minilm", "--train", "x.json", "--output", "unused", "--augment-share", "0.3",
                    "--augment", "keyboard_Q:q=0.5"])
    assert "keyboard_Q: unknown parameter(s) ['q']" in capsys.readouterr().err
    with pytest.raises(ValueError, match="challenge set"):
        parse_augment_spec("file:noiseqa/x")
