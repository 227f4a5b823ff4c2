"""One spec language and one generator: the same (seed, example, spec, repeat) gives the same variant
in a sweep, on the Variants page and in make_challenge; chains run in sweeps (issue 25)."""
from __future__ import annotations

import contextlib
import hashlib
import io
import random
import sqlite3

import pytest

from core.datasets import demo_dataset, has_gold
from core.explore.variants import Choice, generate_variants
from core.perturb import compose
from core.perturb.make_challenge import build_challenge
from core.perturb.spec import (
    PerturbationSpec,
    SpecError,
    chain_step_specs,
    example_hash,
    parse_spec,
    parse_specs,
    rng_for,
)
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Prediction, Span

SEED, REPEATS = 11, 3
EXAMPLES = [ex for ex in demo_dataset("en").examples if has_gold(ex)][:4]


class FirstWordEngine:
    """Answers with the first word of the context (the answers do not matter here)."""

    fingerprint = "first-word-1"

    def predict(self, questions, contexts, n_best=1, progress=None, skip_invalid=False):
        out = []
        for c in contexts:
            word = c.split()[0]
            out.append(Prediction([Span(word, 0, len(word), 1.0)]))
        return out


def sweep_variants(db, spec_text: str, repeats: int = REPEATS) -> dict[tuple[int, str], str]:
    """{(repeat, example id): perturbed question} of a sweep over EXAMPLES into the file ``db``."""
    from core.datasets import Dataset

    run = run_sweep(SweepConfig("demo-en", [spec_text], ["m"], repeats=repeats, seed=SEED), {"m": FirstWordEngine()},
                    db, dataset=Dataset("demo-en", "en", EXAMPLES))
    assert run.status == "done"
    ids = {example_hash(ex): ex.id for ex in EXAMPLES}
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT r.repeat, r.example_hash, v.question, v.status FROM results r "
                        "JOIN variants v ON v.key = r.variant_key").fetchall()
    conn.close()
    assert {status for *_, status in rows} == {"ok"}
    return {(r, ids[h]): q for r, h, q, _ in rows}


def page_variants(choice: Choice, repeats: int = REPEATS) -> dict[tuple[int, str], str]:
    """{(repeat, example id): perturbed question} from the Variants page's logic."""
    out = {}
    for ex in EXAMPLES:
        rows, notes = generate_variants(ex, [choice], SEED, repeats)
        assert not notes
        for row in rows[1:]:
            for r in [row.repeat, *row.same_as]:
                out[(r, ex.id)] = row.text
    return out


def challenge_variants(spec_text: str) -> dict[tuple[int, str], str]:
    """{(0, example id): perturbed question} of make_challenge's set (its one repeat is 0)."""
    perturbation, params = compose.build(spec_text)
    result = build_challenge(EXAMPLES, perturbation, SEED, params)
    return {(0, ex.id): out.question for ex, out in zip(EXAMPLES, result.examples)}


def test_rng_for_is_the_sweep_derivation_of_before():
    """Pinned: sha256("rng" + the variant key) as core/sweep.py derived it before the move, so
    stored sweeps keep their variants."""
    ex = EXAMPLES[0]

    def sha(*parts):
        return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()

    ex_hash = sha("example", ex.id, ex.lang, ex.question, ex.context,
                  '[' + ", ".join(f'["{a.text}", {a.answer_start}]' for a in ex.answers) + ']')
    assert ex_hash == example_hash(ex)
    key = sha("variant", "qax-sweep-1", "keyboard_Q", '{"p":0.25}', SEED, 2, ex_hash, "")
    old = random.Random(int.from_bytes(hashlib.sha256(("rng" + key).encode()).digest()[:8], "big"))
    assert rng_for(SEED, ex, "keyboard_Q", 2).random() == old.random()
    # default parameters written out or not: one spec; a deterministic one ignores seed and repeat
    assert rng_for(SEED, ex, "keyboard_Q:p=0.25", 2).random() == rng_for(SEED, ex, "keyboard_Q", 2).random()
    assert rng_for(SEED, ex, "keyboard_Q", 1).random() != rng_for(SEED, ex, "keyboard_Q", 2).random()
    assert rng_for(1, ex, "DPQ", 0).random() == rng_for(2, ex, "DPQ", 5).random()
    # a chain draws its first step's numbers
    assert rng_for(SEED, ex, "keyboard_Q+DPQ", 2).random() == rng_for(SEED, ex, "keyboard_Q", 2).random()


@pytest.mark.parametrize("spec_text, choice", [
    ("keyboard_Q:p=1", Choice("keyboard_Q", {"p": 1})),
    ("keyboard_Q:p=1+SwapRQ", Choice("keyboard_Q+SwapRQ", {"keyboard_Q": {"p": 1}})),
    ("TLQ+keyboard_Q:p=1", Choice("TLQ+keyboard_Q", {"keyboard_Q": {"p": 1}})),
])
def test_same_variant_in_a_sweep_on_the_variants_page_and_in_a_challenge_set(tmp_path, spec_text, choice):
    swept = sweep_variants(tmp_path / "s.sqlite", spec_text)
    assert len(swept) == REPEATS * len(EXAMPLES)
    assert page_variants(choice) == swept
    challenge = challenge_variants(spec_text)
    assert challenge == {k: v for k, v in swept.items() if k[0] == 0}
    # real noise: the repeats differ, and the variants differ from the questions
    assert len({q for (r, i), q in swept.items() if i == EXAMPLES[0].id}) > 1
    assert all(q != ex.question for ex in EXAMPLES for (r, i), q in swept.items() if i == ex.id)


def test_chain_keyboard_then_dpq_runs_in_a_sweep(tmp_path):
    """keyboard_Q+DPQ through run_sweep: keyboard noise, then the punctuation dropped, the
    noise being keyboard_Q's own for the same seed and repeat."""
    chained = sweep_variants(tmp_path / "chain.sqlite", "keyboard_Q+DPQ", repeats=2)
    alone = sweep_variants(tmp_path / "alone.sqlite", "keyboard_Q", repeats=2)
    dpq = compose.build("DPQ")[0]
    for key, noisy in alone.items():
        ex = next(e for e in EXAMPLES if e.id == key[1])
        expected = dpq.apply(ex.__class__(ex.id, noisy, ex.context, ex.answers, lang=ex.lang), random.Random(0))
        assert chained[key] == expected[0].text
        assert "?" not in chained[key] and "?" in noisy


def test_chain_keyboard_then_dpq_runs_through_the_cli(tmp_path):
    from core.sweeps.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--dataset", "demo.en", "--perturbations", "keyboard_Q+DPQ,keyboard_Q", "--models",
                     "minilm-squad", "--sample", "3", "--repeats", "2", "--db", str(tmp_path / "s.sqlite"),
                     "--quiet"]) == 0
    text = out.getvalue()
    assert "'demo.en-" in text and ": done, 15/15 rows" in text
    line = next(x for x in text.splitlines() if "keyboard_Q+DPQ" in x)
    assert line.split()[2:4] == ["3", "2"]   # N examples, repeats


def test_spec_text_round_trips_through_the_parsers():
    spec = parse_spec("keyboard_Q:p=0.5+DPQ")
    assert (spec.id, spec.params_dict) == ("keyboard_Q+DPQ", {"p": 0.5})
    assert [(s.id, s.params_dict) for s in chain_step_specs(spec)] == [("keyboard_Q", {"p": 0.5}), ("DPQ", {})]
    composite, params = compose.build(spec)
    assert (composite.id, composite.step_params, params) == (
        "keyboard_Q+DPQ", {"keyboard_Q": {"p": 0.5}, "DPQ": {}}, {})
    assert chain_step_specs(composite.spec) == chain_step_specs(spec)
    # ... and writes it back as spec text the parsers read: the same steps, the same parameters
    assert composite.spec.text == "keyboard_Q:p=0.5+DPQ"
    assert chain_step_specs(parse_spec(composite.spec.text)) == chain_step_specs(spec)
    odd = PerturbationSpec.make("asr_Q", {"voice": "espeak-ng:en-us+f3", "engine": "whisper-base"})
    assert parse_spec(odd.text) == odd
    assert [str(s) for s in parse_specs("keyboard_Q:p=0.1|0.2+DPQ")] == [
        "keyboard_Q+DPQ(p=0.1)", "keyboard_Q+DPQ(p=0.2)"]
    with pytest.raises(SpecError, match="names 2 perturbation runs"):
        parse_spec("TLQ,DPQ")
    with pytest.raises(SpecError, match="challenge file is data"):
        compose.build("file:noiseqa/x")
    assert PerturbationSpec.make("DPQ") == parse_spec("DPQ")


def test_a_chain_with_a_deterministic_first_step_is_seeded_by_repeat():
    """Before issue 25 the chain drew its deterministic first step's numbers, which ignore seed and
    repeat: every repeat of TLQ+keyboard_Q was the same variant. Now its repeats differ, and its
    cache keys are new, so no variant stored by the old code is reused."""
    from core.perturb import registry
    from core.perturb.spec import sha
    from core.sweeps.running.resolve import resolve_spec

    ex = EXAMPLES[0]
    assert rng_for(SEED, ex, "TLQ+keyboard_Q", 0).random() != rng_for(SEED, ex, "TLQ+keyboard_Q", 1).random()
    assert rng_for(SEED, ex, "TLQ+DPQ", 0).random() == rng_for(SEED + 1, ex, "TLQ+DPQ", 1).random()
    resolved = resolve_spec(parse_spec("TLQ+keyboard_Q"), 2, registry.get, None)
    old_key = sha("variant", "qax-sweep-1", resolved.id, resolved.params_json, SEED, 1, example_hash(ex), "")
    assert resolved.rng_reseeded and resolved.variant_key(example_hash(ex), SEED, 1) != old_key
    kept = resolve_spec(parse_spec("keyboard_Q+TLQ"), 2, registry.get, None)
    assert not kept.rng_reseeded and kept.variant_key(example_hash(ex), SEED, 1) == sha(
        "variant", "qax-sweep-1", kept.id, kept.params_json, SEED, 1, example_hash(ex), "")


def test_training_augmentation_takes_a_chain():
    from core.training.augment import augment_examples, parse_augment_spec

    entries, weights = parse_augment_spec("TLQ+keyboard_Q:p=1")
    assert (entries, weights) == ([("TLQ+keyboard_Q", {"p": 1})], None)
    added, per_id = augment_examples(EXAMPLES, 1.0, entries, random.Random(0), log=lambda *_: None)
    assert per_id == {"TLQ+keyboard_Q(p=1)": len(EXAMPLES)}
    originals = {ex.id: ex.question for ex in EXAMPLES}
    for ex in added:   # lower-cased, then a typo in every word
        assert ex.question == ex.question.lower() and ex.question != originals[ex.id].lower()
    with pytest.raises(ValueError, match="no step accepts parameter 'n_chars'"):
        parse_augment_spec("TLQ+keyboard_Q:n_chars=2")
