"""Sweeps: storage schema, caching, resume after SIGKILL, aggregation math, drill-down, reports.

Two kinds of model:
  * ``FakeEngine``: answers from a lookup table (question -> answer text), so every score and
    aggregate below is computed by hand;
  * a tiny randomly initialised BERT (built here, seed 0): real engine code, meaningless but
    deterministic answers, enough to test caching and resume.
"""
from __future__ import annotations

import dataclasses
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from stored_rows import rows_done

from core.datasets import Dataset, DatasetError, demo_dataset, load_dataset, sample_examples
from core.perturb.spec import PerturbationSpec, SpecError, parse_specs
from core.sweeps import cli_text
from core.sweeps.analysis import sweep_cells
from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.analysis.traps import find_trap, sentence_spans
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.running.run import run_sweep
from core.sweeps.store import Store, StoreError
from core.types import Answer, Prediction, QAExample, Span

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ models


class FakeEngine:
    """Answers each question with a fixed text found in the context; unknown questions get no span."""

    def __init__(self, answers: dict[str, str], fingerprint: str = "fake-1"):
        self.answers = answers
        self.fingerprint = fingerprint
        self.calls = 0
        self.asked: list[tuple[str, str]] = []

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        self.calls += 1
        out = []
        for q, c in zip(questions, contexts):
            self.asked.append((q, c))
            a = self.answers.get(q)
            if a is None or a not in c:
                out.append(Prediction())
                continue
            i = c.index(a)
            out.append(Prediction([Span(a, i, i + len(a), 1.0)]))
        return out


class CountingEngine:
    """Wraps a real engine and records every predict call and pair."""

    def __init__(self, engine):
        from core.sweeps.keys import engine_fingerprint

        self.engine = engine
        self.fingerprint = engine_fingerprint(engine)
        self.calls = 0
        self.pairs: list[tuple[str, str]] = []

    def predict(self, questions, contexts, **kw):
        self.calls += 1
        self.pairs += list(zip(questions, contexts))
        return self.engine.predict(questions, contexts, **kw)


def build_tiny_model(folder: Path):
    """A 2-layer BERT QA model (hidden 32) with a vocabulary of a few hundred lowercase words."""
    import torch
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast

    words = set()
    for ex in demo_dataset("en").examples:
        words.update(re.findall(r"[a-z]+|[0-9]+", (ex.question + " " + ex.context).lower()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + list(".,?!'-")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    model = BertForQuestionAnswering(config)
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return len(vocab)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_sweep_model")
    assert build_tiny_model(folder) > 200
    return folder


def load_tiny(folder: Path):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from core.qa.engine import EngineSettings, QAEngine

    return QAEngine(AutoModelForQuestionAnswering.from_pretrained(folder), AutoTokenizer.from_pretrained(folder),
                    EngineSettings(threads=1), device="cpu")


@pytest.fixture(scope="module")
def tiny_engine(tiny_dir):
    return load_tiny(tiny_dir)


# ------------------------------------------------------------------------------------------- data


def ex(i, question, context, answer):
    return QAExample(f"q{i}", question, context, (Answer(answer, context.index(answer)),))


EXAMPLES = [
    ex(1, "What is the capital of France?", "Paris is the capital of France.", "Paris"),
    ex(2, "When was the tower built?", "The tower was built in 1889.", "1889"),
    ex(3, "Which river flows through London?", "The river Thames flows through London.", "Thames"),
    ex(4, "How many people live in Berlin?", "Berlin has a population of three million people.",
       "three million"),
    ex(5, "Who built the palace in Würzburg?", "The palace in Würzburg was built by Balthasar Neumann.",
       "Balthasar Neumann"),
]
TOY = Dataset("toy", "en", EXAMPLES)

# Clean: q1-q4 right, q5 half right ("Neumann": P 1, R 1/2, F1 2/3, EM 0).
# TUQ (upper case): q1, q2 right; q3 "river Thames" (F1 2/3, EM 0); q4 "Berlin" and q5 "palace" wrong.
# RUQ applies to q5 only ("Wuerzburg"), answered right. drop_qmark_Q: same answers as clean.
ANSWERS = {
    "What is the capital of France?": "Paris", "When was the tower built?": "1889",
    "Which river flows through London?": "Thames", "How many people live in Berlin?": "three million",
    "Who built the palace in Würzburg?": "Neumann",
    "WHAT IS THE CAPITAL OF FRANCE?": "Paris", "WHEN WAS THE TOWER BUILT?": "1889",
    "WHICH RIVER FLOWS THROUGH LONDON?": "river Thames", "HOW MANY PEOPLE LIVE IN BERLIN?": "Berlin",
    "WHO BUILT THE PALACE IN WÜRZBURG?": "palace",
    "Who built the palace in Wuerzburg?": "Balthasar Neumann",
    "What is the capital of France": "Paris", "When was the tower built": "1889",
    "Which river flows through London": "Thames", "How many people live in Berlin": "three million",
    "Who built the palace in Würzburg": "Neumann",
}


def toy_run(db, specs="TUQ,RUQ,drop_qmark_Q", engine=None, **kw):
    engine = engine or FakeEngine(ANSWERS)
    config = SweepConfig("toy", parse_specs(specs), ["fake"], **{k: v for k, v in kw.items()
                                                                 if k in ("repeats", "seed", "sample", "name")})
    run = run_sweep(config, {"fake": engine}, db, dataset=TOY,
                    **{k: v for k, v in kw.items() if k in ("chunk_size", "cancel", "progress")})
    return run, engine


# ------------------------------------------------------------------------------------------- specs


def test_parse_specs_expands_ranges_lists_and_files():
    specs = parse_specs("TLQ, DCRQ:n_chars=1..3:n_words=1|2 ,file:noiseqa/Synthetic/x.json")
    assert [str(s) for s in specs] == (
        ["TLQ"] + [f"DCRQ(n_chars={c}, n_words={w})" for c in (1, 2, 3) for w in (1, 2)]
        + ["file:noiseqa/Synthetic/x"])
    assert parse_specs("typo_Q:rate=0.2:layout=qwerty")[0].params_dict == {"rate": 0.2, "layout": "qwerty"}
    # voice ids hold colons: only ":key=" starts a new parameter
    voices = parse_specs("asr_Q:voice=flite:slt|espeak-ng:en-us+f3:engine=pocketsphinx")
    assert [s.params_dict for s in voices] == [
        {"voice": "flite:slt", "engine": "pocketsphinx"},
        {"voice": "espeak-ng:en-us+f3", "engine": "pocketsphinx"}]
    with pytest.raises(SpecError, match="key=value"):
        parse_specs("DCRQ:n_chars")
    with pytest.raises(SpecError, match="empty range"):
        parse_specs("DCRQ:n_chars=3..1")
    with pytest.raises(SpecError, match="no perturbations"):
        parse_specs(" , ")


def test_unknown_perturbation_or_parameter_is_a_clear_error(tmp_path):
    with pytest.raises(SweepError, match="unknown perturbation id 'NOPE'"):
        toy_run(tmp_path / "s.sqlite", "NOPE")
    with pytest.raises(SweepError, match="unknown parameter"):
        toy_run(tmp_path / "s.sqlite", "TUQ:n_words=2")
    with pytest.raises(SweepError, match="no engine for model"):
        run_sweep(SweepConfig("toy", ["TUQ"], ["a", "b"]), {"a": FakeEngine({})}, tmp_path / "s.sqlite",
                  dataset=TOY)


def test_sample_is_seeded_and_nested():
    examples = demo_dataset("en").examples
    five, eight = sample_examples(examples, 5, 0), sample_examples(examples, 8, 0)
    assert len(five) == 5 and set(five) < set(eight)
    assert [e.id for e in five] == [e.id for e in examples if e in five]  # data set order
    assert sample_examples(examples, 5, 0) == five
    assert sample_examples(examples, 5, 1) != five
    assert sample_examples(examples, None, 0) == list(examples)


def test_load_dataset_names():
    assert load_dataset("demo.en").name == "demo.en"
    with pytest.raises(DatasetError, match="neither a file nor found"):
        load_dataset("no/such/set", data_dir=REPO / "assets")


# ------------------------------------------------------------------------------------------ storage


def test_schema_rows_and_view(tmp_path):
    db = tmp_path / "s.sqlite"
    run, _ = toy_run(db)
    assert (run.status, run.total_units, run.done_units) == ("done", 5 * (1 + 3), 20)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {"contexts", "examples", "variants", "predictions", "sweeps", "sweep_examples", "sweep_models",
            "sweep_specs", "clean_results", "results", "result_rows"} <= tables
    assert conn.execute("SELECT COUNT(*) FROM clean_results").fetchone()[0] == 5
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 15
    assert conn.execute("SELECT status, COUNT(*) FROM results WHERE perturbation = 'RUQ' GROUP BY status "
                        "ORDER BY status").fetchall() == [("n/a", 4), ("ok", 1)]
    view_cols = [r[1] for r in conn.execute("PRAGMA table_info(result_rows)")]
    for col in ("sweep", "model", "perturbation", "params_json", "seed", "repeat", "example_id",
                "original_question", "variant_text", "answer", "span_start", "span_end", "score", "em",
                "f1", "lang", "clean_answer", "clean_f1"):
        assert col in view_cols
    row = conn.execute("SELECT variant_text, answer, span_start, span_end, em, f1, clean_answer, clean_f1, lang, "
                       "seed, repeat FROM result_rows WHERE perturbation = 'TUQ' AND example_id = 'q3'").fetchone()
    assert row[:6] == ("WHICH RIVER FLOWS THROUGH LONDON?", "river Thames", 4, 16, 0.0, pytest.approx(2 / 3))
    assert row[6:] == ("Thames", 1.0, "en", None, 0)  # deterministic: no seed
    # Identical (question, context) pairs share one cached prediction: drop_qmark_Q's questions
    # are new, TUQ's too; RUQ adds one. 5 clean + 5 TUQ + 5 drop_qmark + 1 RUQ.
    assert conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] == 16


def test_store_rejects_other_schema_version(tmp_path):
    db = tmp_path / "s.sqlite"
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 999"):
        Store(db)


# ------------------------------------------------------------------------------------- aggregation


def test_cells_percent_change_band_penalty_hand_computed(tmp_path):
    db = tmp_path / "s.sqlite"
    run, _ = toy_run(db)
    by_label = {c.label: c for c in sweep_cells.cells(db, run.name)}
    tuq = by_label["TUQ"]
    # clean F1 over q1..q5 = (1 + 1 + 1 + 1 + 2/3) / 5; TUQ F1 = (1 + 1 + 2/3 + 0 + 0) / 5
    assert tuq.n == 5 and tuq.n_repeats == 1 and tuq.n_not_applicable == 0
    assert tuq.clean_f1 == pytest.approx(100 * (14 / 3) / 5)
    assert tuq.f1 == pytest.approx(100 * (8 / 3) / 5)
    assert tuq.f1_pct == pytest.approx(-300 / 7)          # (8/3 - 14/3) / (14/3) = -3/7
    assert (tuq.f1_band, tuq.f1_penalty) == ("(-70, -40]", 3)
    assert tuq.f1_drop == pytest.approx(40.0)
    assert (tuq.clean_em, tuq.em, tuq.em_pct) == (80.0, 40.0, -50.0)
    assert (tuq.em_band, tuq.em_penalty) == ("(-70, -40]", 3)
    ruq = by_label["RUQ"]                                  # only q5 has an umlaut
    assert (ruq.n, ruq.n_not_applicable) == (1, 4)
    assert ruq.clean_f1 == pytest.approx(200 / 3) and ruq.f1 == 100.0
    assert ruq.f1_pct == pytest.approx(50.0) and (ruq.f1_band, ruq.f1_penalty) == ("> 10", 1)
    assert (ruq.clean_em, ruq.em, ruq.em_pct, ruq.em_penalty) == (0.0, 100.0, float("inf"), 1)
    qmark = by_label["drop_qmark_Q"]
    assert (qmark.f1_pct, qmark.f1_band, qmark.f1_penalty) == (0.0, "(-2, 0]", 0)
    assert sweep_cells.penalty_totals(list(by_label.values()), "f1") == {"fake": 4}
    assert sweep_cells.penalty_totals(list(by_label.values()), "em") == {"fake": 4}
    assert sweep_cells.clean_scores(db, run.name) == {"fake": {"em": 80.0, "f1": pytest.approx(280 / 3), "n": 5}}
    text = cli_text.format_report(StoredSweep(db, run.name))
    assert "penalty total (F1) fake: 4" in text
    # long labels are printed whole, and the columns stay aligned
    long_cell = dataclasses.replace(tuq, label="asr_Q(engine=pocketsphinx, voice=espeak-ng:en-gb-scotland)")
    table = cli_text.format_table([tuq, long_cell]).splitlines()
    assert "voice=espeak-ng:en-gb-scotland)" in table[3]
    assert table[0].index(" N ") == table[2].index(" 5 ") == table[3].index(" 5 ")


def test_repeats_are_averaged_per_repeat_then_over_repeats(tmp_path):
    """Per-repeat means first, then their mean (not the pooled mean of all rows)."""
    import random

    from core.perturb.base import Perturbation, make_variant_from_text

    class CoinUpper(Perturbation):
        id, family, field, description, source = "coin_upper", "case", "question", "test", "test"
        randomised = True

        def _apply(self, example, rng: random.Random, params):
            if rng.random() < 0.4:
                return None
            return [make_variant_from_text(self, example, "question", example.question.upper())]

    db = tmp_path / "s.sqlite"
    config = SweepConfig("toy", [PerturbationSpec("coin_upper")], ["fake"], repeats=4, seed=3)
    run = run_sweep(config, {"fake": FakeEngine(ANSWERS)}, db, dataset=TOY,
                    catalogue=lambda pid: {"coin_upper": CoinUpper()}[pid])
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT r.repeat, r.f1, c.f1 FROM results r JOIN clean_results c USING "
                        "(sweep_id, model, example_hash) WHERE r.status = 'ok'").fetchall()
    per_repeat = {}
    for rep, f1, clean in rows:
        per_repeat.setdefault(rep, []).append((f1, clean))
    sizes = sorted(len(v) for v in per_repeat.values())
    assert len(per_repeat) == 4 and sizes[0] != sizes[-1]   # seed 3 gives unequal N per repeat
    expected = sum(100 * sum(f for f, _ in v) / len(v) for v in per_repeat.values()) / 4
    pooled = 100 * sum(f for _, f, _ in rows) / len(rows)
    cell = sweep_cells.cells(db, run.name)[0]
    assert cell.f1 == pytest.approx(expected) and cell.f1 != pytest.approx(pooled)
    assert cell.n_repeats == 4 and cell.f1_repeat_sd is not None
    # the same seed gives the same variants; another seed other ones
    again = tmp_path / "again.sqlite"
    run_sweep(config, {"fake": FakeEngine(ANSWERS)}, again, dataset=TOY,
              catalogue=lambda pid: {"coin_upper": CoinUpper()}[pid])
    status = "SELECT key, status FROM variants ORDER BY key"
    assert sqlite3.connect(again).execute(status).fetchall() == conn.execute(status).fetchall()


def test_drill_down_sorted_by_f1_loss(tmp_path):
    db = tmp_path / "s.sqlite"
    run, _ = toy_run(db)
    rows = sweep_cells.cell_examples(db, run.name, "fake", "TUQ")
    assert [r["example_id"] for r in rows] == ["q4", "q5", "q3", "q1", "q2"]
    assert [r["f1_loss"] for r in rows] == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0, 0.0])
    q4 = rows[0]
    assert q4["original_question"] == "How many people live in Berlin?"
    assert q4["variant_question"] == "HOW MANY PEOPLE LIVE IN BERLIN?"
    assert (q4["clean_answer"], q4["answer"], q4["golds"]) == ("three million", "Berlin", ["three million"])
    assert q4["context"][q4["clean_start"]:q4["clean_end"]] == "three million"
    assert q4["context"][q4["span_start"]:q4["span_end"]] == "Berlin"
    assert q4["perturbed_context"] is None
    assert [r["example_id"] for r in sweep_cells.cell_examples(db, run.name, "fake", "TUQ", limit=2)] == ["q4", "q5"]
    with_na = sweep_cells.cell_examples(db, run.name, "fake", "RUQ", include_not_applicable=True)
    assert [r["status"] for r in with_na] == ["ok", "n/a", "n/a", "n/a", "n/a"]


def test_dpr_and_similarity_buckets(tmp_path):
    db = tmp_path / "s.sqlite"
    run, _ = toy_run(db)
    table = sweep_cells.dpr_table(db, run.name, families=None, perturbations=["TUQ"])
    # TUQ changes the answer of q3, q4, q5 (q3: "river Thames" vs "Thames" differ under EM)
    assert table == [{"model": "fake", "perturbation": "TUQ", "params_json": "{}", "n": 5, "dpr": 60.0},
                     {"model": "fake", "perturbation": "(all)", "params_json": "", "n": 5, "dpr": 60.0}]
    assert sweep_cells.dpr_table(db, run.name) == []            # no paraphrase-family spec in this sweep
    buckets = sweep_cells.dpr_by_similarity(db, run.name, edges=(0, 0.5, 1), families=None,
                                       perturbations=["TUQ", "drop_qmark_Q"])["fake"]
    # upper-casing and dropping "?" leave SQuAD tokens unchanged: similarity 1 for all 10 pairs
    assert [(b["n"], b["mean"]) for b in buckets] == [(0, None), (10, 30.0)]
    traps = sweep_cells.f1_by_trap_similarity(db, run.name)
    assert traps["with_trap"] + traps["without_trap"] == 5


def test_penalty_table_over_n(tmp_path):
    db = tmp_path / "s.sqlite"
    # The fake engine knows none of the character-perturbed questions: F1 0 everywhere -> -100 %, penalty 4.
    run, _ = toy_run(db, "DCRQ:n_chars=1..2,ICRQ:n_chars=1..2,TUQ")
    table = sweep_cells.penalty_table(db, run.name)
    assert table == {"param": "n_chars", "ns": [1, 2], "rows": {"fake": {1: 8, 2: 8}}, "cells": {1: 2, 2: 2}}
    assert sweep_cells.penalty_table(db, run.name, param="n_words")["rows"] == {"fake": {1: 16}}


def test_traps():
    context = "The tower was built in 1889. The bridge was built in 1901 by the city. It is tall."
    assert [context[s:e] for s, e in sentence_spans(context)] == [
        "The tower was built in 1889.", "The bridge was built in 1901 by the city.", "It is tall."]
    for lang in ("en", "xx"):  # spaCy NER, and the heuristic fallback (no tagger for "xx")
        trap = find_trap(context, "When was the tower built?", "1889", context.index("1889"), lang)
        assert trap is not None and trap.entity == "1901"
        assert trap.sentence == "The bridge was built in 1901 by the city."
        assert trap.similarity == pytest.approx(4 / 11)    # 2 shared tokens: P 2/7, R 2/4
    assert find_trap(context, "What is it?", "tall", context.index("tall"), "xx") is None  # untyped answer


# ----------------------------------------------------------------------------------- caching / resume


def test_second_run_makes_no_model_calls(tmp_path, tiny_engine):
    db = tmp_path / "s.sqlite"
    dataset = demo_dataset("en")
    config = SweepConfig("demo.en", parse_specs("TLQ,keyboard_Q,DCRQ"), ["tiny"], repeats=2, sample=6)
    first = CountingEngine(tiny_engine)
    run1 = run_sweep(config, {"tiny": first}, db, dataset=dataset, chunk_size=8)
    assert first.calls > 0 and run1.predictions_computed == len(set(first.pairs))
    assert run1.done_units == run1.total_units == 6 * (1 + 1 + 2 + 2)
    cells1 = [c.as_dict() for c in sweep_cells.cells(db, run1.name)]

    again = CountingEngine(tiny_engine)   # same sweep: already done
    assert run_sweep(config, {"tiny": again}, db, dataset=dataset).resumed_units == run1.total_units
    renamed = CountingEngine(tiny_engine)  # same work as a new sweep: everything from the caches
    config.name = "copy"
    run2 = run_sweep(config, {"tiny": renamed}, db, dataset=dataset)
    assert again.calls == renamed.calls == 0 and run2.predictions_computed == 0
    assert run2.variants_computed == 0 and run2.done_units == run1.total_units
    assert [c.as_dict() for c in sweep_cells.cells(db, "copy")] == cells1

    # Extending (one more repeat, more examples) only asks the model about pairs it never saw.
    bigger = CountingEngine(tiny_engine)
    config.name, config.repeats, config.sample = "bigger", 3, 9
    run3 = run_sweep(config, {"tiny": bigger}, db, dataset=dataset)
    assert bigger.calls > 0 and not set(bigger.pairs) & set(first.pairs)
    assert run3.done_units == 9 * (1 + 1 + 3 + 3)
    names = [s["name"] for s in sweep_cells.list_sweeps(db)]
    assert names == [run1.name, "copy", "bigger"]
    with pytest.raises(SweepError, match="different configuration"):
        config.repeats = 4
        run_sweep(config, {"tiny": CountingEngine(tiny_engine)}, db, dataset=dataset)


def test_cancel_between_chunks_then_resume(tmp_path):
    db = tmp_path / "s.sqlite"
    cancel = threading.Event()
    seen = []

    def progress(done, total):
        seen.append(done)
        if done >= 4:
            cancel.set()

    run, _ = toy_run(db, chunk_size=2, cancel=cancel, progress=progress)
    assert run.status == "cancelled" and 4 <= run.done_units < run.total_units
    assert sweep_cells.list_sweeps(db)[0]["status"] == "cancelled"
    engine = FakeEngine(ANSWERS)
    resumed, _ = toy_run(db, chunk_size=2, engine=engine)
    assert resumed.status == "done" and resumed.resumed_units == run.done_units
    # only the pairs not answered before the cancel were asked
    assert len(engine.asked) == len(set(engine.asked)) < 16
    fresh, _ = toy_run(tmp_path / "fresh.sqlite")
    assert ([c.as_dict() for c in sweep_cells.cells(db, resumed.name)]
            == [c.as_dict() for c in sweep_cells.cells(tmp_path / "fresh.sqlite", fresh.name)])


class BlockingEngine(FakeEngine):
    """A FakeEngine whose first call waits until ``go`` is set (``waiting`` says it has begun)."""

    def __init__(self, answers):
        super().__init__(answers)
        self.waiting, self.go = threading.Event(), threading.Event()

    def predict(self, *args, **kwargs):
        self.waiting.set()
        assert self.go.wait(60)
        return super().predict(*args, **kwargs)


def test_a_sweep_this_process_runs_is_not_started_twice(tmp_path):
    """Two browser sessions of one server starting the same configuration: the second is refused
    while the first runs, and may resume it once it has stopped."""
    db, blocking = tmp_path / "s.sqlite", BlockingEngine(ANSWERS)
    first: dict = {}
    thread = threading.Thread(target=lambda: first.update(run=toy_run(db, engine=blocking, chunk_size=2)[0]))
    thread.start()
    try:
        assert blocking.waiting.wait(60)
        with pytest.raises(SweepError, match="is already running on this server .another browser tab or session.; "
                                             "follow it on the Sweeps page"):
            toy_run(db)
    finally:
        blocking.go.set()
        thread.join(60)
    assert first["run"].status == "done"
    again, engine = toy_run(db)              # stopped: the same configuration runs (nothing left to do)
    assert again.status == "done" and again.resumed_units == first["run"].total_units and engine.calls == 0


WORKER = """
import sys, time
sys.path.insert(0, {repo!r})
from transformers import AutoModelForQuestionAnswering, AutoTokenizer
from core.datasets import demo_dataset
from core.qa.engine import EngineSettings, QAEngine
from core.perturb.spec import parse_specs
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep

model_dir, db, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
engine = QAEngine(AutoModelForQuestionAnswering.from_pretrained(model_dir),
                  AutoTokenizer.from_pretrained(model_dir), EngineSettings(threads=1), device="cpu")
predict = engine.predict

def slow_predict(*args, **kwargs):  # slow enough that the parent can kill it mid-sweep
    time.sleep(delay)
    return predict(*args, **kwargs)

engine.predict = slow_predict
config = SweepConfig("demo.en", parse_specs({specs!r}), ["tiny"], repeats=2, seed=5)
run_sweep(config, {{"tiny": engine}}, db, dataset=demo_dataset("en"), chunk_size=3)
print("finished")
"""
KILL_SPECS = "TLQ,keyboard_Q,DCRQ"


def test_resume_after_sigkill_gives_the_same_numbers(tmp_path, tiny_dir):
    db = tmp_path / "killed.sqlite"
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(repo=str(REPO), specs=KILL_SPECS))
    proc = subprocess.Popen([sys.executable, str(script), str(tiny_dir), str(db), "0.25"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while rows_done(db) <= 12:   # the clean phase (12 rows) and one perturbed chunk committed
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the worker never committed a chunk"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)   # mid-sweep, between or during chunks
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    total = 12 * (1 + 1 + 2 + 2)
    killed_at = rows_done(db)
    assert 12 < killed_at < total
    [killed] = sweep_cells.list_sweeps(db)
    # it never got to say otherwise, but its process is gone: listed as interrupted, not running
    assert (killed["stored_status"], killed["status"]) == ("running", "interrupted")
    assert killed["owner"] == f"pid {proc.pid} on {socket.gethostname()}"

    engine = load_tiny(tiny_dir)
    config = SweepConfig("demo.en", parse_specs(KILL_SPECS), ["tiny"], repeats=2, seed=5)
    resumed = run_sweep(config, {"tiny": engine}, db, dataset=demo_dataset("en"), chunk_size=3)
    assert resumed.status == "done" and resumed.resumed_units == killed_at
    clean = tmp_path / "clean.sqlite"
    straight = run_sweep(config, {"tiny": engine}, clean, dataset=demo_dataset("en"), chunk_size=50)
    assert straight.name == resumed.name

    assert [c.as_dict() for c in sweep_cells.cells(db, resumed.name)] == \
        [c.as_dict() for c in sweep_cells.cells(clean, straight.name)]
    query = ("SELECT model, perturbation, params_json, repeat, example_id, variant_text, answer, span_start, "
             "span_end, em, f1, clean_answer FROM result_rows ORDER BY 1, 2, 3, 4, 5")
    assert sqlite3.connect(db).execute(query).fetchall() == sqlite3.connect(clean).execute(query).fetchall()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == total - 12
    assert conn.execute("SELECT COUNT(*) FROM clean_results").fetchone()[0] == 12
    assert conn.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] == \
        conn.execute("SELECT COUNT(DISTINCT question || '|' || context_hash) FROM predictions").fetchone()[0]


# ------------------------------------------------------------------------------------ challenge files


def test_file_challenge_paired_by_id(tmp_path):
    data = tmp_path / "data"
    (data / "noiseqa").mkdir(parents=True)
    challenge = Dataset("c", "en", [
        QAExample("q1", "Waht is the capital of France?", EXAMPLES[0].context, EXAMPLES[0].answers),
        QAExample("q2", "When was the tower built?", EXAMPLES[1].context, EXAMPLES[1].answers),
        QAExample("q9", "Not in the original?", "Some context.", (Answer("Some", 0),)),
    ])
    challenge.to_squad_json(data / "noiseqa" / "toy-keyboard-natural.json")
    engine = FakeEngine({**ANSWERS, "Waht is the capital of France?": "France"})
    config = SweepConfig("toy", ["file:noiseqa/toy-keyboard-natural"], ["fake"], repeats=3)
    run = run_sweep(config, {"fake": engine}, tmp_path / "s.sqlite", dataset=TOY, data_dir=data)
    spec = sweep_cells.sweep_specs(tmp_path / "s.sqlite", run.name)[0]
    assert (spec["family"], spec["field"], spec["repeats"], spec["randomised"]) == ("keyboard", "question", 1, False)
    cell = sweep_cells.cells(tmp_path / "s.sqlite", run.name)[0]
    assert (cell.n, cell.n_not_applicable, cell.clean_f1, cell.f1) == (2, 3, 100.0, 50.0)
    rows = sweep_cells.cell_examples(tmp_path / "s.sqlite", run.name, "fake", "file:noiseqa/toy-keyboard-natural")
    assert [(r["example_id"], r["variant_question"], r["answer"]) for r in rows] == [
        ("q1", "Waht is the capital of France?", "France"), ("q2", "When was the tower built?", "1889")]
    with pytest.raises(SweepError, match="no file noiseqa/absent.json"):
        run_sweep(SweepConfig("toy", ["file:noiseqa/absent"], ["fake"]), {"fake": engine},
                  tmp_path / "s.sqlite", dataset=TOY, data_dir=data)


def test_cli_list_and_show(tmp_path, capsys):
    from core.sweeps.cli import main

    db = tmp_path / "s.sqlite"
    run, _ = toy_run(db, name="toy-sweep")
    assert main(["--list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "toy-sweep" in out and "[done]  20/20 rows" in out
    assert main(["--show", "toy-sweep", "--db", str(db), "--metric", "em"]) == 0
    out = capsys.readouterr().out
    assert "penalty total (EM) fake: 4" in out and "clean fake: EM 80.0" in out
    assert main(["--db", str(db), "--dataset", "toy"]) == 2
    assert "--perturbations, --models required" in capsys.readouterr().err


def test_model_differences_paired_by_example(tmp_path):
    """B answers clean q5 whole ("Balthasar Neumann": F1 1 against 2/3) and TUQ's q4 right."""
    better = dict(ANSWERS, **{"Who built the palace in Würzburg?": "Balthasar Neumann",
                              "HOW MANY PEOPLE LIVE IN BERLIN?": "three million"})
    db = tmp_path / "s.sqlite"
    config = SweepConfig("toy", parse_specs("TUQ,RUQ"), ["fake", "better"])
    run = run_sweep(config, {"fake": FakeEngine(ANSWERS), "better": FakeEngine(better)}, db, dataset=TOY)
    rows = {r["spec"]: r for r in sweep_cells.model_differences(db, run.name, "fake", "better")}
    assert list(rows) == ["clean", "TUQ", "RUQ"]
    clean, tuq, ruq = rows["clean"], rows["TUQ"], rows["RUQ"]
    # clean: per-example differences 0, 0, 0, 0, 1/3 -> +6.67 points
    assert (clean["n"], clean["F1 fake"], clean["F1 better"], clean["difference"]) == (5, 93.33, 100.0, 6.67)
    # TUQ: 0, 0, 0, 1, 0 -> +20; a resample without q4 (p = 0.8^5) makes the interval start at 0
    assert (tuq["n"], tuq["difference"], tuq["ci95_low"], tuq["significant"]) == (5, 20.0, 0.0, False)
    assert tuq["ci95_high"] <= 100
    assert ruq["n"] == 1 and ruq["difference"] is None   # one shared example: no interval
    with pytest.raises(ValueError, match="not in this sweep"):
        sweep_cells.model_differences(db, run.name, "fake", "nobody")
    with pytest.raises(ValueError, match="two different"):
        sweep_cells.model_differences(db, run.name, "fake", "fake")


def test_cli_compare_two_models(tmp_path, capsys):
    from core.sweeps.cli import main

    better = dict(ANSWERS, **{"Who built the palace in Würzburg?": "Balthasar Neumann"})
    db = tmp_path / "s.sqlite"
    config = SweepConfig("toy", parse_specs("TUQ"), ["fake", "better"], name="pair")
    run_sweep(config, {"fake": FakeEngine(ANSWERS), "better": FakeEngine(better)}, db, dataset=TOY)
    assert main(["--db", str(db), "--show", "pair", "--compare", "fake,better"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("B = better, A = fake: B - A in F1 points")
    assert out[2].split()[:5] == ["clean", "5", "93.33", "100.00", "+6.67"]
    assert main(["--db", str(db), "--show", "pair", "--compare", "fake,nobody"]) == 2
    assert "'nobody' is not in this sweep" in capsys.readouterr().err
    assert main(["--db", str(db), "--show", "pair", "--compare", "fake"]) == 2


def test_a_name_taken_by_another_configuration_says_what_differs(tmp_path):
    """Resuming under a name whose stored configuration differs names the difference: a model whose
    fingerprint changed (the Sweeps page's Resume after the sidebar's answer length was changed said
    only "data, sample, seed, repeats, perturbations or model weights differ")."""
    db = tmp_path / "s.sqlite"
    config = SweepConfig("toy", parse_specs("TUQ"), ["fake"], seed=1, name="taken")
    run_sweep(config, {"fake": FakeEngine({}, "fp-1")}, db, dataset=TOY)
    with pytest.raises(SweepError) as e:
        run_sweep(config, {"fake": FakeEngine({}, "fp-2")}, db, dataset=TOY)
    assert "model fake answers differently" in str(e.value) and "max answer length" in str(e.value)
    with pytest.raises(SweepError, match=r"differ: seed \(stored 1, now 2\)"):
        run_sweep(dataclasses.replace(config, seed=2), {"fake": FakeEngine({}, "fp-1")}, db, dataset=TOY)
