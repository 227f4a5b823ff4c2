"""ReplaceRQ: WordNet + encoder source (English) and the masked-LM source (tiny in-process BERT)."""
from __future__ import annotations

import random

import pytest
import torch

from core.perturb import lexicon, registry
from core.perturb.base import NotApplicable
from core.perturb.catalogue import replace_rq
from core.types import QAExample

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "founded", "established", "the",
         "company", "?", "##ed", "started", "when", "did", "it", "end"]


def ex(question: str, lang: str = "en") -> QAExample:
    return QAExample(id="q", question=question, context="ctx", lang=lang)


@pytest.fixture()
def tiny_mlm():
    """A randomly initialised 1-layer BERT whose output bias ranks: 'founded' > '##ed' > 'established'."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)})
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    model = BertForMaskedLM(config).eval()
    with torch.no_grad():
        bias = model.cls.predictions.bias
        bias.zero_()
        bias[VOCAB.index("founded")] = 100.0      # the original word: must be skipped
        bias[VOCAB.index("##ed")] = 90.0          # a continuation piece: not a whole word, skipped
        bias[VOCAB.index("established")] = 80.0   # the expected replacement
        bias[VOCAB.index("started")] = 70.0
    return lexicon.MaskedLMSource(model=model, tokenizer=tokenizer, name="tiny-bert")


def test_masked_lm_top_prediction_that_differs(tiny_mlm):
    text = "who founded the company?"
    words = tiny_mlm.predict(text, 4, 11)
    assert words[:3] == ["founded", "established", "started"]
    assert tiny_mlm.replacement(text, 4, 11) == "established"


def test_masked_lm_loads_from_a_local_directory(tiny_mlm, tmp_path):
    tiny_mlm.model.save_pretrained(tmp_path)
    tiny_mlm.tokenizer.save_pretrained(tmp_path)
    loaded = lexicon.MaskedLMSource.from_pretrained(str(tmp_path))
    assert loaded.replacement("who founded the company?", 4, 11) == "established"
    with pytest.raises(lexicon.LexiconUnavailable, match="local"):
        lexicon.MaskedLMSource.from_pretrained(str(tmp_path / "missing"))


def test_replace_rq_with_masked_lm(tiny_mlm):
    replace_rq.use_masked_lm(tiny_mlm)
    try:
        p = registry.get("ReplaceRQ")
        v = p.apply(ex("Who founded the company?"), random.Random(0))[0]
        assert v.text == "Who established the company?"
        assert v.meta["source"] == "mlm" and v.meta["model"] == "tiny-bert" and v.meta["verb"] == "founded"
        # a configured masked LM makes German compatible (HanTa finds the verb)
        assert p.is_compatible(ex("Wer gründete die Firma?", lang="de"))
    finally:
        replace_rq.use_masked_lm(None)


def test_replace_rq_wordnet_source():
    p = registry.get("ReplaceRQ")
    v = p.apply(ex("Who founded the company that built the Golden Gate Bridge in 1963?"), random.Random(0))[0]
    # seed 0 picks "built"; WordNet synonyms ranked by encoder similarity; "constructed" fits best
    assert v.text == "Who founded the company that constructed the Golden Gate Bridge in 1963?"
    assert v.meta["verb"] == "built" and v.meta["source"] == "wordnet"
    assert v.meta["candidates"][0] == "constructed" and 0.9 < v.meta["similarity"] <= 1.0
    assert p.apply(ex("What is the capital of France?"), random.Random(0)) is None  # only AUX, no VERB


def test_replace_rq_german_without_mlm_is_incompatible_with_reason(monkeypatch):
    monkeypatch.delenv(replace_rq.MLM_ENV, raising=False)
    p = registry.get("ReplaceRQ")
    e = ex("Wer gründete die Firma?", lang="de")
    assert not p.is_compatible(e)
    assert "masked language model" in p.why_not(e)
    with pytest.raises(NotApplicable, match="masked language model"):
        p.apply(e, random.Random(0))
    assert "needs a masked LM" in p.why_not(ex("Who founded it?"), {"source": "mlm"})


def test_wordnet_reader_and_inflection():
    wn = lexicon.default_wordnet()
    assert wn.synonyms("found", "VERB")[:3] == ["establish", "set up", "launch"]
    assert wn.synonyms("city", "NOUN") == ["metropolis", "urban center"]
    assert lexicon.inflect_like("founded", "establish", "VERB") == "established"
    assert lexicon.inflect_like("Begins", "commence", "VERB") == "Commences"
    assert lexicon.inflect_like("cities", "metropolis", "NOUN") == "metropolises"
    assert lexicon.inflect_like("built", "set up", "VERB") == "set up"
    # "selected" is past tense or participle: the words before decide ("were" -> participle)
    assert lexicon.inflect_like("selected", "choose", "VERB", "players were ") == "chosen"
    assert lexicon.inflect_like("selected", "choose", "VERB", "Who ") == "chose"
    assert lexicon.wordnet_substitutes("Who selected him?", 4, 12, "VERB", max_senses=1)[0].replacement == "chose"
    with pytest.raises(lexicon.LexiconUnavailable, match="wordnet-base"):
        lexicon.WordNet("/nonexistent")
