"""Beat the AI's store: every attempt and every validation in one SQLite file.

The database file is ``$QAX_BEAT_DB`` or ``<cache_dir>/beat_the_ai.sqlite``
(:func:`default_db_path`); its schema (version 3; versions 1 and 2 are upgraded on open) is
:data:`SCHEMA`.

Each attempt is written exactly once: it carries an idempotency key (``attempts.submission``,
unique), inserted with ``ON CONFLICT (submission) DO NOTHING``, so a call repeated with the same key (a retry after
"database is locked", a second click) returns the attempt already stored instead of a second row
(issue 46: the concurrency test once counted 12 stored attempts against at most 11
acknowledged). The connection, WAL and transactions come from the shared base
:class:`core.io.sqlite_db.SQLiteFile`. The game's rules (judging, the same-person rule) are in
:mod:`core.collect.beat`; this module only stores, reads and exports.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core import config
from core.budgets import clean_note
from core.collect import identity
from core.collect.beat import (
    AGREE_THRESHOLD,
    WIN_THRESHOLD,
    Attempt,
    ModelVerdict,
    Passage,
    Validation,
    answer_f1,
    check_span,
    check_threshold,
    judge,
    passage_id,
)
from core.datasets import Dataset
from core.io.sqlite_db import SQLiteFile
from core.types import Answer, QAExample, Span

__all__ = ["DB_ENV", "DB_FILENAME", "SCHEMA_VERSION", "SCHEMA", "BeatStore", "checked_submission", "default_db_path",
           "submission_key"]

DB_ENV = "QAX_BEAT_DB"
DB_FILENAME = "beat_the_ai.sqlite"

SCHEMA_VERSION = "3"  # 2: attempts.browser and validations.browser; 3: attempts.submission (older are upgraded)

#: Tries of one write when SQLite answers "database is locked" (another writer held the lock
#: past the busy timeout); safe because the idempotency key keeps a retried attempt one row.
WRITE_TRIES = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    id      TEXT PRIMARY KEY,            -- passage_id(context)
    context TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at   TEXT NOT NULL,          -- ISO 8601, UTC
    user         TEXT NOT NULL,
    session      TEXT NOT NULL,
    passage_id   TEXT NOT NULL REFERENCES passages(id),
    dataset      TEXT NOT NULL,
    title        TEXT NOT NULL,
    lang         TEXT NOT NULL,
    question     TEXT NOT NULL,
    answer_start INTEGER NOT NULL,       -- the person's answer: context[answer_start:answer_end]
    answer_end   INTEGER NOT NULL,
    answer_text  TEXT NOT NULL,
    threshold    REAL NOT NULL,          -- a model won when its F1 > threshold
    outcome      TEXT NOT NULL CHECK (outcome IN ('human', 'model')),
    browser      TEXT NOT NULL DEFAULT '',  -- identity.token_key(browser token), '' = unknown
    submission   TEXT,                   -- idempotency key, unique (NULL for rows before schema 3)
    CHECK (0 <= answer_start AND answer_start < answer_end)
);
CREATE INDEX IF NOT EXISTS attempts_passage ON attempts (passage_id);
CREATE TABLE IF NOT EXISTS model_answers (
    attempt_id   INTEGER NOT NULL REFERENCES attempts(id),
    position     INTEGER NOT NULL,       -- order in which the models were chosen
    model        TEXT NOT NULL,
    answer       TEXT NOT NULL,          -- '' when the model gave no answer
    answer_start INTEGER,
    answer_end   INTEGER,
    score        REAL,
    f1           REAL NOT NULL,
    won          INTEGER NOT NULL CHECK (won IN (0, 1)),
    PRIMARY KEY (attempt_id, model)
);
CREATE TABLE IF NOT EXISTS validations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id   INTEGER NOT NULL REFERENCES attempts(id),
    created_at   TEXT NOT NULL,
    validator    TEXT NOT NULL,
    validator_key TEXT NOT NULL,         -- identity.name_key (schema 1: casefolded name)
    session      TEXT NOT NULL,
    answer_start INTEGER,                -- NULL: "the passage does not answer this question"
    answer_end   INTEGER,
    answer_text  TEXT NOT NULL,
    f1           REAL NOT NULL,
    threshold    REAL NOT NULL,          -- agrees when f1 >= threshold
    agrees       INTEGER NOT NULL CHECK (agrees IN (0, 1)),
    browser      TEXT NOT NULL DEFAULT '',  -- identity.token_key(browser token), '' = unknown
    UNIQUE (attempt_id, validator_key)
);
"""


def default_db_path() -> Path:
    """$QAX_BEAT_DB when set, else ``config.cache_dir() / "beat_the_ai.sqlite"``."""
    env = os.environ.get(DB_ENV)
    return Path(env).expanduser() if env else config.cache_dir() / DB_FILENAME


def checked_submission(passage: Passage, question: object, span: Sequence[int]) -> tuple[str, tuple[int, int]]:
    """The question as it is stored and the answer's (start, end), or ValueError saying what is
    wrong: checked before the models answer, so a submission that cannot be stored costs no
    answers and leaves no earlier result standing in for it."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("the question is empty")
    question = clean_note(question, "the question")   # BudgetError (a ValueError) when too long
    if passage.id != passage_id(passage.context):
        raise ValueError(f"passage id {passage.id!r} does not match its text")
    return question, check_span(passage.context, span, "the answer span", passage.lang)


def submission_key(session: str, passage: str, question: str, span: Sequence[int],
                   models: Sequence[str]) -> str:
    """The idempotency key of one submission on the page: the same session submitting the same
    question and answer on the same passage against the same models is one attempt (a double
    click, a rerun, a retry), whatever happens between the calls.

    >>> submission_key("s", "p1", " Who? ", (0, 4), ["m"]) == submission_key("s", "p1", "Who?", [0, 4], ("m",))
    True
    >>> submission_key("s", "p1", "Who?", (0, 4), ["m"]) == submission_key("t", "p1", "Who?", (0, 4), ["m"])
    False
    """
    payload = json.dumps([session, passage, question.strip(), [int(x) for x in span], list(models)],
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _same_person(name_a: str, browser_a: str, name_b: str, browser_b: str) -> bool:
    """Same browser token (both known), or names with the same identity.name_key."""
    if browser_a and browser_a == browser_b:
        return True
    key = identity.name_key(name_a)
    return bool(key) and key == identity.name_key(name_b)


class BeatStore(SQLiteFile):
    """Every attempt and validation in one SQLite file (stdlib ``sqlite3``).

    Each :meth:`record_attempt` / :meth:`record_validation` is one transaction, committed before
    the method returns, with ``synchronous=FULL`` in WAL mode: once the call returns, the record
    survives the process being killed and even a power cut (a person's question costs minutes
    to write; an fsync costs milliseconds). WAL lets the page read while another session writes.
    ``path``: the file (default :func:`default_db_path`); its folder is created.
    """

    synchronous = "FULL"

    def __init__(self, path: str | Path | None = None, *, timeout: float = 30.0):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._connect(self.path, timeout)
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{self.path} is not a usable Beat-the-AI database: {e}") from e
        try:
            with self.transaction() as c:
                # one by one: executescript() would COMMIT the open transaction
                for stmt in filter(str.strip, SCHEMA.split(";")):
                    c.execute(stmt)
                row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if row is not None and row[0] in ("1", "2"):
                    # Schema 1 had no browser column: old rows get '' (unknown browser) and
                    # keep working; the name comparison covers them. Schemas 1 and 2 had no
                    # idempotency key: old rows get NULL (the unique index allows many).
                    added = [("attempts", "browser", "TEXT NOT NULL DEFAULT ''"),
                             ("validations", "browser", "TEXT NOT NULL DEFAULT ''"),
                             ("attempts", "submission", "TEXT")]
                    for table, column, kind in added:
                        cols = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
                        if column not in cols:
                            c.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                              (SCHEMA_VERSION,))
                elif row is None:
                    c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
                elif row[0] != SCHEMA_VERSION:
                    raise ValueError(f"{self.path}: Beat-the-AI schema version {row[0]}, this "
                                     f"code reads version {SCHEMA_VERSION}")
                # after the upgrade: an older file has the column only now
                c.execute("CREATE UNIQUE INDEX IF NOT EXISTS attempts_submission ON attempts (submission)")
        except sqlite3.DatabaseError as e:
            self.conn.close()
            raise ValueError(f"{self.path} is not a usable Beat-the-AI database: {e}") from e
        except BaseException:
            self.conn.close()
            raise


    # -- writing -------------------------------------------------------------------------------

    def record_attempt(self, passage: Passage, question: str, span: Sequence[int],
                       model_spans: Mapping[str, Span | None], *, user: str, session: str,
                       threshold: float = WIN_THRESHOLD, now: str | None = None,
                       browser: str | None = None, key: str | None = None) -> Attempt:
        """Judge and store one attempt (committed on return); returns it as stored.

        ``key``: the attempt's idempotency key (default: a new random one). A second call with a
        key already stored writes nothing and returns the attempt stored under it; a write that
        meets "database is locked" is retried (:data:`WRITE_TRIES`) under the same key, so an
        attempt is stored exactly once.

        ``span``: the person's answer, character offsets [start, end) into ``passage.context``.
        ``model_spans``: model name -> its best span (None: it gave no answer), in the order
        the models were chosen. ``user``: the player's name (:func:`core.collect.identity.display_name`;
        blank -> "anonymous"). ``browser``: the player's browser token (only its hash is kept).
        """
        question, (start, end) = checked_submission(passage, question, span)
        answer = passage.context[start:end]
        verdicts, outcome = judge(answer, model_spans, passage.lang, threshold)
        user = identity.display_name(user) or "anonymous"
        created = now or _now()
        key = key if key else uuid.uuid4().hex
        row = (created, user, session, passage.id, passage.dataset, passage.title, passage.lang,
               question.strip(), start, end, answer, float(threshold), outcome,
               identity.token_key(browser), key)
        for tries_left in range(WRITE_TRIES - 1, -1, -1):
            try:
                attempt_id = self._insert_attempt(passage, row, verdicts)
                break
            except sqlite3.OperationalError as e:
                if tries_left == 0 or "locked" not in str(e):
                    raise
                time.sleep(0.05 * (WRITE_TRIES - tries_left))
        return self.attempt(attempt_id)

    def _insert_attempt(self, passage: Passage, row: tuple, verdicts: Sequence[ModelVerdict]) -> int:
        """One transaction: the passage, the attempt (ignored when its key is stored) and, only
        when the attempt is new, its model answers. Returns the attempt's id."""
        with self.transaction() as c:   # BEGIN IMMEDIATE: no other writer between the look and the insert
            stored = c.execute("SELECT id FROM attempts WHERE submission = ?", (row[-1],)).fetchone()
            if stored is not None:      # this key is stored already: that attempt, not a second one
                return int(stored[0])
            c.execute("INSERT OR IGNORE INTO passages VALUES (?, ?)", (passage.id, passage.context))
            cur = c.execute(
                "INSERT INTO attempts (created_at, user, session, passage_id, dataset, title,"
                " lang, question, answer_start, answer_end, answer_text, threshold, outcome, browser,"
                " submission) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (submission) DO NOTHING", row)   # only the key: a CHECK still fails
            if cur.rowcount == 0:   # (the unique index's guarantee; the look above answers first)
                return int(c.execute("SELECT id FROM attempts WHERE submission = ?", (row[-1],)).fetchone()[0])
            attempt_id = int(cur.lastrowid)
            c.executemany(
                "INSERT INTO model_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(attempt_id, i, v.model, v.answer, v.start, v.end, v.score, v.f1, int(v.won))
                 for i, v in enumerate(verdicts)])
        return attempt_id

    def record_validation(self, attempt_id: int, validator: str, span: Sequence[int] | None, *,
                          session: str, threshold: float = AGREE_THRESHOLD,
                          now: str | None = None, browser: str | None = None) -> Validation:
        """Store a validator's answer to attempt ``attempt_id`` (committed on return).

        ``span``: the validator's answer as character offsets, or None for "the passage does not
        answer this question" (F1 0, a disagreement). ``browser``: the validator's browser
        token. The author cannot validate their own question (same browser, or a name with the
        same :func:`core.collect.identity.name_key`), and each person (by name key or by browser)
        validates a question once.
        """
        threshold = check_threshold(threshold, "the agreement threshold", allow_zero=False,
                                     allow_one=True)
        name = identity.display_name(validator)
        key = identity.name_key(name)
        if not key:
            raise ValueError("a validation needs the validator's name (with at least one letter "
                             "or digit)")
        bkey = identity.token_key(browser)
        attempt = self.attempt(attempt_id)
        if bkey and bkey == attempt.browser:
            raise ValueError(f"question #{attempt_id} was written in this browser: another "
                             f"person must validate it, from their own browser")
        if key == identity.name_key(attempt.user):
            if name.casefold() == attempt.user.casefold():
                raise ValueError(f"{name!r} wrote question #{attempt_id}: another person must "
                                 f"validate it")
            raise ValueError(f"{name!r} reads as {attempt.user!r}, who wrote question "
                             f"#{attempt_id} (names are compared ignoring case, accents, "
                             f"invisible characters and look-alike letters such as 1/l, 0/o): "
                             f"another person must validate it")
        if span is None:
            start = end = None
            text, f1 = "", 0.0
        else:
            start, end = check_span(attempt.context, span, "the validator's answer span",
                                     attempt.lang)
            text = attempt.context[start:end]
            f1 = answer_f1(text, attempt.answer_text, attempt.lang)
        agrees = f1 >= threshold
        with self.transaction() as c:
            # Checked inside the write transaction, so two tabs cannot both get through. Names
            # are compared by today's key (old rows stored a plain casefolded name).
            for prev, prev_browser in c.execute(
                    "SELECT validator, browser FROM validations WHERE attempt_id=?", (attempt_id,)):
                if bkey and bkey == prev_browser:
                    raise ValueError(f"this browser has already validated question "
                                     f"#{attempt_id} (as {prev!r})")
                if identity.name_key(prev) == key:
                    raise ValueError(f"{name!r} has already validated question #{attempt_id}"
                                     + ("" if prev == name else f" (as {prev!r})"))
            cur = c.execute(
                "INSERT INTO validations (attempt_id, created_at, validator, validator_key, session,"
                " answer_start, answer_end, answer_text, f1, threshold, agrees, browser)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (attempt_id, now or _now(), name, key, session, start, end,
                 text, f1, threshold, int(agrees), bkey))
            vid = int(cur.lastrowid)
        return self.validations(attempt_id=attempt_id, validation_id=vid)[0]

    # -- reading -------------------------------------------------------------------------------

    def attempts(self, *, passage_id: str | None = None, outcome: str | None = None,
                 attempt_id: int | None = None) -> list[Attempt]:
        """Stored attempts, oldest first, optionally only one passage's / one outcome's."""
        if outcome not in (None, "human", "model"):
            raise ValueError(f"outcome must be 'human' or 'model', not {outcome!r}")
        where, args = [], []
        for col, val in (("a.passage_id", passage_id), ("a.outcome", outcome),
                         ("a.id", attempt_id)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = ("SELECT a.*, p.context,"
               " (SELECT COUNT(*) FROM validations v WHERE v.attempt_id = a.id) AS n_val,"
               " (SELECT COALESCE(SUM(v.agrees), 0) FROM validations v"
               "  WHERE v.attempt_id = a.id) AS n_agree"
               " FROM attempts a JOIN passages p ON p.id = a.passage_id"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY a.id")
        rows = self.conn.execute(sql, args).fetchall()
        verdicts: dict[int, list[ModelVerdict]] = {}
        msql = "SELECT * FROM model_answers"
        margs: list[Any] = []
        if len(rows) == 1:
            msql += " WHERE attempt_id = ?"
            margs = [rows[0]["id"]]
        for m in self.conn.execute(msql + " ORDER BY attempt_id, position", margs):
            verdicts.setdefault(m["attempt_id"], []).append(ModelVerdict(
                m["model"], m["answer"], m["answer_start"], m["answer_end"], m["score"], m["f1"],
                bool(m["won"])))
        return [Attempt(
            id=r["id"], created_at=r["created_at"], user=r["user"], session=r["session"],
            passage_id=r["passage_id"], dataset=r["dataset"], title=r["title"], lang=r["lang"],
            context=r["context"], question=r["question"], answer_start=r["answer_start"],
            answer_end=r["answer_end"], answer_text=r["answer_text"], threshold=r["threshold"],
            outcome=r["outcome"], models=tuple(verdicts.get(r["id"], ())),
            validations=r["n_val"], agreements=r["n_agree"], browser=r["browser"]) for r in rows]

    def last_name(self, browser: str | None) -> str:
        """The name last used in the browser of token ``browser`` ("" for none): a reload or a fresh
        tab starts with it, so a player's later questions are not stored as "anonymous"."""
        bkey = identity.token_key(browser)
        if not bkey:
            return ""
        row = self.conn.execute("SELECT user FROM (SELECT id, created_at, user FROM attempts WHERE browser = ?"
                                " UNION ALL SELECT id, created_at, validator FROM validations WHERE browser = ?)"
                                " ORDER BY created_at DESC LIMIT 1", (bkey, bkey)).fetchone()
        return "" if row is None or row[0] == "anonymous" else row[0]

    def attempt(self, attempt_id: int) -> Attempt:
        found = self.attempts(attempt_id=int(attempt_id))
        if not found:
            raise ValueError(f"no attempt #{attempt_id} in {self.path}")
        return found[0]

    def validations(self, *, attempt_id: int | None = None,
                    validation_id: int | None = None) -> list[Validation]:
        """Stored validations, oldest first, optionally of one attempt."""
        where, args = [], []
        if attempt_id is not None:
            where.append("attempt_id = ?")
            args.append(attempt_id)
        if validation_id is not None:
            where.append("id = ?")
            args.append(validation_id)
        sql = "SELECT * FROM validations" + (" WHERE " + " AND ".join(where) if where else "")
        return [Validation(r["id"], r["attempt_id"], r["created_at"], r["validator"], r["session"],
                           r["answer_start"], r["answer_end"], r["answer_text"], r["f1"],
                           r["threshold"], bool(r["agrees"]), r["browser"])
                for r in self.conn.execute(sql + " ORDER BY id", args)]

    def validation_queue(self, validator: str, *, human_won_only: bool = True,
                         browser: str | None = None) -> list[Attempt]:
        """Questions ``validator`` (in the browser of token ``browser``) may validate: not their
        own, not yet validated by them (the same-person rule of :meth:`record_validation`;
        human-won ones only by default, as in the paper). Fewest validations first, then
        disputed ones (they need a tie-breaker), then oldest."""
        name = identity.display_name(validator)
        if not identity.name_key(name):
            return []
        bkey = identity.token_key(browser)
        done = {r[0] for r in self.conn.execute("SELECT attempt_id, validator, browser FROM "
                                                "validations")
                if _same_person(name, bkey, r[1], r[2])}
        todo = [a for a in self.attempts(outcome="human" if human_won_only else None)
                if a.id not in done and not _same_person(name, bkey, a.user, a.browser)]
        return sorted(todo, key=lambda a: (a.validations, not a.flagged, a.id))

    # -- export --------------------------------------------------------------------------------

    def export_dataset(self, *, validated_only: bool, human_won_only: bool,
                       name: str = "beat_the_ai") -> Dataset:
        """The collected questions as a :class:`Dataset` (ids ``beat-<attempt id>``).

        ``validated_only``: only answerable questions (see the module docstring);
        ``human_won_only``: only questions that fooled every model. Gold answers: the author's,
        then each agreeing validator's distinct answer (as SQuAD dev has several per question).
        Questions of one passage are kept together, passages in order of their first question.
        """
        chosen = [a for a in self.attempts(outcome="human" if human_won_only else None)
                  if not validated_only or a.answerable]
        agreeing: dict[int, list[Validation]] = {}
        for v in self.validations():
            if v.agrees and v.answer_start is not None:
                agreeing.setdefault(v.attempt_id, []).append(v)
        first: dict[str, int] = {}
        for a in chosen:
            first.setdefault(a.passage_id, a.id)
        chosen.sort(key=lambda a: (first[a.passage_id], a.id))
        examples = []
        for a in chosen:
            answers = [Answer(a.answer_text, a.answer_start)]
            for v in agreeing.get(a.id, []):
                ans = Answer(v.answer_text, v.answer_start)
                if ans not in answers:
                    answers.append(ans)
            examples.append(QAExample(id=f"beat-{a.id}", question=a.question, context=a.context,
                                      answers=tuple(answers), title=a.title, lang=a.lang))
        return Dataset(name=name, lang=(examples[0].lang if len({e.lang for e in examples}) == 1
                                        else ("mul" if examples else "und")),
                       examples=examples)

    def export_squad(self, *, validated_only: bool, human_won_only: bool) -> dict[str, Any]:
        """:meth:`export_dataset` as SQuAD v1.1 JSON, readable by ``core.datasets.load_squad``."""
        return self.export_dataset(validated_only=validated_only,
                                   human_won_only=human_won_only).to_squad_json()

    def export_records(self) -> dict[str, Any]:
        """Everything stored (attempts with model answers, validations) as plain JSON data."""
        out = []
        for a in self.attempts():
            d = asdict(a)
            d.pop("context")
            d.pop("browser")  # a hash of someone's cookie: nobody else's business
            d["models"] = [asdict(m) for m in a.models]
            d["validation_status"] = a.validation_status
            out.append(d)
        ctx = {r[0]: r[1] for r in self.conn.execute("SELECT id, context FROM passages")}
        vals = [{k: x for k, x in asdict(v).items() if k != "browser"} for v in self.validations()]
        return {"attempts": out, "validations": vals,
                "passages": ctx}
