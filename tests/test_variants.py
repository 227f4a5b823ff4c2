"""core.explore.variants (generation, batching, table) and components.edits on hand-checked cases."""

import pytest

from components.edits import edits_html
from core import datasets
from core.explore.variants import (
    Choice,
    answer_variants,
    edit_segments,
    generate_variants,
    incompatibility_reason,
    marked_text,
    params_label,
    results_table,
    row_label,
    variant_rng,
)
from core.perturb import registry
from core.perturb.base import Edit, Perturbation
from core.perturb.compose import Composite
from core.perturb.spec import rng_for
from core.types import Answer, Prediction, QAExample, Span

EX = datasets.demo_dataset("en").examples[0]   # "When was Carrow Point Lighthouse first lit?"


def test_seed_rule_is_the_sweeps_rng_for():
    """A row's generator is core.perturb.spec.rng_for (the sweep's and make_challenge's)."""
    assert variant_rng(7, EX, Choice("DRQ"), 1).random() == rng_for(7, EX, "DRQ", 1).random()
    assert variant_rng(7, EX, Choice("DRQ"), 1).random() != variant_rng(7, EX, Choice("DRQ"), 0).random()
    chain = Choice("TLQ+keyboard_Q", {"keyboard_Q": {"p": 0.5}})
    assert variant_rng(7, EX, chain, 0).random() == rng_for(7, EX, "TLQ+keyboard_Q:p=0.5", 0).random()


def test_generate_rows_in_choice_order_deterministic_once():
    calls = []
    rows, notes = generate_variants(EX, [Choice("DRQ"), Choice("TLQ")], seed=7, repeats=2,
                                    progress=lambda d, t: calls.append((d, t)))
    assert notes == []
    assert [(r.perturbation, r.repeat) for r in rows] == [("original", None), ("DRQ", 0), ("DRQ", 1), ("TLQ", 0)]
    # DRQ deletes one random word with the whitespace before it (or after it, at the start).
    assert [r.text for r in rows] == [
        "When was Carrow Point Lighthouse first lit?",
        "When was Point Lighthouse first lit?",
        "When Carrow Point Lighthouse first lit?",
        "when was carrow point lighthouse first lit?",
    ]
    assert [round(r.wer, 4) for r in rows] == [0.0, round(1 / 7, 4), round(1 / 7, 4), round(4 / 7, 4)]
    assert rows[0].changed is False and all(r.changed for r in rows[1:])
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert [row_label(i, r) for i, r in enumerate(rows)] == ["#0 original", "#1 DRQ r0", "#2 DRQ r1", "#3 TLQ r0"]


def test_params_reach_the_perturbation_and_are_recorded():
    rows, _ = generate_variants(EX, [Choice("DCRQ", {"n_words": 2, "n_chars": 2})], seed=5, repeats=2)
    assert [r.text for r in rows[1:]] == ["When was Carrow Point Lighthouse fst lt?",
                                          "When was Carrow Pot Lighthse first lit?"]
    assert rows[1].params == {"n_words": 2, "n_chars": 2}


def test_context_variant_keeps_gold_offsets_and_question():
    rows, _ = generate_variants(EX, [Choice("DRC")], seed=3, repeats=1)
    row = rows[1]
    assert row.field == "context" and row.example.question == EX.question
    assert row.edits == [Edit(24, 31, "", "delete_word")]          # "stands " after "Lighthouse"
    assert row.text == EX.context[:24] + EX.context[31:]
    (gold,) = row.example.answers
    assert row.text[gold.answer_start:gold.answer_start + len(gold.text)] == "14 October 1871"
    assert marked_text(row.original_text, row.edits, window=20) == (
        "Carrow Point Lighthouse ⟦−stands ⟧on a granite headland…")


def test_notes_say_why_no_row():
    de = datasets.demo_dataset("de").examples[0]
    rows, notes = generate_variants(de, [Choice("paraphrase_rules_Q")], seed=0, repeats=3)
    assert len(rows) == 1
    assert [(n.perturbation, n.repeat, n.status, n.message) for n in notes] == [
        ("paraphrase_rules_Q", None, "skipped", "paraphrase_rules_Q supports languages en, not 'de'")]

    _, notes = generate_variants(EX, [Choice("RUQ")], seed=0, repeats=3)   # no umlaut: returns None
    assert [(n.perturbation, n.repeat, n.status) for n in notes] == [("RUQ", 0, "n/a")]
    assert notes[0].message == "RUQ returned no variant: RUQ replaces umlauts and ß, and this question has none"

    _, notes = generate_variants(EX, [Choice("DRQ", {"n_words": 9})], seed=0, repeats=1)
    assert [(n.status, n.message) for n in notes] == [("skipped", "DRQ: parameter 'n_words' must be in [1, 4], got 9")]


def test_chain_is_one_choice_with_step_params_and_its_own_seed():
    rows, notes = generate_variants(EX, [Choice("TLQ+keyboard_Q", {"keyboard_Q": {"p": 0.5}}), Choice("DRQ+DRC")],
                                    seed=7, repeats=2)
    # lower-case first, then keyboard noise on each word with p=0.5 (none drawn in repeat 0), one
    # generator per repeat: the sweep's (rng_for), its later step's drawn from it (step_rng)
    assert [(r.perturbation, r.repeat, r.text) for r in rows[1:]] == [
        ("TLQ+keyboard_Q", 0, "when was carrow point lighthouse first lit?"),
        ("TLQ+keyboard_Q", 1, "whem was carroq point lighthouse firdt liy?")]
    assert rows[2].text == Composite(["TLQ", "keyboard_Q"], {"keyboard_Q": {"p": 0.5}}).apply(
        EX, rng_for(7, EX, "TLQ+keyboard_Q:p=0.5", 1))[0].text
    assert marked_text(rows[2].original_text, rows[2].edits) == \
        "⟦W→w⟧he⟦n→m⟧ was ⟦C→c⟧arro⟦w→q⟧ ⟦P→p⟧oint ⟦L→l⟧ighthouse fir⟦s→d⟧t li⟦t→y⟧?"
    assert params_label(rows[1].params) == "keyboard_Q.p=0.5"
    assert [(n.perturbation, n.status, n.message) for n in notes] == [
        ("DRQ+DRC", "skipped",
         "composite steps must perturb one field, got ['context', 'question'] for ['DRQ', 'DRC']")]


def test_a_raising_perturbation_gives_an_error_note_and_others_still_run():
    class Broken(Perturbation):
        id, family, field, description, source = "broken_Q", "word", "question", "always fails", "test"

        def _apply(self, example, rng, params):
            raise RuntimeError("boom")

    catalogue = {"broken_Q": Broken(), "TUQ": registry.get("TUQ")}.__getitem__
    rows, notes = generate_variants(EX, [Choice("broken_Q"), Choice("TUQ")], 0, 2, catalogue=catalogue)
    assert [r.perturbation for r in rows] == ["original", "TUQ"]
    assert [(n.repeat, n.status, n.message) for n in notes] == [(0, "error", "RuntimeError: boom"),
                                                               (1, "error", "RuntimeError: boom")]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="repeats must be an int in 1..100, got 0"):
        generate_variants(EX, [], 0, 0)
    with pytest.raises(KeyError, match="unknown perturbation id 'nope'"):
        generate_variants(EX, [Choice("nope")], 0, 1)


def test_incompatibility_reasons():
    fr = QAExample("f", "Quand a-t-il été allumé ?", "Le phare a été allumé en 1871.", lang="fr")
    assert incompatibility_reason(registry.get("DCVQ"), fr) == (
        "DCVQ needs a POS tagger (en, de, zh, th); language 'fr' has none")
    assert incompatibility_reason(registry.get("DCRQ"), fr) is None
    assert incompatibility_reason(registry.get("TLQ"), EX) is None


class CountingEngine:
    """Answers with the first word of the context; records every predict call."""

    def __init__(self):
        self.calls = []

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        self.calls.append((list(questions), list(contexts), skip_invalid))
        if progress:
            progress(len(questions), len(questions))
        out = []
        for q, c in zip(questions, contexts):
            word = q.split()[0] if q.split() else ""   # echo the question's first word as "the answer"
            start = c.find(word) if word else -1
            out.append(Prediction([Span(word, start, start + len(word), 1.0)]) if start >= 0 else Prediction())
        return out


def test_one_predict_call_per_model_with_identical_pairs_answered_once():
    rows, _ = generate_variants(EX, [Choice("keyboard_Q"), Choice("DRQ")], seed=22, repeats=2)
    assert rows[1].text == EX.question                     # keyboard_Q r0 changed nothing
    a, b = CountingEngine(), CountingEngine()
    seen = []
    preds = answer_variants(rows, {"a": a, "b": b}, progress=lambda m, d, t: seen.append((m, d, t)))
    assert len(a.calls) == 1 and len(b.calls) == 1
    questions, contexts, skip_invalid = a.calls[0]
    assert len(questions) == 4 and skip_invalid       # 5 rows, original == keyboard_Q r0
    assert set(questions) == {r.text for r in rows}
    assert seen == [("a", 4, 4), ("b", 4, 4)]
    assert [len(p) for p in preds.values()] == [5, 5]


def test_results_table_marks_changes_and_scores_against_gold():
    ex = QAExample("x", "Who built it?", "Ann built it in 1871.", (Answer("Ann", 0),), lang="en")
    rows, _ = generate_variants(ex, [Choice("TUQ"), Choice("DRQ")], seed=3, repeats=1)
    assert [r.text for r in rows] == ["Who built it?", "WHO BUILT IT?", "Who built?"]

    def sp(t, s):
        return Prediction([Span(t, s, s + len(t), 1.0)])

    predictions = {"m": [sp("Ann", 0), sp("ann", 0), sp("1871", 16)], "n": [Prediction(), sp("Ann", 0), Prediction()]}
    table = results_table(rows, predictions, "en")
    assert [t["m: changed"] for t in table] == ["", "same", "changed"]   # "ann" == "Ann" after normalisation
    assert [t["n: changed"] for t in table] == ["", "changed", "same"]   # no answer both times: same
    assert [(t["m: EM"], t["m: F1"]) for t in table] == [(100.0, 100.0), (100.0, 100.0), (0.0, 0.0)]
    assert [t["variant (edits marked)"] for t in table] == [
        "Who built it?", "W⟦ho→HO⟧ ⟦built→BUILT⟧ ⟦it→IT⟧?", "Who built⟦− it⟧?"]
    assert [t["CER %"] for t in table] == [0.0, 69.2, 23.1]   # 9 and 3 of 13 characters
    # the answers come right after the variant, before the edit statistics and the full texts
    assert list(table[0])[:8] == ["#", "perturbation", "params", "variant (edits marked)",
                                  "m: answer", "m: changed", "m: EM", "m: F1"]
    assert list(table[0])[-3:] == ["WER %", "question", "text"]

    typed = QAExample("t", "Who built it?", "Ann built it.", lang="en")   # no gold: no EM/F1
    rows, _ = generate_variants(typed, [], 0, 1)
    (record,) = results_table(rows, {"m": [sp("Ann", 0)]}, "en")
    assert record["m: EM"] is None and record["m: F1"] is None and record["m: answer"] == "Ann"


def test_results_table_refuses_misaligned_predictions():
    rows, _ = generate_variants(EX, [Choice("TLQ")], 0, 1)
    with pytest.raises(ValueError, match="model 'm' has 1 predictions for 2 rows"):
        results_table(rows, {"m": [Prediction()]}, "en")


def test_edit_segments_and_marked_text_windows():
    text = "the quick brown fox jumps over the lazy dog"
    # windows widen to whole words; two edits whose windows overlap share one window
    assert marked_text(text, [Edit(16, 19, "cat", "r"), Edit(20, 20, "!", "i")], window=2) == \
        "…brown ⟦fox→cat⟧ ⟦+!⟧jumps…"
    # windows far apart: one gap between them; none before the start or after the end
    assert edit_segments(text, [Edit(4, 9, "", "d"), Edit(40, 43, "cat", "r")], window=1) == [
        ("text", "the "), ("edit", "quick", "", "d"), ("text", " brown"), ("gap",),
        ("text", "lazy "), ("edit", "dog", "cat", "r")]
    assert marked_text(text, [], window=3) == "the quick…"
    assert marked_text(text, []) == text
    # no space within reach (Chinese): the window stays at its size
    zh = "一二三四五六七八九十" * 4
    assert marked_text(zh, [Edit(20, 21, "X", "r")], window=2) == "…九十⟦一→X⟧二三…"


def test_edits_html_escapes_every_piece():
    out = edits_html("<script>x</script> ok", [Edit(8, 9, "<img src=y>", "replace")])
    assert "<script>" not in out and "<img" not in out
    assert "&#60;script&#62;" in out and "&#60;img␣src&#61;y&#62;" in out
    assert '<del style="' in out and ">x</del>" in out
