"""Each language is scored as its benchmark's official script scores it (issue 57, item 6c):
Korean by KorQuAD 1.0's evaluate-v1.0.py (characters), Chinese by CMRC 2018's script (characters,
longest common substring), every other language by SQuAD's evaluate-v1.1.py (words). Every value
below was worked out by hand from the scripts' definitions (core/metrics/korean.py, chinese.py,
squad.py quote them), not by running our code."""
from __future__ import annotations

import json

import pytest

from core.datasets import load_squad
from core.metrics import corpus_scorer, korean_scores, score_answer, scoring_rule

# (prediction, gold, KorQuAD EM, KorQuAD F1), by hand:
KOREAN = [
    # chars 서울에서 vs 서울: shared 서, 울 = 2; P 2/4, R 2/2, F1 2·(1/2)·1/(3/2) = 2/3 (SQuAD words: 0)
    ("서울에서", "서울", 0.0, 2 / 3),
    # 《》 become spaces: "훈민정음 을"; chars 5 vs 4, shared 4: P 4/5, R 1, F1 8/9
    ("《훈민정음》을", "훈민정음", 0.0, 8 / 9),
    # EM keeps the inner space ("서울 특별시" != "서울특별시"); F1 drops it: the same 5 characters
    ("서울 특별시", "서울특별시", 0.0, 1.0),
    # "," is ASCII punctuation, deleted: "1443년" both
    ("1,443년", "1443년", 1.0, 1.0),
    # no article removal in KorQuAD: "the beatles" (10 chars) vs "beatles" (7), all 7 shared: P 7/10, F1 14/17
    ("The Beatles", "Beatles", 0.0, 14 / 17),
    # a multiset of characters, not a sequence: the same two characters in another order
    ("울서", "서울", 0.0, 1.0),
]


@pytest.mark.parametrize("prediction, gold, em, f1", KOREAN)
def test_korean_answers_score_as_korquad_does(prediction, gold, em, f1):
    got_em, got_f1 = score_answer(prediction, [gold], "ko")
    assert got_em == em and got_f1 == pytest.approx(f1, abs=1e-12)


def test_korean_corpus_score_and_the_word_level_score_it_replaces():
    predictions = {str(i): p for i, (p, *_rest) in enumerate(KOREAN)}
    references = {str(i): [g] for i, (_p, g, *_rest) in enumerate(KOREAN)}
    name, scorer = corpus_scorer("ko")
    scores = scorer(predictions, references)
    # EM 1 of 6; F1 (2/3 + 8/9 + 1 + 1 + 14/17 + 1) / 6 = 0.8965141...
    assert name == "korquad-char"
    assert scores == pytest.approx({"exact_match": 100 / 6, "f1": 100 * (2 / 3 + 8 / 9 + 3 + 14 / 17) / 6, "n": 6})
    assert scores == korean_scores(predictions, references)
    # SQuAD's word-level script on the same answers: only 1443년 and The Beatles (its article dropped)
    # match, EM and F1 1 each; the other four share no whole word: EM and F1 (0 + 0 + 0 + 1 + 1 + 0) / 6
    squad = corpus_scorer("en")[1](predictions, references)
    assert squad == pytest.approx({"exact_match": 200 / 6, "f1": 200 / 6, "n": 6})


def test_chinese_answers_score_as_cmrc_does():
    # CMRC 2018: one token per character, F1 from the longest common substring (not a bag):
    # 北京的奥运会 vs 北京奥运会: longest common run 奥运会 = 3; P 3/6, R 3/5, F1 6/11
    em, f1 = score_answer("北京的奥运会", ["北京奥运会"], "zh")
    assert em == 0.0 and f1 == pytest.approx(6 / 11)
    # 2008年北京奥运会 (7 tokens: 2008 年 北 京 奥 运 会) vs 北京奥运会: run 5; P 5/5, R 5/7, F1 5/6
    assert score_answer("北京奥运会", ["2008年北京奥运会"], "zh") == (0.0, pytest.approx(5 / 6))


def test_each_language_names_its_rule_and_script():
    got = {lang: (scoring_rule(lang).name, scoring_rule(lang).script) for lang in ("ko", "zh", "de", "en", None)}
    assert got == {"ko": ("korquad-char", "KorQuAD 1.0 evaluate-v1.0.py"),
                   "zh": ("chinese-char", "CMRC 2018 cmrc2018_evaluate.py"),
                   "de": ("squad-v1.1", "SQuAD evaluate-v1.1.py"),
                   "en": ("squad-v1.1", "SQuAD evaluate-v1.1.py"),
                   None: ("squad-v1.1", "SQuAD evaluate-v1.1.py")}
    # German is scored with words, as XQuAD's authors score it: "Berlin Mitte" vs "Berlin" = 2/3
    assert score_answer("Berlin Mitte", ["Berlin"], "de") == (0.0, pytest.approx(2 / 3))


def test_a_korquad_file_is_korean_and_scored_by_characters(tmp_path):
    doc = {"version": "KorQuAD_v1.0_dev", "data": [{"title": "세종", "paragraphs": [{
        "context": "세종대왕은 1443년에 훈민정음을 창제하였다.",
        "qas": [{"id": "k1", "question": "훈민정음은 언제 창제되었나?",
                 "answers": [{"text": "1443년", "answer_start": 6}]}]}]}]}
    path = tmp_path / "KorQuAD_v1.0_dev.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    ds = load_squad(path)
    assert (ds.lang, ds.lang_source) == ("ko", "from the file name")
    assert corpus_scorer(ds.lang)[0] == "korquad-char"
