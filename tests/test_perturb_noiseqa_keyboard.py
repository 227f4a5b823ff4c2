"""NoiseQA synthetic keyboard noise (keyboard_Q) and Wikipedia misspellings (misspell_Q)."""
from __future__ import annotations

import json
import random

import jiwer
import pytest

from core import config
from core.perturb import misspellings, registry
from core.perturb.base import NotApplicable
from core.perturb.keyboards import NOISEQA_ROWWISE_QWERTY
from core.types import QAExample

Q = "When was the University of Berlin founded by the king?"
EN = QAExample("en1", Q, "ctx", lang="en")


def test_keyboard_q_exact():
    p = registry.get("keyboard_Q")
    # Seed 1 chooses 5 of the 10 tokens; each gets one letter replaced by a row-wise neighbour:
    # W->Q (w: e q; case restored), a->s (a: s), o->p (o: i p), y->u (y: t u), k->l (k: j l).
    v = p.apply(EN, random.Random(1))[0]
    assert v.text == "Qhen wss the University pf Berlin founded bu the ling?"
    assert [(c["token"], c["from"], c["to"]) for c in v.meta["changed_tokens"]] == [
        ("When", "W", "Q"), ("was", "a", "s"), ("of", "o", "p"), ("by", "y", "u"), ("king?", "k", "l")]
    # 5 substituted characters of 54; 5 substituted words of 10.
    assert (v.cer, v.wer) == (5 / 54, 0.5)
    assert p.apply(EN, random.Random(2))[0].text == "When was yhe University of Berlin founded by the king?"
    # Seed 0: the first ten draws of Random(0) are all >= 0.25, so nothing is chosen.
    v = p.apply(EN, random.Random(0))[0]
    assert v.text == Q and v.meta["changed"] is False and v.edits == []


def test_keyboard_q_definition_over_seeds():
    p = registry.get("keyboard_Q")
    tokens = Q.split()
    for seed in range(200):
        v = p.apply(EN, random.Random(seed))[0]
        new_tokens = v.text.split()
        assert len(new_tokens) == len(tokens)
        for old, new in zip(tokens, new_tokens):
            diffs = [i for i in range(len(old)) if old[i] != new[i]]
            assert len(old) == len(new) and len(diffs) <= 1
            for i in diffs:
                assert new[i].lower() in NOISEQA_ROWWISE_QWERTY[old[i].lower()]
                assert new[i].isupper() == old[i].isupper()


def test_keyboard_q_not_applicable_and_p_one():
    p = registry.get("keyboard_Q")
    assert p.apply(QAExample("n", "1963 ? a", ""), random.Random(0)) is None   # nothing eligible
    # p=1: every token longer than 1 with a letter changes; "1963" has none, so it stays.
    v = p.apply(QAExample("n", "Who won in 1963?", ""), random.Random(3), p=1.0)[0]
    assert v.meta["changed"] and len(v.edits) == 3 and v.text.split()[3] == "1963?"


def _xquad_en_questions() -> dict[str, str]:
    root = config.data_dir()
    path = root / "xquad" / "xquad.en.json" if root else None
    if path is None or not path.is_file():
        pytest.skip("XQuAD-en not in the data directory")
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return {qa["id"]: qa["question"] for a in data for para in a["paragraphs"] for qa in para["qas"]}


def test_keyboard_q_corpus_rates_match_noiseqa():
    questions = _xquad_en_questions()
    ids = sorted(questions)
    refs = [questions[i] for i in ids]
    rng, p = random.Random(0), registry.get("keyboard_Q")
    hyps = [p.apply(QAExample(i, questions[i], ""), rng)[0].text for i in ids]
    wer, cer = jiwer.wer(refs, hyps) * 100, jiwer.cer(refs, hyps) * 100
    # NoiseQA Table 3, synthetic keyboard: CER 4.1, WER 23.9.
    assert 20 <= wer <= 28 and 3 <= cer <= 6, (wer, cer)
    published = config.data_dir() / "noiseqa" / "Synthetic" / "xquad-keyboard-synthetic.json"
    if published.is_file():
        data = json.loads(published.read_text(encoding="utf-8"))["data"]
        theirs = {qa["id"]: qa["question"] for a in data for para in a["paragraphs"] for qa in para["qas"]}
        their_wer = jiwer.wer(refs, [theirs[i] for i in ids]) * 100
        their_cer = jiwer.cer(refs, [theirs[i] for i in ids]) * 100
        assert abs(wer - their_wer) < 2 and abs(cer - their_cer) < 0.5, (wer, their_wer, cer, their_cer)


def test_misspell_q_exact():
    if misspellings.data_path() is None:
        pytest.skip("no misspellings data")
    p = registry.get("misspell_Q")
    # Words with listed interface misspellings: When (whn, wehn), was, the (x2), University.
    # Each one checked against the classifier: Whn = deletion, weas = insertion, ther = insertion,
    # Universtiy = transposition, tghe = insertion; "When" -> "whn" is re-capitalised.
    v = p.apply(EN, random.Random(0))[0]
    assert v.text == "Whn weas ther Universtiy of Berlin founded by tghe king?"
    assert v.meta["n_candidates"] == 5
    assert [r["error"] for r in v.meta["replaced"]] == [
        "deletion", "insertion", "insertion", "transposition", "insertion"]
    # p=0.5: draws for When .844, was .758, the .421 (< .5: replaced, then a choice is drawn),
    # University .965, then the second "the" draws below .5: only the two "the" are replaced.
    half = p.apply(EN, random.Random(0), p=0.5)[0]
    assert half.text == "When was ther University of Berlin founded by ther king?"
    assert p.apply(QAExample("n", "Berlin king?", ""), random.Random(0)) is None


def test_misspell_q_language_and_missing_data(tmp_path, monkeypatch):
    p = registry.get("misspell_Q")
    german = QAExample("de", "Wann wurde sie gegründet?", "", lang="de")
    assert p.is_compatible(german) is False
    monkeypatch.setenv("QAX_DATA_DIR", str(tmp_path))
    assert p.is_compatible(EN) is False
    assert "misspellings/wikipedia.json under the data directory" in p.why_not(EN)
    with pytest.raises(NotApplicable, match="misspellings/wikipedia.json"):
        p.apply(EN, random.Random(0))
