"""Padding counts (issue 47, item 3): what the engine's sorted, per-batch padding computes on
padding, against per-batch padding in input order and padding to the window size."""
from __future__ import annotations

import pytest

from core.qa.engine import EngineSettings, QAEngine
from core.qa.padding import count_padding

# The tiny model's tokenizer has one token per word: a window is [CLS] question [SEP] context [SEP].
PAIRS = [("who", "paris ."),                                                   # 3 + 1 + 2 = 6 tokens
         ("what is the capital of france ?", "paris is the capital of france ."),  # 3 + 7 + 7 = 17
         ("who", "the city has a population of one two three people ."),       # 3 + 1 + 11 = 15
         ("when", "berlin")]                                                   # 3 + 1 + 1 = 5
LENGTHS = [6, 17, 15, 5]


def test_counts_by_strategy_on_a_hand_built_batch():
    # batches of 2 in input order: (6, 17) pads 11, (15, 5) pads 10; sorted: (5, 6) pads 1, (15, 17) 2
    assert count_padding(LENGTHS, 2, "per_batch", 64).as_dict() == {"real": 43, "padded": 21, "batches": 2,
                                                                     "share": 21 / 64}
    assert (count_padding(LENGTHS, 2, "sorted", 64).padded, count_padding(LENGTHS, 2, "sorted", 64).total) == (3, 46)
    assert count_padding(LENGTHS, 2, "max_length", 64).padded == 4 * 64 - 43
    with pytest.raises(ValueError, match="unknown padding strategy"):
        count_padding(LENGTHS, 2, "bucketed", 64)


def test_engine_counts_the_padding_it_computes(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    engine = QAEngine(AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
                      AutoTokenizer.from_pretrained(tiny_qa_dir),
                      EngineSettings(max_length=64, stride=16, batch_size=2, backend="torch"))
    assert engine.padding.total == 0
    engine.predict([q for q, _ in PAIRS], [c for _, c in PAIRS])
    assert (engine.padding.real, engine.padding.padded, engine.padding.batches) == (43, 3, 2)
    engine.predict(["who"], ["paris ."])   # one window alone: nothing padded; the counts add up
    assert (engine.padding.real, engine.padding.padded, engine.padding.batches) == (49, 3, 3)
