"""core.compat holds the stored identities: recomputed with it, every key in the store the code
before core/sweeps wrote (tests/fixtures/sweep_v1.sql) comes out byte for byte, and the old import
places still give the same objects."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core import compat
from core.types import Answer, QAExample

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sweep_v1.sql"


@pytest.fixture(scope="module")
def old_store():
    conn = sqlite3.connect(":memory:")
    conn.executescript(FIXTURE.read_text(encoding="utf-8"))
    yield conn
    conn.close()


def test_every_context_hash_of_the_old_store(old_store):
    rows = old_store.execute("SELECT hash, text FROM contexts").fetchall()
    assert rows and all(compat.text_hash(text) == key for key, text in rows)


def test_every_example_hash_of_the_old_store(old_store):
    rows = old_store.execute("SELECT e.hash, e.id, e.lang, e.question, c.text, e.answers_json FROM examples e "
                             "JOIN contexts c ON c.hash = e.context_hash").fetchall()
    assert rows
    for key, ex_id, lang, question, context, answers in rows:
        ex = QAExample(ex_id, question, context, tuple(Answer(t, s) for t, s in json.loads(answers)), lang=lang)
        assert compat.answers_json(ex.answers) == answers
        assert compat.example_hash(ex) == key


def test_every_variant_key_of_the_old_store(old_store):
    rows = old_store.execute("SELECT key, perturbation, params_json, seed, repeat, example_hash "
                             "FROM variants").fetchall()
    assert rows
    for key, pid, params_json, seed, repeat, ex_hash in rows:
        randomised = seed is not None
        assert compat.variant_key(pid, params_json, seed if randomised else 0, repeat, ex_hash,
                                  randomised=randomised) == key, (pid, params_json, repeat)


def test_every_prediction_key_of_the_old_store(old_store):
    rows = old_store.execute("SELECT key, model, fingerprint, question, context_hash FROM predictions").fetchall()
    assert rows and all(compat.prediction_key(*row[1:]) == row[0] for row in rows)


def test_the_old_import_places_give_the_same_identities():
    from core.collect import trials
    from core.perturb import spec
    from core.sweeps import config, keys, store
    from core.sweeps.running import resolve

    assert spec.FORMAT is config.FORMAT is compat.FORMAT == compat.SWEEP_FORMAT == "qax-sweep-1"
    assert trials.FORMAT == compat.TRIAL_FORMAT == "qax-trial-1"
    assert resolve.RESEEDED_SALT == ":rng=chain"
    assert (spec.variant_key, spec.key_rng, spec.step_rng, spec.sha, spec.example_hash, spec.canonical_json) == (
        compat.variant_key, compat.key_rng, compat.step_rng, compat.sha, compat.example_hash, compat.canonical_json)
    assert keys.prediction_key is compat.prediction_key and store.text_hash is compat.text_hash


def test_a_setting_at_its_old_value_leaves_the_fingerprint_as_it_was():
    assert compat.fingerprint_suffix(compat.UNHASHED_LONG_CONTEXT_CHARS, compat.UNHASHED_BACKEND) == ""
    assert compat.fingerprint_suffix(8000, "torch-bf16") == ":backend=torch-bf16:weights"
    assert compat.fingerprint_suffix(9000, "torch") == ":long_from=9000"
