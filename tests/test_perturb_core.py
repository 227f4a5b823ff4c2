"""Perturbation core: edits and answer offsets, CER/WER, params, the registry, NLP backends,
keyboard maps and the misspelling classifier. Expected values are worked out by hand."""
from __future__ import annotations

import random
import unicodedata

import pytest

from core.perturb import keyboards, misspellings, nlp, registry
from core.perturb.base import (
    Edit,
    NotApplicable,
    Param,
    Perturbation,
    PerturbationError,
    apply_edits,
    diff_edits,
    error_rates,
    make_variant,
    make_variant_from_text,
)
from core.types import Answer, QAExample

CTX = "The cat sat on the mat."
EX = QAExample("x1", "Who sat?", CTX, (Answer("cat", 4), Answer("mat", 19)))


def answer_texts_at_offsets(example: QAExample) -> list[str]:
    return [example.context[a.answer_start:a.answer_start + len(a.text)] for a in example.answers]


# ------------------------------------------------------------------------------------ apply_edits

def test_apply_edits_shifts_answers_exactly():
    edits = [Edit(0, 3, "A", "r"), Edit(4, 4, "big ", "i"), Edit(7, 7, "!", "i"), Edit(15, 18, "", "d")]
    out = apply_edits(EX, "context", edits)
    assert out.context == "A big cat! sat on  mat."
    # "The"->"A" (-2), "big " inserted at the answer start goes before it (+4): 4 - 2 + 4 = 6.
    # "!" (+1) and deleting "the" (-3) both precede "mat": 19 - 2 + 4 + 1 - 3 = 19.
    assert [a.answer_start for a in out.answers] == [6, 19]
    assert answer_texts_at_offsets(out) == ["cat", "mat"]
    assert EX.context == CTX  # never mutated


def test_apply_edits_refuses_edit_inside_answer():
    with pytest.raises(PerturbationError, match="touches gold answer 'cat'"):
        apply_edits(EX, "context", [Edit(5, 5, "x", "i")])
    with pytest.raises(PerturbationError, match="touches gold answer 'mat'"):
        apply_edits(EX, "context", [Edit(18, 20, "", "d")])


def test_apply_edits_unprotected_maps_answer_through_edit():
    out = apply_edits(EX, "context", [Edit(5, 6, "XY", "r")], protect_answers=False)
    assert out.context == "The cXYt sat on the mat."
    assert out.answers == (Answer("cXYt", 4), Answer("mat", 20))


def test_apply_edits_rejects_overlap_and_out_of_range():
    with pytest.raises(PerturbationError, match="overlap"):
        apply_edits(EX, "question", [Edit(0, 3, "", "d"), Edit(2, 4, "", "d")])
    with pytest.raises(PerturbationError, match="past the end"):
        apply_edits(EX, "question", [Edit(7, 9, "", "d")])
    with pytest.raises(PerturbationError, match="field must be one of"):
        apply_edits(EX, "title", [])
    with pytest.raises(PerturbationError, match="0 <= start <= end"):
        Edit(3, 2, "", "d")


def test_question_edits_leave_answers_alone():
    out = apply_edits(EX, "question", [Edit(0, 3, "Which animal", "r")])
    assert out.question == "Which animal sat?"
    assert out.answers == EX.answers and out.context == CTX


def test_diff_edits_reproduce_the_new_text():
    edits = diff_edits("hello world", "Hello word", "t")
    assert edits == [Edit(0, 1, "H", "t"), Edit(9, 10, "", "t")]
    assert apply_edits(QAExample("q", "hello world", ""), "question", edits).question == "Hello word"


# -------------------------------------------------------------------------------------- metrics

def test_error_rates_hand_computed():
    # 1 substituted char of 5 ("a b c" -> "a x c"); 1 substituted word of 3.
    assert error_rates("a b c", "a x c") == (0.2, pytest.approx(1 / 3))
    # "kitten" -> "sitting": 3 char edits / 6 chars; one word, substituted.
    assert error_rates("kitten", "sitting") == (0.5, 1.0)
    assert error_rates("", "") == (0.0, 0.0)
    assert error_rates("", "x") == (float("inf"), float("inf"))
    assert error_rates("a b", "") == (1.0, 1.0)


class _Toy(Perturbation):
    id = "toy_Q"
    family = "character"
    field = "question"
    description = "test perturbation"
    source = "tests"
    parameters = (Param("n", 1, min=1, max=4), Param("rate", 0.5, min=0.0, max=1.0),
                  Param("layout", "qwerty", choices=("qwerty", "qwertz")))

    def _apply(self, example, rng, params):
        return None


def test_make_variant_cer_wer_and_meta():
    # "Who sat?" (8 chars, 2 words) -> "Who sit?": one substituted char, one substituted word.
    v = make_variant(_Toy(), EX, "question", [Edit(5, 6, "i", "x")], {"k": 1})
    assert v.text == "Who sit?"
    assert (v.cer, v.wer) == (0.125, 0.5)
    assert v.meta == {"id": "toy_Q", "k": 1, "changed": True}


def test_resolve_params_validates():
    toy = _Toy()
    assert toy.resolve_params({"n": 3, "rate": 1}) == {"n": 3, "rate": 1.0, "layout": "qwerty"}
    with pytest.raises(PerturbationError, match="unknown parameter"):
        toy.resolve_params({"m": 1})
    with pytest.raises(PerturbationError, match=r"'n' must be in \[1, 4\]"):
        toy.resolve_params({"n": 5})
    with pytest.raises(PerturbationError, match="'n' must be int"):
        toy.resolve_params({"n": 1.5})
    with pytest.raises(PerturbationError, match="'layout' must be one of"):
        toy.resolve_params({"layout": "dvorak"})


# ------------------------------------------------------------------------------------- registry

P1_IDS = (
    [f"{op}C{t}{f}" for op in ("D", "I", "Repeat", "Replace", "S") for t in "RV" for f in "QC"]
    + [f"{op}{t}{f}" for op in ("D", "Repeat", "Split") for t in "RV" for f in "QC"]
    + ["SwapRQ", "TLQ", "TUQ", "TTQ", "ICQ", "DPQ", "IPQ", "RUQ", "typo_Q", "repeat_question",
       "keyboard_Q", "misspell_Q"]
)


def test_registry_discovers_catalogue_modules():
    ids = {p.id for p in registry.all_perturbations()}
    assert len(P1_IDS) == 20 + 12 + 12
    assert set(P1_IDS) <= ids
    assert registry.get("DCRQ").field == "question" and registry.get("DCRC").field == "context"
    assert registry.get("SCVC").target == "V"
    assert registry.get("typo_Q") in registry.by_family()["keyboard"]


def test_registry_rejects_duplicates_and_unknown_ids():
    class FakeTLQ(_Toy):
        id = "TLQ"

    with pytest.raises(ValueError, match="duplicate perturbation id 'TLQ'"):
        registry.register(FakeTLQ)
    assert type(registry.get("TLQ")).__name__ == "TLQ"
    with pytest.raises(KeyError, match="unknown perturbation id 'nope'"):
        registry.get("nope")
    with pytest.raises(TypeError, match="expects a Perturbation"):
        registry.register(object())


# ------------------------------------------------------------------------------------------ nlp

def test_english_pos_and_entities():
    tokens = nlp.pos_tag("Who founded Harvard University in Boston?", "en")
    assert [(t.text, t.pos) for t in tokens][:2] == [("Who", "PRON"), ("founded", "VERB")]
    assert {t.text: t.ent for t in tokens}["Boston"] == "LOC"
    assert nlp.analyse("Who?", "en").warning is None


def test_german_pos_with_hanta():
    tokens = nlp.pos_tag("Wann wurde die Universität gegründet?", "de")
    assert [(t.text, t.pos, t.start) for t in tokens] == [
        ("Wann", "ADV", 0), ("wurde", "AUX", 5), ("die", "DET", 11), ("Universität", "NOUN", 15),
        ("gegründet", "VERB", 27), ("?", "PUNCT", 36)]
    assert nlp.analyse("Wann?", "de").backend == "hanta"


def test_words_keep_their_combining_marks():
    """Hindi's vowel signs and virama and Arabic's harakat are combining marks: inside a word, not
    between words (XQuAD-hi's first question was cut into 13 pieces, "कितने" into "क" and "तन")."""
    hi = "पैंथर्स डिफ़ेंस ने कितने अंक दिए?"
    assert [hi[s:e] for s, e in nlp.word_spans(hi, "hi")] == ["पैंथर्स", "डिफ़ेंस", "ने", "कितने", "अंक", "दिए"]
    ar = "ماذا وجد العلماء أيضاً؟"
    assert [ar[s:e] for s, e in nlp.word_spans(ar, "ar")] == ["ماذا", "وجد", "العلماء", "أيضاً"]
    assert [t.text for t in nlp.analyse(hi, "hi").tokens][-2:] == ["दिए", "?"]
    ex = QAExample("q", hi, "डिफ़ेंस ने 308 अंक दिए।", [Answer("308", 11)], lang="hi")
    words = set(hi.rstrip("?").split())
    for seed in range(5):   # SwapRQ swaps two whole words, DRQ deletes one
        swapped = registry.get("SwapRQ").apply(ex, random.Random(seed))[0].text
        assert set(swapped.rstrip("?").split()) == words and swapped != hi
        kept = registry.get("DRQ").apply(ex, random.Random(seed), n_words=1)[0].text.rstrip("?").split()
        assert len(kept) == len(words) - 1 and set(kept) < words


def test_thai_words_and_tags_with_pythainlp():
    """Thai is segmented and tagged by PyThaiNLP (before: "needs a word segmenter" for 34 word and
    character perturbations): XQuAD-th's first question in its words, question words as pronouns."""
    q = "ทีมรับของแพนเธอร์สยอมแพ้ที่คะแนนเท่าไร"
    tokens = nlp.pos_tag(q, "th")
    assert [(t.text, t.pos) for t in tokens] == [
        ("ทีม", "NOUN"), ("รับ", "VERB"), ("ของ", "ADP"), ("แพน", "NOUN"), ("เธอร์ส", "NOUN"), ("ยอมแพ้", "NOUN"),
        ("ที่", "SCONJ"), ("คะแนน", "NOUN"), ("เท่าไร", "PRON")]
    assert [q[s:e] for s, e in nlp.word_spans(q, "th")] == [t.text for t in tokens]
    ex = QAExample("q", q, "ทีมรับยอมแพ้ 308 คะแนน", [Answer("308", 13)], lang="th")
    words = [t.text for t in tokens]
    for seed in range(5):
        deleted = registry.get("DRQ").apply(ex, random.Random(seed))[0].meta["words"][0]["word"]
        assert deleted in words
        split = registry.get("SplitRQ").apply(ex, random.Random(seed), n_words=4)[0].text
        assert all(not unicodedata.category(part[0]).startswith("M") for part in split.split(" "))


def test_chinese_pos_with_jieba():
    tokens = nlp.pos_tag("北京大学是哪一年成立的？", "zh")
    assert [(t.text, t.pos, t.ent) for t in tokens] == [
        ("北京大学", "PROPN", "ORG"), ("是", "VERB", ""), ("哪一年", "PRON", ""), ("成立", "VERB", ""),
        ("的", "PART", ""), ("？", "PUNCT", "")]
    assert nlp.word_spans("北京大学是哪一年成立的？", "zh") == [(0, 4), (4, 5), (5, 8), (8, 10), (10, 11)]


def test_heuristic_fallback_says_so():
    analysis = nlp.analyse("Quién fundó la Universidad?", "es")
    assert analysis.backend == "heuristic"
    assert "no POS tagger for language 'es'" in analysis.warning
    assert [t.pos for t in analysis.tokens] == ["X", "X", "X", "PROPN", "PUNCT"]
    with pytest.raises(ValueError, match="no word segmenter for language 'ja'"):
        nlp.word_spans("こんにちは", "ja")


def test_stts_mapping():
    assert [nlp.stts_to_upos(t) for t in ("VV(PP)", "VA(FIN)", "VM(INF)", "NN", "NE", "$.")] == [
        "VERB", "AUX", "AUX", "NOUN", "PROPN", "PUNCT"]


# ------------------------------------------------------------------------------------ keyboards

def test_noiseqa_map_is_the_row_wise_qwerty_map():
    rowwise: dict[str, set[str]] = {}
    for row in ("qwertyuiop", "asdfghjkl", "zxcvbnm"):
        for i, ch in enumerate(row):
            rowwise[ch] = {row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)}
    assert {k: set(v) for k, v in keyboards.NOISEQA_ROWWISE_QWERTY.items()} == rowwise
    assert keyboards.NOISEQA_ROWWISE_QWERTY["e"] == ("r", "w")  # order as printed in the paper


def test_full_adjacency_maps():
    qwerty, qwertz, azerty = (keyboards.neighbours(name) for name in ("qwerty", "qwertz", "azerty"))
    assert qwerty["s"] == ("a", "d", "e", "w", "x", "z")
    assert qwerty["q"] == ("a", "w") and qwerty["m"] == ("j", "k", "n")
    assert qwertz["z"] == ("g", "h", "t", "u") and qwertz["y"] == ("a", "s", "x")
    assert qwertz["ü"] == ("p", "ß", "ä", "ö") and qwertz["ö"] == ("l", "p", "ä", "ü")
    assert qwertz["ä"] == ("ö", "ü") and qwertz["ß"] == ("p", "ü")
    assert azerty["a"] == ("q", "z", "é") and azerty["m"] == ("l", "p", "ù") and azerty["w"] == ("q", "s", "x")
    for layout in (qwerty, qwertz, azerty):
        assert all(key in layout[n] for key in layout for n in layout[key])  # symmetric
    assert len(qwerty) == 26 and len(qwertz) == 30 and len(azerty) == 31
    with pytest.raises(ValueError, match="unknown keyboard layout 'dvorak'"):
        keyboards.neighbours("dvorak")


# --------------------------------------------------------------------------------- misspellings

@pytest.mark.parametrize("correct, typo, expected", [
    ("the", "teh", "transposition"),
    ("which", "wich", "deletion"),
    ("and", "anbd", "insertion"),
    ("the", "tje", "adjacent_substitution"),      # h and j are neighbours
    ("Cat", "cst", "adjacent_substitution"),      # case ignored; a and s are neighbours
    ("cat", "cpt", None),                         # a and p are not
    ("definitely", "definately", None),           # i -> a keeps the sound: not an interface error
    ("the", "hten", None),                        # two errors
    ("which", "whlch", None),                     # i -> l, not adjacent
    ("the", "The", None),                         # no error at all
])
def test_classify_interface_error(correct, typo, expected):
    assert misspellings.classify_interface_error(correct, typo) == expected


def test_invert_interface_misspellings():
    raw = {"teh": ["the"], "definately": ["definitely"], "definitly": ["definitely"],
           "Capetown": ["Cape Town"], "hten": ["the"], "tje": ["the"]}
    assert misspellings.invert_interface_misspellings(raw) == {
        "definitely": ("definitly",), "the": ("teh", "tje")}
    with pytest.raises(ValueError, match="must be a list"):
        misspellings.invert_interface_misspellings({"teh": "the"})


def test_wikipedia_table_filtered():
    if misspellings.data_path() is None:
        pytest.skip("no data directory with misspellings/wikipedia.json")
    table = misspellings.load_interface_misspellings()
    # Raw list: the <- hten teh tghe ther thge tje tjhe; "hten" is two errors.
    assert table["the"] == ("teh", "tghe", "ther", "thge", "tje", "tjhe")
    # definitely <- definately definatly definetly definitly: only "definitly" (deletion of e) stays.
    assert table["definitely"] == ("definitly",)
    assert table["which"] == ("whcih", "whic", "whihc", "wich")  # "hwihc", "whlch" dropped


def test_missing_misspellings_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        misspellings.load_interface_misspellings(tmp_path / "nope.json")


# ------------------------------------------------------------------------------ the apply template


class _Echo(Perturbation):
    """Returns what it is told to: to see what the template does around ``_apply``."""

    id = "echo_Q"
    family = "case"
    field = "question"
    languages = ("en",)
    description = "test perturbation"
    source = "tests"
    parameters = (Param("texts", "A?|A?|B?", "variant texts, | between them"), Param("n", 1, min=1, max=3))

    def __init__(self):
        self.calls = []

    def _why_not(self, example, params):
        return "n=3 is refused here" if params["n"] == 3 else None

    def _apply(self, example, rng, params):
        self.calls.append(params)
        if params["texts"] == "":
            return []
        if params["texts"] == "context":
            return [make_variant(self, example, "context", [Edit(0, 0, "So: ", "insert")])]
        return [make_variant_from_text(self, example, "question", t) for t in params["texts"].split("|")]


def test_template_resolves_once_asks_why_not_and_dedupes():
    echo = _Echo()
    variants = echo(EX, random.Random(0))
    assert [v.text for v in variants] == ["A?", "B?"]          # the repeated "A?" is dropped
    assert echo.calls == [{"texts": "A?|A?|B?", "n": 1}]         # resolved params, defaults filled
    assert echo.apply(EX, random.Random(0), texts="") is None    # no variant: None
    with pytest.raises(TypeError, match="Variants of its field 'question'"):
        echo.apply(EX, random.Random(0), texts="context")
    assert echo.why_not(EX, {"n": 3}) == "n=3 is refused here" and echo.is_compatible(EX)
    with pytest.raises(NotApplicable, match="n=3 is refused here"):
        echo.apply(EX, random.Random(0), n=3)
    german = QAExample("g", "Wer?", "Er.", lang="de")
    assert echo.why_not(german) == "echo_Q supports languages en, not 'de'"
    with pytest.raises(NotApplicable, match="supports languages en"):
        echo.apply(german, random.Random(0))
    with pytest.raises(PerturbationError, match=r"'n' must be in \[1, 3\]"):
        echo.why_not(EX, {"n": 4})
    assert len(echo.calls) == 3                                  # _apply never ran on a refused call


def test_declarations_are_the_one_source_of_parameters():
    assert _Toy.default_params == {"n": 1, "rate": 0.5, "layout": "qwerty"}
    assert _Toy.param_ranges == {"n": (1, 4), "rate": (0.0, 1.0), "layout": ("qwerty", "qwertz")}
    assert list(_Toy.config_spec()) == ["n", "rate", "layout"]
    with pytest.raises(TypeError, match="declare parameters"):
        type("Legacy", (_Toy,), {"default_params": {"n": 2}})
    with pytest.raises(TypeError, match="implement _apply instead"):
        type("Override", (_Toy,), {"apply": lambda self, example, rng, **params: None})
    with pytest.raises(TypeError, match="distinct names"):
        type("Twice", (_Toy,), {"parameters": (Param("n", 1), Param("n", 2))})
    with pytest.raises(PerturbationError, match="must be in"):
        Param("n", 5, min=1, max=4)              # a default outside its own bounds
    with pytest.raises(TypeError, match="choices are for str"):
        Param("n", 1, choices=(1, 2))


def test_every_registered_parameter_says_what_it_does():
    declared = [(p.id, q) for p in registry.all_perturbations() for q in p.parameters]
    assert len(declared) >= 70
    assert [(pid, q.name) for pid, q in declared if not q.help] == []
    # ReplaceRQ's model folder is the one parameter a browser form must not offer
    assert [(pid, q.name) for pid, q in declared if q.names_a_resource] == [("ReplaceRQ", "mlm_model")]


def test_the_language_table_in_data_md_is_what_the_code_does():
    """docs/DATA.md's "What each XQuAD language gets": each cell from the code it describes."""
    import re
    from pathlib import Path

    from core.metrics.rules import scoring_rule
    from core.perturb.catalogue.artefacts import NER_LANGUAGES
    from core.perturb.repair import SPELLCHECK_LANGUAGES
    from core.perturb.targets import can_tag_verbs

    text = (Path(__file__).resolve().parents[1] / "docs" / "DATA.md").read_text(encoding="utf-8")
    section = text.split("## What each XQuAD language gets", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| [a-z]{2} \|", line)]
    assert [r[0] for r in rows] == ["ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"]
    backends = {"en": "spaCy", "de": "HanTa", "zh": "jieba", "th": "PyThaiNLP"}
    for lang, words, classes, entities, keyboard, spelling, scoring in rows:
        assert nlp.can_segment(lang)
        assert words == (backends[lang] if lang in nlp.UNSEGMENTED_LANGUAGES else "spaces"), lang
        assert classes == (backends[lang] if can_tag_verbs(lang) else "—"), lang
        assert entities == (backends[lang] if lang in NER_LANGUAGES else "—"), lang
        assert keyboard == keyboards.LAYOUT_NAMES[keyboards.layout_for(lang)], lang
        assert spelling == ("yes" if lang in SPELLCHECK_LANGUAGES else "—"), lang
        assert scoring == scoring_rule(lang).name, lang
