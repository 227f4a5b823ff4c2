"""German-paper (Satheesh et al. 2024, Table 6) perturbations: one exact, hand-checked output per id,
answer offsets in the context, "does not apply" cases, seeded determinism and definition properties."""
from __future__ import annotations

import json
import random

import pytest

from core import config
from core.perturb import registry
from core.perturb.base import PerturbationError
from core.types import Answer, QAExample

Q_EN = "When was the University of Berlin founded by the king?"
C_EN = "The University of Berlin was founded in 1810 by the Prussian king. It was built quickly."
EN = QAExample("en1", Q_EN, C_EN, (Answer("1810", C_EN.index("1810")),), lang="en")

Q_DE = "Wann wurde die Universität in Berlin gegründet?"
C_DE = "Die Humboldt-Universität zu Berlin wurde 1809 gegründet und 1810 eröffnet."
DE = QAExample("de1", Q_DE, C_DE, (Answer("1809", C_DE.index("1809")),), lang="de")

# (id, example, expected perturbed field) with rng = random.Random(0) and default params.
# Hand checks. Question words (EN): When was the University of Berlin founded by the king;
# seed 0 picks "the" (45-48; randint(1, 1) = 1, so the "h") for R and "founded" for V
# (f0 o1 u2 n3 d4 e5 d6, position 4 = the middle "d"); context: "Prussian" (P0 r1 u2 s3 s4 i5,
# position 4) for R and "built" (b0 u1 i2 l3 t4, position 2) for V - "was" is AUX, not a verb.
# German: "gegründet" (g0 e1 g2 r3 ü4 n5 d6 e7 t8, position 7) and "eröffnet" (e0 r1 ö2 f3 f4 n5,
# position 4); "wurde" is AUX. Random letters: "b" (and "ß" from the German alphabet).
EXACT = [
    # Delete the character at the position.
    ("DCRQ", EN, "When was the University of Berlin founded by te king?"),
    ("DCRC", EN, "The University of Berlin was founded in 1810 by the Prusian king. It was built quickly."),
    ("DCVQ", EN, "When was the University of Berlin founed by the king?"),
    ("DCVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was bult quickly."),
    ("DCVQ", DE, "Wann wurde die Universität in Berlin gegründt?"),
    ("DCVC", DE, "Die Humboldt-Universität zu Berlin wurde 1809 gegründet und 1810 eröfnet."),
    # Insert a random letter before it.
    ("ICRQ", EN, "When was the University of Berlin founded by tbhe king?"),
    ("ICRC", EN, "The University of Berlin was founded in 1810 by the Prusbsian king. It was built quickly."),
    ("ICVQ", EN, "When was the University of Berlin founbded by the king?"),
    ("ICVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was bubilt quickly."),
    # Repeat it.
    ("RepeatCRQ", EN, "When was the University of Berlin founded by thhe king?"),
    ("RepeatCRC", EN, "The University of Berlin was founded in 1810 by the Prusssian king. It was built quickly."),
    ("RepeatCVQ", EN, "When was the University of Berlin foundded by the king?"),
    ("RepeatCVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was buiilt quickly."),
    # Replace it with a different random letter.
    ("ReplaceCRQ", EN, "When was the University of Berlin founded by tbe king?"),
    ("ReplaceCRC", EN, "The University of Berlin was founded in 1810 by the Prusbian king. It was built quickly."),
    ("ReplaceCVQ", EN, "When was the University of Berlin founbed by the king?"),
    ("ReplaceCVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was bublt quickly."),
    ("ReplaceCVQ", DE, "Wann wurde die Universität in Berlin gegründßt?"),
    # Swap it with the next one.
    ("SCRQ", EN, "When was the University of Berlin founded by teh king?"),
    ("SCRC", EN, "The University of Berlin was founded in 1810 by the Prusisan king. It was built quickly."),
    ("SCVQ", EN, "When was the University of Berlin founedd by the king?"),
    ("SCVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was bulit quickly."),
    ("SCVC", DE, "Die Humboldt-Universität zu Berlin wurde 1809 gegründet und 1810 eröfnfet."),
    # Word level: delete (with its following space, or the preceding one before "?"), repeat, split.
    ("DRQ", EN, "When was the University of Berlin by the king?"),
    ("DRC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was quickly."),
    ("DVQ", EN, "When was the University of Berlin by the king?"),
    ("DVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was quickly."),
    ("DVQ", DE, "Wann wurde die Universität in Berlin?"),
    ("DVC", DE, "Die Humboldt-Universität zu Berlin wurde 1809 gegründet und 1810."),
    ("RepeatRQ", EN, "When was the University of Berlin founded founded by the king?"),
    ("RepeatRC", DE, "Die Humboldt-Universität zu Berlin wurde 1809 gegründet und und 1810 eröffnet."),
    ("RepeatVQ", DE, "Wann wurde die Universität in Berlin gegründet gegründet?"),
    ("RepeatVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was built built quickly."),
    ("SplitRQ", EN, "When was the University of Berlin foun ded by the king?"),  # cut 4 in [1, 6]
    ("SplitRC", DE, "Die Humboldt-Universität zu Berlin wurde 1809 gegründet un d 1810 eröffnet."),
    ("SplitVQ", DE, "Wann wurde die Universität in Berlin gegründ et?"),
    ("SplitVC", EN, "The University of Berlin was founded in 1810 by the Prussian king. It was buil t quickly."),
    # Swap word 6 ("founded") with word 7 ("by"); German: word 3 with word 4.
    ("SwapRQ", EN, "When was the University of Berlin by founded the king?"),
    ("SwapRQ", DE, "Wann wurde die in Universität Berlin gegründet?"),
    # Whole question.
    ("TLQ", EN, "when was the university of berlin founded by the king?"),
    ("TUQ", DE, "WANN WURDE DIE UNIVERSITÄT IN BERLIN GEGRÜNDET?"),
    ("TTQ", EN, "When Was The University Of Berlin Founded By The King?"),
    ("ICQ", DE, "wANN WURDE DIE uNIVERSITÄT IN bERLIN GEGRÜNDET?"),
    ("DPQ", EN, "When was the University of Berlin founded by the king"),
    ("IPQ", DE, "Wann wurde die Universit'ät in Berlin gegründet?"),   # position 24, mark "'"
    ("RUQ", DE, "Wann wurde die Universitaet in Berlin gegruendet?"),
    # QWERTZ neighbours: ü -> ö (ü: p ß ä ö).
    ("typo_Q", DE, "Wann wurde die Universität in Berlin gegröndet?"),
    ("repeat_question", EN, Q_EN + " " + Q_EN),
]


@pytest.mark.parametrize("pid, example, expected", EXACT, ids=[f"{e[0]}-{e[1].lang}" for e in EXACT])
def test_exact_output(pid, example, expected):
    p = registry.get(pid)
    variants = p.apply(example, random.Random(0))
    assert variants is not None and len(variants) == 1
    v = variants[0]
    assert v.text == expected
    assert getattr(v.example, p.field) == expected
    assert v.meta["id"] == pid and v.meta["changed"] is True
    if p.field == "context":
        assert v.example.question == example.question
        assert [v.example.context[a.answer_start:a.answer_start + len(a.text)] for a in v.example.answers] \
            == example.answer_texts
    else:
        assert v.example.context == example.context and v.example.answers == example.answers


def test_every_german_id_has_an_exact_test():
    mine = ("core.perturb.catalogue.german_character", "core.perturb.catalogue.german_word",
            "core.perturb.catalogue.german_question")
    german = {p.id for p in registry.all_perturbations() if type(p).__module__ in mine}
    assert len(german) == 20 + 13 + 9
    assert german - {pid for pid, _, _ in EXACT} == set()


def test_typo_q_other_layouts_and_rates():
    # AZERTY, rate 0.3, seed 1: W->Q, h->n, a->z, s->w, e->z, U->I, i->o, v->b, r->t, n->j, d->f, i->o;
    # each replacement is an AZERTY neighbour (w: q s x; h: b g j n u y; a: q z é; ...), case kept.
    v = registry.get("typo_Q").apply(EN, random.Random(1), layout="azerty", rate=0.3)[0]
    assert v.text == "Qnen wzw thz Inobetsity of Berlin foujdef by the kong?"
    assert v.meta["n_typos"] == 12
    # Upper-case umlauts keep their case: Ä -> Ö.
    v = registry.get("typo_Q").apply(QAExample("u", "ÄRGER", "", lang="de"), random.Random(1), rate=0.5)[0]
    assert v.text == "ÖTGWR"
    assert registry.get("typo_Q").apply(EN, random.Random(0), rate=0.0)[0].meta["changed"] is False


def test_multiple_words_and_characters():
    # n_words=2, n_chars=2: "the" has a single free position (1), so only one character changes there;
    # "king" gets positions 1 and 2 (k0 i1 n2 g3), deleted right to left: "kg".
    v = registry.get("DCRQ").apply(EN, random.Random(0), n_words=2, n_chars=2)[0]
    assert v.text == "When was the University of Berlin founded by te kg?"
    assert [(w["original"], w["positions"]) for w in v.meta["words"]] == [("the", [1]), ("king", [1, 2])]
    # Swap at positions 1 and 2 of "king", right to left: "kign" then "kgin".
    v = registry.get("SCRQ").apply(EN, random.Random(0), n_words=2, n_chars=2)[0]
    assert v.text == "When was the University of Berlin founded by teh kgin?"
    # Only one verb in the question: n_words=3 perturbs the one there is.
    v = registry.get("DVQ").apply(EN, random.Random(0), n_words=3)[0]
    assert v.meta["n_words_applied"] == 1


def test_not_applicable_returns_none():
    no_verb = QAExample("nv", "What is the capital of France?", "Paris is.", (Answer("Paris", 0),), lang="en")
    for pid in ("DCVQ", "ICVQ", "RepeatCVQ", "ReplaceCVQ", "SCVQ", "DVQ", "RepeatVQ", "SplitVQ"):
        assert registry.get(pid).apply(no_verb, random.Random(0)) is None, pid
    assert registry.get("RUQ").apply(EN, random.Random(0)) is None                  # no umlaut
    assert registry.get("TLQ").apply(QAExample("l", "who?", ""), random.Random(0)) is None
    assert registry.get("DPQ").apply(QAExample("p", "who", ""), random.Random(0)) is None
    assert registry.get("SwapRQ").apply(QAExample("s", "Who?", ""), random.Random(0)) is None
    assert registry.get("DCRQ").apply(QAExample("s", "Who is he?", ""), random.Random(0)) is not None
    assert registry.get("DCRQ").apply(QAExample("s", "Is he?", ""), random.Random(0)) is None  # all <= 2
    # Only the answer's words in the context: nothing may be touched.
    only_answer = QAExample("a", "Who?", "Berlin Berlin", (Answer("Berlin", 0),), lang="en")
    assert registry.get("DRC").apply(only_answer, random.Random(0)) is None


def test_incompatible_language_raises():
    spanish = QAExample("es", "¿Quién fundó la universidad?", "", lang="es")
    assert registry.get("DCVQ").is_compatible(spanish) is False
    with pytest.raises(PerturbationError, match="DCVQ needs a POS tagger"):
        registry.get("DCVQ").apply(spanish, random.Random(0))
    assert registry.get("DCRQ").is_compatible(spanish) is True
    japanese = QAExample("ja", "誰が大学を設立しましたか", "", lang="ja")
    assert registry.get("DRQ").is_compatible(japanese) is False


def test_bad_params_raise():
    with pytest.raises(PerturbationError, match=r"'n_words' must be in \[1, 4\]"):
        registry.get("DCRQ").apply(EN, random.Random(0), n_words=5)
    with pytest.raises(PerturbationError, match="unknown parameter"):
        registry.get("SwapRQ").apply(EN, random.Random(0), n_words=2)


def test_same_seed_same_output():
    for pid in ("ICRC", "ReplaceCVQ", "SplitRC", "SwapRQ", "IPQ", "typo_Q"):
        p = registry.get(pid)
        a = p.apply(DE, random.Random(42))[0]
        b = p.apply(DE, random.Random(42))[0]
        assert (a.text, a.edits, a.meta) == (b.text, b.edits, b.meta), pid


def test_character_operations_follow_the_definition():
    # Over many seeds: exactly one word changes, its first letter is kept, and the change is the
    # named operation at a position in [1, n-2].
    import string
    for seed in range(60):
        for op in ("D", "I", "Repeat", "Replace", "S"):
            v = registry.get(f"{op}CRQ").apply(EN, random.Random(seed))[0]
            (w,) = v.meta["words"]
            orig, new, (i,) = w["original"], w["perturbed"], w["positions"]
            assert 1 <= i <= len(orig) - 2 and new[0] == orig[0]
            if op == "D":
                assert new == orig[:i] + orig[i + 1:]
            elif op == "I":
                assert new[:i] + new[i + 1:] == orig and new[i] in string.ascii_letters
            elif op == "Repeat":
                assert new == orig[:i + 1] + orig[i:]
            elif op == "Replace":
                assert len(new) == len(orig) and new[i] != orig[i] and new[:i] + new[i + 1:] == orig[:i] + orig[i + 1:]
            else:
                assert new == orig[:i] + orig[i + 1] + orig[i] + orig[i + 2:]


def _xquad_examples(n: int) -> list[QAExample]:
    root = config.data_dir()
    path = root / "xquad" / "xquad.en.json" if root else None
    if path is None or not path.is_file():
        pytest.skip("XQuAD-en not in the data directory")
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    examples = []
    for article in data:
        for para in article["paragraphs"]:
            for qa in para["qas"][:1]:
                examples.append(QAExample(qa["id"], qa["question"], para["context"],
                                          tuple(Answer(a["text"], a["answer_start"]) for a in qa["answers"])))
                if len(examples) == n:
                    return examples
    return examples


CHAR_CONTEXT_IDS = [f"{op}C{t}C" for op in ("D", "I", "Repeat", "Replace", "S") for t in "RV"]
WORD_CONTEXT_IDS = [f"{op}{t}C" for op in ("D", "Repeat", "Split") for t in "RV"]


def test_context_perturbations_keep_answers_on_real_paragraphs():
    examples = _xquad_examples(12)
    for pid in CHAR_CONTEXT_IDS + WORD_CONTEXT_IDS:
        p = registry.get(pid)
        params = {"n_words": 4, "n_chars": 4} if pid in CHAR_CONTEXT_IDS else {"n_words": 4}
        for k, ex in enumerate(examples):
            variants = p.apply(ex, random.Random(k), **params)
            assert variants is not None, (pid, ex.id)
            new = variants[0].example
            assert new.context != ex.context
            for a in new.answers:
                assert new.context[a.answer_start:a.answer_start + len(a.text)] == a.text, (pid, ex.id)
            answer_words = {w.lower() for a in ex.answers for w in a.text.split()}
            for w in variants[0].meta["words"]:
                assert w.get("original", w.get("word")).lower() not in answer_words


def test_answer_words_elsewhere_in_context_are_not_touched():
    ctx = "Berlin is big. Many people love Berlin and its parks."
    ex = QAExample("b", "Which city?", ctx, (Answer("Berlin", 0),), lang="en")
    for seed in range(30):
        v = registry.get("DRC").apply(ex, random.Random(seed), n_words=4)[0]
        assert v.example.context.count("Berlin") == 2
