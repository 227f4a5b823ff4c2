"""Issue 46 (10): each Beat-the-AI attempt is written exactly once.

The concurrency test once counted 12 stored attempts against at most 11 acknowledged. An attempt
now carries an idempotency key (``attempts.submission``, a unique index); the insert ignores a
key already stored, and a write that meets "database is locked" is retried under the same key.
"""
from __future__ import annotations

import sqlite3
import threading

import pytest

from core.collect import beat, beat_store
from core.collect.beat_store import BeatStore
from core.datasets import demo_dataset
from core.types import Span

LIGHT = beat.passages(demo_dataset("en"))[0]
DATE = (112, 127)        # "14 October 1871"
MODELS = {"m1": Span("granite headland", 36, 52, 0.4), "m2": None}


def count(db, table="attempts") -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def test_the_same_key_twice_is_one_attempt(tmp_path):
    db = tmp_path / "beat.sqlite"
    with BeatStore(db) as s:
        a = s.record_attempt(LIGHT, "When was it first lit?", DATE, MODELS, user="Ana", session="s", key="k1")
        again = s.record_attempt(LIGHT, "When was it first lit?", DATE, MODELS, user="Ana", session="s", key="k1")
        other = s.record_attempt(LIGHT, "When was it first lit?", DATE, MODELS, user="Ana", session="s")
    assert again.id == a.id and other.id == a.id + 1
    assert [(m.model, m.answer) for m in again.models] == [("m1", "granite headland"), ("m2", "")]
    assert count(db) == 2 and count(db, "model_answers") == 4


class _FlakyCommit:
    """A connection whose first COMMIT answers "database is locked": ``committed`` says whether
    that COMMIT had in fact gone through (the acknowledgement was lost) or not (a real BUSY)."""

    def __init__(self, conn, committed: bool):
        self._conn, self._committed, self.failed = conn, committed, 0

    def execute(self, sql, *args):
        if sql == "COMMIT" and not self.failed:
            self.failed += 1
            if self._committed:
                self._conn.execute(sql)
            raise sqlite3.OperationalError("database is locked")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


@pytest.mark.parametrize("committed", [True, False], ids=["acknowledgement lost", "commit busy"])
def test_a_retry_after_database_is_locked_writes_once(tmp_path, committed):
    db = tmp_path / "beat.sqlite"
    s = BeatStore(db)
    real = s.conn
    s.conn = flaky = _FlakyCommit(real, committed)
    try:
        a = s.record_attempt(LIGHT, "When was it first lit?", DATE, MODELS, user="Ana", session="s")
    finally:
        s.conn = real
        s.close()
    assert flaky.failed == 1                       # the retry happened
    assert count(db) == 1 and count(db, "model_answers") == 2
    with BeatStore(db) as s2:
        assert [x.id for x in s2.attempts()] == [a.id]


def test_concurrent_writers_with_one_key_store_one_attempt(tmp_path):
    db = tmp_path / "beat.sqlite"
    BeatStore(db).close()
    ids, errors = [], []

    def write():
        try:
            with BeatStore(db) as s:
                ids.append(s.record_attempt(LIGHT, "When was it first lit?", DATE, MODELS, user="Ana",
                                            session="s", key="double-click").id)
        except Exception as e:   # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=write) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(ids)) == 1 and len(ids) == 6
    assert count(db) == 1 and count(db, "model_answers") == 2


SCHEMA_2_ATTEMPTS = beat_store.SCHEMA.replace(
    "    submission   TEXT,                   -- idempotency key, unique (NULL for rows before schema 3)\n", "")


def test_a_schema_2_database_is_upgraded_and_keeps_its_attempts(tmp_path):
    db = tmp_path / "old.sqlite"
    assert "submission" not in SCHEMA_2_ATTEMPTS
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_2_ATTEMPTS)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    conn.execute("INSERT INTO passages VALUES (?, ?)", (LIGHT.id, LIGHT.context))
    for q in ("Old one?", "Old two?"):
        conn.execute("INSERT INTO attempts (created_at, user, session, passage_id, dataset, title, lang, question,"
                     " answer_start, answer_end, answer_text, threshold, outcome, browser) VALUES"
                     " ('2026-01-01T00:00:00', 'Old', 's', ?, 'demo.en', 't', 'en', ?, 112, 127, ?, 0.4, 'human', '')",
                     (LIGHT.id, q, LIGHT.context[112:127]))
    conn.commit()
    conn.close()
    with BeatStore(db) as s:
        assert s.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
        assert [a.question for a in s.attempts()] == ["Old one?", "Old two?"]   # NULL keys: both kept
        new = s.record_attempt(LIGHT, "New?", DATE, MODELS, user="Ana", session="s", key="k")
        assert s.record_attempt(LIGHT, "New?", DATE, MODELS, user="Ana", session="s", key="k").id == new.id
        indexes = {r[1]: r[2] for r in s.conn.execute("PRAGMA index_list(attempts)")}
        assert indexes["attempts_submission"] == 1   # unique
    assert count(db) == 3
