"""Tests for core.metrics: explicit hand-checked cases (the modules' doctests run with the suite).

The SQuAD cross-checks use real SQuAD v1.1 dev items. Their gold answers are written out below
(so the hand-computed cases always run); a separate test confirms them against the dev file in
the data directory and scores the whole dev set with gold predictions (skipped without data).
"""
from __future__ import annotations

import json
import math
import warnings

import pytest

from core.config import data_dir
from core.metrics import (
    band,
    bucket_by,
    chinese,
    different_prediction_rate,
    noise_summary,
    pct_change,
    penalty_for,
    score_answer,
    squad,
    squad_scores,
    text_distance,
    total_penalty,
    word_overlap_f1,
)

# --- SQuAD v1.1 on real dev items --------------------------------------------------------------

# id -> gold answers, copied from squad/dev-v1.1.json (checked against the file below).
DEV_GOLDS = {
    "56be4db0acb8001400a502ee": [
        "Santa Clara, California",
        "Levi's Stadium",
        "Levi's Stadium in the San Francisco Bay Area at Santa Clara, California.",
    ],
    "56be8e613aeaaa14008c90d1": ['"golden anniversary"', "gold-themed", '"golden anniversary'],
    "56be8e613aeaaa14008c90d2": ["February 7, 2016", "February 7", "February 7, 2016"],
}


def test_squad_levis_stadium_partial_overlap():
    golds = DEV_GOLDS["56be4db0acb8001400a502ee"]
    prediction = "Levi's Stadium in the San Francisco Bay Area"
    # Normalised: "levis stadium in san francisco bay area" (7 tokens). Against gold 3 (11
    # tokens, all 7 shared): P 1, R 7/11, F1 = 14/18 = 7/9. Against gold 2 ("levis stadium"):
    # P 2/7, R 1, F1 4/9. Gold 1 shares nothing.
    assert squad.f1_score(prediction, golds[2]) == pytest.approx(7 / 9, abs=1e-12)
    assert squad.f1_score(prediction, golds[1]) == pytest.approx(4 / 9, abs=1e-12)
    assert squad.f1_score(prediction, golds[0]) == 0
    assert score_answer(prediction, golds, "en") == (0.0, pytest.approx(7 / 9, abs=1e-12))
    assert score_answer("Levi's Stadium.", golds, "en") == (1.0, 1.0)


def test_squad_hyphen_is_deleted_not_split():
    golds = DEV_GOLDS["56be8e613aeaaa14008c90d1"]
    assert score_answer("gold themed", golds, "en") == (0.0, 0.0)  # "gold-themed" -> "goldthemed"
    assert score_answer("goldthemed", golds, "en") == (1.0, 1.0)
    assert score_answer("the golden anniversary", golds, "en") == (1.0, 1.0)  # quotes, article dropped
    # "golden anniversary celebration": P 2/3, R 1 -> 0.8
    assert score_answer("golden anniversary celebration", golds, "en") == (0.0, pytest.approx(0.8))


def test_squad_word_order_and_max_over_golds():
    golds = DEV_GOLDS["56be8e613aeaaa14008c90d2"]
    # "7 February" vs "February 7": same bag of tokens -> F1 1, but not an exact match.
    assert score_answer("7 February", golds, "en") == (0.0, 1.0)
    # "February 2016": vs "february 7 2016" P 1, R 2/3 -> 0.8; vs "february 7" 1/2, 1/2 -> 0.5.
    assert score_answer("February 2016", golds, "en") == (0.0, pytest.approx(0.8))


def test_squad_scores_on_dev_items():
    predictions = {
        "56be4db0acb8001400a502ee": "Levi's Stadium in the San Francisco Bay Area",  # EM 0, F1 7/9
        "56be8e613aeaaa14008c90d1": "the golden anniversary",  # EM 1, F1 1
        "56be8e613aeaaa14008c90d2": "7 February",  # EM 0, F1 1
    }
    scores = squad_scores(predictions, DEV_GOLDS)
    assert scores["n"] == 3
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (7 / 9 + 1 + 1) / 3)  # 92.5925...


def test_squad_scores_unanswered_and_extra_ids():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = squad_scores({"56be8e613aeaaa14008c90d2": "February 7", "not-a-question": "x"}, DEV_GOLDS)
    assert scores == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(100 / 3), "n": 3}
    assert "2 of 3 questions have no prediction" in str(caught[0].message)


def test_squad_scores_bad_input():
    with pytest.raises(ValueError, match="no references"):
        squad_scores({}, {})
    with pytest.raises(ValueError, match="non-empty list of gold answer strings"):
        squad_scores({"q": "a"}, {"q": "a"})
    with pytest.raises(TypeError, match="prediction for question 'q' must be a str"):
        squad_scores({"q": None}, {"q": ["a"]})


def test_squad_empty_string_behaviour_matches_official_script():
    assert squad.exact_match_score("", "") is True
    assert squad.f1_score("", "") == 0
    assert squad.exact_match_score("The", "a") is True  # both normalise to ""
    assert squad.f1_score("The", "a") == 0
    assert squad.f1_score("", "Denver") == 0


def _squad_dev_path():
    root = data_dir()
    path = None if root is None else root / "squad" / "dev-v1.1.json"
    if path is None or not path.is_file():
        pytest.skip("SQuAD v1.1 dev not found in the data directory (set QAX_DATA_DIR)")
    return path


def test_dev_golds_match_the_data_file_and_gold_predictions_score_100():
    with _squad_dev_path().open(encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    references = {
        qa["id"]: [a["text"] for a in qa["answers"]]
        for article in dataset
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    }
    for qid, golds in DEV_GOLDS.items():
        assert references[qid] == golds
    first_gold = {qid: golds[0] for qid, golds in references.items()}
    assert squad_scores(first_gold, references) == {"exact_match": 100.0, "f1": 100.0, "n": 10570}


# --- Chinese character level -------------------------------------------------------------------


def test_chinese_segmentation():
    assert chinese.mixed_segmentation("DuReader数据集，2019年发布！") == [
        "dureader", "数", "据", "集", "2019", "年", "发", "布",
    ]
    assert chinese.mixed_segmentation("“苹果” iPhone X") == ["苹", "果", "iphone", "x"]
    assert chinese.normalize_answer("“苹果” iPhone X") == "苹果iphonex"
    assert chinese.mixed_segmentation("") == []


def test_chinese_scores_hand_checked():
    # LCS of "中华人民共和国" and "人民共和国成立" is "人民共和国" (5): P 5/7, R 5/7 -> 5/7.
    assert chinese.f1_score("中华人民共和国", "人民共和国成立") == pytest.approx(5 / 7)
    # Mixed: ["1949", "年", "10", "月"] vs ["1949", "年"]: LCS 2, P 2/4, R 1 -> 2/3.
    assert chinese.f1_score("1949年10月", "1949年") == pytest.approx(2 / 3)
    # "1949" is one token, so "1940" shares nothing with it.
    assert chinese.f1_score("1940年", "1949年") == pytest.approx(0.5)  # LCS "年": P 1/2, R 1/2
    assert score_answer("《三体》", ["三体", "刘慈欣的三体"], "zh") == (1.0, 1.0)
    assert score_answer("", ["三体"], "zh") == (0.0, 0.0)
    assert score_answer("。", ["！"], "zh") == (1.0, 0.0)  # both normalise to "": EM 1, F1 0


def test_lang_routing():
    # Char-level for Chinese: ["北", "京"] vs ["北", "京", "市"]: P 1, R 2/3 -> 0.8.
    assert score_answer("北京", ["北京市"], "zh-CN") == (0.0, pytest.approx(0.8))
    # SQuAD for anything else: "北京" and "北京市" are single, different whitespace tokens.
    assert score_answer("北京", ["北京市"], "en") == (0.0, 0.0)
    with pytest.raises(ValueError, match="lang must be a non-empty language code"):
        score_answer("a", ["a"], "")


def test_word_overlap_f1_beat_the_ai_threshold():
    # Model answer "the 1963 season" vs human "1963": P 1/2, R 1 -> 2/3 > 0.4: the model wins.
    assert word_overlap_f1("the 1963 season", "1963") == pytest.approx(2 / 3)
    # "in late 1963 or early 1964 season" vs "1963": P 1/7, R 1 -> 0.25 <= 0.4: the human wins.
    assert word_overlap_f1("in late 1963 or early 1964 season", "1963") == pytest.approx(0.25)
    assert word_overlap_f1("a", "b") == word_overlap_f1("b", "a") == 0.0


# --- CER / WER / BLEU --------------------------------------------------------------------------


def test_corpus_rates_are_total_edits_over_total_length_not_mean_of_rates():
    refs, hyps = ["a", "abcdefghij"], ["b", "abcdefghij"]
    assert text_distance.corpus_cer(refs, hyps) == pytest.approx(1 / 11)  # mean of rates would be 0.5
    assert text_distance.corpus_wer(["one", "two three four"], ["1", "two three four"]) == pytest.approx(1 / 4)


def test_cer_wer_keep_case_and_punctuation():
    # Synthetic ASR style: lower-cased, unpunctuated. "What is NASA?" -> "what is nasa"
    # chars: W->w, N->n, A->a, S->s, A->a, "?" deleted = 6 edits over 13 characters.
    assert text_distance.cer("What is NASA?", "what is nasa") == pytest.approx(6 / 13)
    # words: "What" -> "what", "NASA?" -> "nasa"; "is" matches: 2 of 3.
    assert text_distance.wer("What is NASA?", "what is nasa") == pytest.approx(2 / 3)


def test_noise_summary_keyboard_example():
    # One keyboard typo (QWERTY row neighbour): "year" -> "yeat".
    original = ["In what year did the Normans conquer England?"]
    noisy = ["In what yeat did the Normans conquer England?"]
    summary = noise_summary(original, noisy)
    assert summary["cer"] == pytest.approx(100 / 45)  # 1 substitution over 45 characters
    assert summary["wer"] == pytest.approx(100 / 8)  # 1 of 8 words
    # 13a tokens: 9 (the "?" splits off). Matching n-grams: 8/9, 6/8, 4/7, 3/6 (the typo breaks
    # the 1, 2, 3, 4 n-grams that contain it); no brevity penalty.
    expected = 100 * (8 / 9 * 6 / 8 * 4 / 7 * 3 / 6) ** 0.25
    assert summary["bleu"] == pytest.approx(expected)


def test_text_distance_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        noise_summary(["a"], [])
    with pytest.raises(ValueError, match="no sentence pairs"):
        noise_summary([], [])
    with pytest.raises(TypeError, match="not a single str"):
        noise_summary("abc", "abd")
    with pytest.raises(TypeError, match=r"pair 0 is not \(str, str\)"):
        noise_summary([None], ["a"])


# --- DPR and bucketing -------------------------------------------------------------------------


def test_dpr_counts_normalised_differences():
    originals = ["Denver Broncos", "the Broncos", "1963", "Paris"]
    paraphrases = ["Denver Broncos.", "Broncos", "2009", "Paris, France"]
    assert different_prediction_rate(originals, paraphrases) == 50.0
    with pytest.raises(ValueError, match="differ in length"):
        different_prediction_rate(["a"], ["a", "b"])


def test_bucket_by_edges_and_means():
    similarity = [0.0, 0.19, 0.2, 0.39, 0.4, 1.0]
    differs = [100.0, 100.0, 0.0, 100.0, 0.0, 0.0]
    buckets = bucket_by(similarity, differs, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert [b["label"] for b in buckets] == ["[0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1]"]
    assert [b["n"] for b in buckets] == [2, 2, 1, 0, 1]
    assert [b["mean"] for b in buckets] == [100.0, 50.0, 0.0, None, 0.0]
    with pytest.raises(ValueError, match="strictly increasing"):
        bucket_by([0.5], [1.0], [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="outside the bucket edges"):
        bucket_by([math.nan], [1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="differ in length"):
        bucket_by([0.5, 0.6], [1.0], [0.0, 1.0])


# --- Percentage change and penalty -------------------------------------------------------------


@pytest.mark.parametrize(
    ("clean", "perturbed", "label", "points"),
    [
        (50.0, 55.0, "(2, 10]", 1),  # +10 exactly
        (50.0, 55.5, "> 10", 1),  # +11
        (50.0, 51.0, "(0, 2]", 0),  # +2 exactly
        (80.0, 80.0, "(-2, 0]", 0),
        (50.0, 49.0, "(-10, -2]", 1),  # -2 exactly (computed exactly)
        (100.0, 98.5, "(-2, 0]", 0),  # -1.5
        (50.0, 45.0, "(-40, -10]", 2),  # -10 exactly
        (50.0, 30.0, "(-70, -40]", 3),  # -40 exactly
        (50.0, 15.0, "[-100, -70]", 4),  # -70 exactly
        (50.0, 0.0, "[-100, -70]", 4),  # -100
        (0.0, 0.0, "(-2, 0]", 0),
        (0.0, 10.0, "> 10", 1),  # from 0: +inf
    ],
)
def test_band_and_penalty_of_score_pairs(clean, perturbed, label, points):
    change = pct_change(clean, perturbed)
    assert band(change) == label
    assert penalty_for(change) == points


def test_pct_change_values_and_total_penalty():
    assert pct_change(50.0, 49.0) == -2.0
    assert pct_change(88.5, 70.8) == pytest.approx(-20.0)
    assert total_penalty(pct_change(80.0, p) for p in (80.0, 78.0, 60.0, 20.0)) == 0 + 1 + 2 + 4
    with pytest.raises(ValueError, match="non-negative finite"):
        pct_change(math.nan, 1.0)
