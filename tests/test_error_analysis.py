"""Error analysis on a stored sweep: repair_Q and chains, the repair table, slices, calibration, CLI.

The fixture sweep is built here: four hand-written questions over two contexts, a hand-written
noisy challenge file (typos a context repair can undo), and a lookup-table engine whose answers
and scores are chosen per question, so every figure below is worked out by hand.
"""
from __future__ import annotations

import random

import pytest

from core.datasets import Dataset
from core.perturb import registry
from core.perturb.base import NotApplicable
from core.perturb.repair import repair_question, repair_with_context, spellcheck
from core.perturb.spec import SpecError, parse_specs
from core.sweeps.analysis.calibration import calibration_table, coverage_curve, score_samples
from core.sweeps.analysis.repair import repair_table
from core.sweeps.analysis.slices import SliceError, slice_cells, slice_examples
from core.sweeps.cli import main
from core.sweeps.config import SweepConfig
from core.sweeps.running.resolve import resolve_spec
from core.sweeps.running.run import run_sweep
from core.types import Answer, Prediction, QAExample, Span

CTX0 = "Peyton Manning was the quarterback of the Denver Broncos. The Broncos won Super Bowl 50 in February 2016."
CTX1 = "Gustave Eiffel built the tower in 1889. " + "It is made of iron and stands in Paris. " * 20


def _ex(qid: str, question: str, context: str, answer: str) -> QAExample:
    return QAExample(qid, question, context, (Answer(answer, context.index(answer)),))


EXAMPLES = [
    _ex("q0", "Who was the quarterback of the Broncos?", CTX0, "Peyton Manning"),
    _ex("q1", "When did the Broncos win Super Bowl 50?", CTX0, "February 2016"),
    _ex("q2", "When was the tower built?", CTX1, "1889"),
    _ex("q3", "What is the tower made of?", CTX1, "iron"),
]
NOISY = {"q0": "Who was the quartreback of the Broncos?", "q1": "When did the Broncso win Super Bowl 50?",
         "q2": "When was the tower built?", "q3": "What is the towr made of?"}
TOY = Dataset("toy", "en", EXAMPLES)


class TableEngine:
    """Answers from a table: question -> (answer text, score); unknown questions get no span."""

    fingerprint = "table-1"

    def __init__(self, table: dict[str, tuple[str, float]]):
        self.table = table

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = []
        for q, c in zip(questions, contexts):
            if q not in self.table:
                out.append(Prediction())
                continue
            text, score = self.table[q]
            i = c.index(text)
            out.append(Prediction([Span(text, i, i + len(text), score)]))
        return out


# Clean questions: all right, score 1. Noisy: q0 unanswered, q1 wrong (0.2), q2 right (0.9), q3 right (0.6).
TABLE = {**{ex.question: (ex.answers[0].text, 1.0) for ex in EXAMPLES},
         NOISY["q1"]: ("Denver Broncos", 0.2), NOISY["q3"]: ("iron", 0.6)}
TABLE[NOISY["q2"]] = ("1889", 0.9)   # q2's "noisy" question is its clean one: this sets its score everywhere
FILE = "file:noiseqa/toy-keyboard-synthetic"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("ea")
    data = root / "data"
    (data / "noiseqa").mkdir(parents=True)
    Dataset("noisy", "en", [QAExample(ex.id, NOISY[ex.id], ex.context, ex.answers) for ex in EXAMPLES]) \
        .to_squad_json(data / "noiseqa" / "toy-keyboard-synthetic.json")
    db = root / "s.sqlite"
    config = SweepConfig("toy", [f"{FILE},{FILE}+repair_Q,repair_Q"], ["table"], name="toy")
    run_sweep(config, {"table": TableEngine(TABLE)}, db, dataset=TOY, data_dir=data)
    return db


# ----------------------------------------------------------------------------------- repair itself


def test_repair_keeps_hyphenated_words_and_numbers():
    # the earlier bugs, on real XQuAD-style text
    context = "The airline is government-owned and flew its 4th route in 1960 with the new jets."
    r = repair_with_context("Is the airline government-owned?", context, "en", "content")
    assert r.text == "Is the airline government-owned?" and r.changes == []
    r = repair_with_context("What was the 4th route?", context, "en", "all")
    assert r.text == "What was the 4th route?"
    r = repair_with_context("Is the airlnie govermnent-owned?", context, "en", "content")
    assert r.text == "Is the airline government-owned?"
    assert [(c.old, c.new) for c in r.changes] == [("airlnie", "airline"), ("govermnent-owned", "government-owned")]


def test_repair_question_modes_spellcheck_and_question_mark():
    context = "Peyton Manning was the quarterback of the Denver Broncos."
    r = repair_question("who was the quartreback of the Bronocs", context, "en", "content", question_mark=True)
    assert r.text == "who was the quarterback of the Broncos?"
    assert [c.reason for c in r.changes] == ["closest context word, CER 0.18", "closest context word, CER 0.29",
                                             "added the final question mark"]
    # entities only: the misspelt common noun stays, the name is repaired
    r = repair_question("who was the quartreback of the Bronocs", context, "en", "entities")
    assert r.text in ("who was the quartreback of the Broncos", "who was the quartreback of the Bronocs")
    # spellcheck alone, and it leaves words of the context alone even if its dictionary lacks them
    r = repair_question("who was the quartreback of the Broncos", context, "en", "none", spellcheck_words=True)
    assert r.text == "who was the quarterback of the Broncos"
    assert spellcheck("Manning teh ball", "en").text == "Manning the ball"
    with pytest.raises(ValueError, match="mode must be one of"):
        repair_question("q", "c", mode="nouns")


def test_repair_q_perturbation_returns_unchanged_questions_too():
    p = registry.get("repair_Q")
    ex = EXAMPLES[0]
    (v,) = p.apply(ex, random.Random(0))
    assert v.text == ex.question and v.meta["changed"] is False and v.edits == []
    noisy = QAExample("x", NOISY["q0"], ex.context, ex.answers)
    (v,) = p.apply(noisy, random.Random(0), mode="content")
    assert v.text == ex.question and v.meta["changes"][0]["old"] == "quartreback"
    with pytest.raises(NotApplicable, match="written without spaces"):   # the apply template's protocol
        p.apply(QAExample("t", "これは何ですか", "文脈", (), lang="ja"), random.Random(0))


# ------------------------------------------------------------------------------------------ chains


def test_chain_specs_parse_and_route_parameters():
    specs = parse_specs("keyboard_Q:p=0.5+repair_Q:mode=all|entities, file:noiseqa/x+repair_Q")
    assert [(s.id, s.params_dict) for s in specs] == [
        ("keyboard_Q+repair_Q", {"p": 0.5, "mode": "all"}), ("keyboard_Q+repair_Q", {"p": 0.5, "mode": "entities"}),
        ("file:noiseqa/x+repair_Q", {})]
    assert all(s.is_chain and not s.is_file for s in specs)
    # a "+" inside a value is not a step: espeak-ng's voice variants are written en-us+f3
    (voice,) = parse_specs("asr_Q:voice=espeak-ng:en-us+f3")
    assert (voice.id, voice.params_dict, voice.is_chain) == ("asr_Q", {"voice": "espeak-ng:en-us+f3"}, False)
    resolved = resolve_spec(specs[0], 2, registry.get, TOY)
    assert resolved.params == {"keyboard_Q.p": 0.5, "repair_Q.mode": "all", "repair_Q.spellcheck": False,
                               "repair_Q.question_mark": False, "repair_Q.max_cer": 0.5}
    assert (resolved.label, resolved.family, resolved.randomised, resolved.repeats) == (
        "keyboard_Q+repair_Q(mode=all, p=0.5)", "keyboard", True, 2)
    with pytest.raises(SpecError, match="no step accepts parameter 'n_chars'"):
        resolve_spec(parse_specs("keyboard_Q+repair_Q:n_chars=2")[0], 1, registry.get, TOY)
    with pytest.raises(SpecError, match="only be the first"):
        resolve_spec(parse_specs("repair_Q+file:noiseqa/x")[0], 1, registry.get, TOY)
    with pytest.raises(SpecError, match="cannot repeat"):
        parse_specs("repair_Q+repair_Q")


def test_chain_first_step_draws_as_on_its_own():
    from core.sweeps.keys import example_hash

    alone = resolve_spec(parse_specs("keyboard_Q")[0], 1, registry.get, TOY)
    chain = resolve_spec(parse_specs("keyboard_Q+repair_Q:mode=none")[0], 1, registry.get, TOY)
    for ex in EXAMPLES:
        h = example_hash(ex)
        for repeat in range(3):
            a = alone.make(ex, alone.rng(h, 7, repeat))
            c = chain.make(ex, chain.rng(h, 7, repeat))
            assert a.example.question == c.example.question   # repair with nothing on changes nothing


# ------------------------------------------------------------------------------------ repair table


def test_repair_table_pairs_repaired_with_noisy(swept):
    rows = {(r["noise"], r["setting"]): r for r in repair_table(swept, "toy")}
    r = rows[("file:toy-keyboard-synthetic", "content")]
    # noisy: q0 0, q1 0, q2 1, q3 1; repaired: the content repair restores all four originals
    assert (r["interface"], r["kind"], r["N"], r["clean F1"], r["noisy F1"], r["repaired F1"], r["gain"]) == (
        "keyboard", "synthetic", 4, 100.0, 50.0, 100.0, 50.0)
    assert r["changed %"] == 75.0 and r["ci95_low"] == 0.0 and r["ci95_high"] == 100.0
    # On the clean questions the rule hurts: the tagger reads "win" in "When did the Broncos win Super
    # Bowl 50?" as a noun, absent from the context, and "repairs" it to "won" (CER 0.33): the engine
    # has no answer for that question, so q1 drops from 1 to 0.
    clean = rows[("clean", "content")]
    assert (clean["N"], clean["noisy F1"], clean["repaired F1"], clean["gain"], clean["changed %"]) == (
        4, 100.0, 75.0, -25.0, 25.0)
    assert rows[("clean", "content")]["significant"] is False


# ------------------------------------------------------------------------------------------- slices


def _cell(cells, group, label):
    (c,) = [c for c in cells if c.group == group and c.label == label]
    return c


def test_slice_counts_and_scores_by_wh_word(swept):
    cells = slice_cells(swept, "toy", "wh")
    assert list(dict.fromkeys(c.group for c in cells)) == ["what", "who", "when"]
    noisy = "file:toy-keyboard-synthetic"
    assert [(g, _cell(cells, g, noisy).n, _cell(cells, g, noisy).f1) for g in ("who", "when", "what")] == [
        ("who", 1, 0.0), ("when", 2, 50.0), ("what", 1, 100.0)]
    assert [_cell(cells, g, "clean").n for g in ("who", "when", "what")] == [1, 2, 1]
    rows = slice_examples(swept, "toy", "wh", "when", "table", FILE, "{}")
    assert [r["example_id"] for r in rows] == ["q1", "q2"]   # largest F1 loss first


def test_slice_groups_by_answer_length_overlap_and_cer(swept):
    answer = slice_cells(swept, "toy", "answer")
    assert {c.group: c.n for c in answer if c.label == "clean"} == {"person": 1, "date": 2, "other": 1}
    qlen = slice_cells(swept, "toy", "qlen")
    assert {c.group: c.n for c in qlen if c.label == "clean"} == {"1-6": 2, "7-10": 2}
    clen = slice_cells(swept, "toy", "clen")
    assert {c.group: c.n for c in clen if c.label == "clean"} == {"1-99": 2, "150-199": 2}
    overlap = slice_cells(swept, "toy", "overlap")
    # q0 5/6, q1 5/8 (won, not win), q2 3/5, q3 5/6 of the question's words are in the context
    assert {c.group: c.n for c in overlap if c.label == "clean"} == {"50-70%": 2, "70-90%": 2}
    cer = [c for c in slice_cells(swept, "toy", "cer") if c.label == FILE[5:].replace("noiseqa/", "file:")]
    # q2 unchanged; q3 drops one letter of 26 (3.8%); q0 and q1 swap two letters of 39 (5.1%)
    assert {c.group: (c.n, c.f1) for c in cer if c.n} == {"unchanged": (1, 100.0), "<=5%": (1, 100.0),
                                                          "5-10%": (2, 0.0)}
    with pytest.raises(SliceError, match="unknown slice"):
        slice_cells(swept, "toy", "colour")


# -------------------------------------------------------------------------------------- calibration


def test_calibration_threshold_keeping_90_percent_of_clean_f1(swept):
    pts = score_samples(swept, "toy", "table", FILE, "{}")
    assert sorted(pts["perturbed"]) == [(0.0, 0.0), (0.2, 0.0), (0.6, 1.0), (0.9, 1.0)]
    assert [r["coverage"] for r in coverage_curve(pts["perturbed"])] == [25.0, 50.0, 75.0, 100.0]
    (row,) = [r for r in calibration_table(swept, "toy") if r["perturbation"] == FILE]
    assert (row["clean F1"], row["F1"], row["threshold"], row["coverage %"], row["answered F1"]) == (
        100.0, 50.0, 0.6, 50.0, 100.0)
    assert row["clean mean score"] == 0.975 and row["mean score"] == 0.425


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_show_views(swept, capsys):
    assert main(["--show", "toy", "--db", str(swept), "--repair"]) == 0
    out = capsys.readouterr().out
    assert "keyboard (synthetic) file:toy-keyboard-synthetic, table" in out
    assert "content  N    4  clean 100.0  noisy  50.0  repaired 100.0  gain +50.00 [+0.00, +100.00]" in out
    assert main(["--show", "toy", "--db", str(swept), "--slice", "wh"]) == 0
    assert "when   100.0 (2)  50.0 (2)" in capsys.readouterr().out
    assert main(["--show", "toy", "--db", str(swept), "--calibration"]) == 0
    assert "0.6000" in capsys.readouterr().out
    assert main(["--show", "toy", "--db", str(swept), "--slice", "colour"]) == 2
    assert "unknown slice 'colour'" in capsys.readouterr().err
    assert main(["--db", str(swept), "--repair"]) == 2
