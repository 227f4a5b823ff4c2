"""Beat the AI: adversarial question writing with models in the loop (Bartolo et al. 2020).

A person reads a passage, writes a question and marks its answer span; the chosen models answer
at once. A model **wins** when the word-overlap F1 between its answer and the person's answer is
above a threshold (0.4 in the paper, :data:`WIN_THRESHOLD`, configurable). With several models
in the loop they act as one **ensemble adversary**: the adversary wins if ANY model wins, so the
person wins only by fooling every model (the paper recommends stronger adversaries for harder,
more diverse questions). F1 is the SQuAD v1.1 token F1 (:func:`core.metrics.word_overlap_f1`);
Chinese answers use the character-level F1 of :mod:`core.metrics.chinese` (whitespace tokens
mean nothing there), chosen by :func:`core.metrics.score_answer` from the passage language.

This module holds all the logic (no Streamlit):

* :class:`Passage`, :func:`passages` - the distinct contexts of a data set, with a stable id
  (a hash of the text, so the same paragraph has the same id in every file and every run);
* :class:`PassageSampler` - seeded sampling WITHOUT replacement that cycles through every
  passage before repeating any, with a plain-dict state that lives in a Streamlit session;
* span helpers for marking an answer: :func:`find_occurrences`, :func:`span_tokens`;
* :func:`judge` - each model's F1 and win, and the overall outcome;
* :class:`BeatStore` - the SQLite store of every attempt and every validation, committed one
  at a time, and the SQuAD v1.1 export;
* statistics of a collected set against a source data set (the paper's Table 3 / Figure 3):
  :func:`question_stats`, :func:`set_statistics`, :func:`fooling_rates`,
  :func:`answerability`, :func:`comparison_rows`, :func:`wh_rows`, :func:`distribution_rows`.

Validation (the paper: a question is kept if another person gives a matching answer): a
validator, not the author, answers a stored question without seeing the author's answer, or
says the passage does not answer it. The validator **agrees** when the F1 between the two
answers is >= :data:`AGREE_THRESHOLD` (0.4, configurable). Per attempt: ``answerable`` when a
strict majority of its validations agree (one agreeing validation is enough; a 1-1 tie is not,
and asks for a third validator), ``flagged`` when any validation disagrees.

Who is "another person" (core/identity.py): an author can never validate their own question.
Each attempt and validation keeps the writer's display name and the hash of their browser's
token; a validation is refused when its browser token matches the author's, or when the names
have the same :func:`core.identity.name_key` (case, accents, invisible characters and
look-alikes such as ``a1ice`` / ``alice`` ignored), and a person (by name key or by browser)
validates a question once. Names are not authentication: this stops honest mistakes and cheap
tricks, not a visitor who clears their cookies and invents a new name.
"""
from __future__ import annotations

import functools
import hashlib
import os
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core import config, identity
from core.datasets import Dataset
from core.metrics import score_answer
from core.sqlite_db import SQLiteFile
from core.types import Answer, QAExample, Span

__all__ = [
    "WIN_THRESHOLD", "AGREE_THRESHOLD", "DB_ENV", "DB_FILENAME", "WH_CLASSES",
    "Passage", "passages", "passage_id", "PassageSampler",
    "find_occurrences", "span_tokens", "word_tokens", "answer_f1",
    "ModelVerdict", "judge", "Attempt", "Validation", "BeatStore", "default_db_path",
    "ItemStats", "SetStatistics", "question_stats", "set_statistics", "dataset_statistics",
    "attempt_statistics", "longest_common_ngram", "wh_word", "fooling_rates", "answerability",
    "comparison_rows", "wh_rows", "distribution_rows",
]

WIN_THRESHOLD = 0.4    # a model wins when F1(model answer, human answer) > this (Bartolo et al.)
AGREE_THRESHOLD = 0.4  # a validator agrees when F1(validator answer, author answer) >= this
DB_ENV = "QAX_BEAT_DB"
DB_FILENAME = "beat_the_ai.sqlite"


# ----------------------------------------------------------------------------------------------
# Passages and the sampler


@dataclass(frozen=True)
class Passage:
    """One context of a data set. ``id`` is :func:`passage_id` of the text."""

    id: str
    context: str
    title: str
    lang: str
    dataset: str


def passage_id(context: str) -> str:
    """A stable id of a passage text: "p" + the first 16 hex digits of its SHA-256.

    >>> passage_id("abc")
    'pba7816bf8f01cfea'
    """
    return "p" + hashlib.sha256(context.encode("utf-8")).hexdigest()[:16]


def passages(dataset: Dataset) -> list[Passage]:
    """The distinct contexts of ``dataset`` in order of first appearance, as Passages (title
    and language from the first example that has the context)."""
    found: dict[str, Passage] = {}
    for ex in dataset.examples:
        if ex.context not in found:
            found[ex.context] = Passage(passage_id(ex.context), ex.context, ex.title, ex.lang,
                                        dataset.name)
    return list(found.values())


@dataclass
class PassageSampler:
    """Random passages without replacement: every passage once per round, in a new order each
    round, so a player does not keep seeing the same few.

    Round ``r`` visits the passages in the order of ``random.Random(f"{seed}:{r}")`` shuffling
    ``range(n)``: a pure function of (seed, round), so the whole state is five integers
    (:meth:`to_state` / :meth:`from_state`, JSON-safe for a Streamlit session). When a new round
    would start with the passage just shown, its first two entries are swapped, so the same
    passage never comes twice in a row (n >= 2).
    """

    n: int
    seed: int
    round: int = 0
    pos: int = 0
    last: int = -1
    _order_cache: tuple[int, list[int]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"a passage sampler needs at least one passage, got n={self.n!r}")

    @classmethod
    def new(cls, n: int, rng: random.Random) -> "PassageSampler":
        """A sampler over ``n`` passages whose seed is drawn from ``rng``."""
        return cls(n=n, seed=rng.getrandbits(63))

    def _order(self) -> list[int]:
        if self._order_cache is None or self._order_cache[0] != self.round:
            order = list(range(self.n))
            random.Random(f"{self.seed}:{self.round}").shuffle(order)
            if self.n > 1 and order[0] == self.last:
                order[0], order[1] = order[1], order[0]
            self._order_cache = (self.round, order)
        return self._order_cache[1]

    def next(self) -> int:
        """The index of the next passage."""
        if self.pos >= self.n:
            self.round, self.pos = self.round + 1, 0
        idx = self._order()[self.pos]
        self.pos += 1
        self.last = idx
        return idx

    def to_state(self) -> dict[str, int]:
        return {"n": self.n, "seed": self.seed, "round": self.round, "pos": self.pos,
                "last": self.last}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "PassageSampler":
        missing = {"n", "seed", "round", "pos", "last"} - set(state)
        if missing:
            raise ValueError(f"sampler state lacks {sorted(missing)}")
        return cls(n=int(state["n"]), seed=int(state["seed"]), round=int(state["round"]),
                   pos=int(state["pos"]), last=int(state["last"]))


# ----------------------------------------------------------------------------------------------
# Tokens and spans

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A word: one CJK ideograph, or a run of other word characters joined by inner - ' ’ . (so
# "best-known", "don't" and "3.5" stay whole); punctuation marks are tokens of their own.
_WORD = rf"[{_CJK}]|[^\W{_CJK}]+(?:[-'’.][^\W{_CJK}]+)*"
_WORD_RE = re.compile(_WORD)
_TOKEN_RE = re.compile(rf"{_WORD}|[^\w\s]")


def word_tokens(text: str) -> list[str]:
    """The words of ``text`` (punctuation dropped; each CJK ideograph a word of its own).

    >>> word_tokens("Who was the best-known keeper?")
    ['Who', 'was', 'the', 'best-known', 'keeper']
    >>> word_tokens("望川桥建于1907年。")
    ['望', '川', '桥', '建', '于', '1907', '年']
    """
    return _WORD_RE.findall(text)


def span_tokens(context: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the words and punctuation marks of ``context``: the units
    a person selects an answer from (punctuation apart, so a trailing comma can be left out).

    >>> span_tokens("lit on 14 October 1871, after")
    [(0, 3), (4, 6), (7, 9), (10, 17), (18, 22), (22, 23), (24, 29)]
    """
    return [m.span() for m in _TOKEN_RE.finditer(context)]


def find_occurrences(context: str, text: str) -> list[tuple[int, int]]:
    """Every span [start, end) where ``text`` (stripped) occurs in ``context``, first to last.

    Exact (case-sensitive) matches when there are any, otherwise case-insensitive ones (people
    type "margaret ellison" for "Margaret Ellison"); [] when the text is blank or absent.

    >>> find_occurrences("The tower. the TOWER.", "tower")
    [(4, 9)]
    >>> find_occurrences("The tower. the TOWER.", "the tower")
    [(0, 9), (11, 20)]
    """
    needle = text.strip()
    if not needle:
        return []
    for hay, pat in ((context, needle), (context.casefold(), needle.casefold())):
        if len(hay) != len(context):  # casefold changed lengths (ß -> ss): offsets unusable
            break
        found, i = [], hay.find(pat)
        while i != -1:
            found.append((i, i + len(pat)))
            i = hay.find(pat, i + 1)
        if found:
            return found
    return []


def answer_f1(a: str, b: str, lang: str) -> float:
    """F1 between two answers: SQuAD word-overlap F1, or character-level F1 for Chinese."""
    return score_answer(a, [b], lang)[1]


def _check_span(context: str, span: Sequence[int], what: str, lang: str) -> tuple[int, int]:
    if len(span) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in span):
        raise ValueError(f"{what} should be two integer character offsets (start, end), "
                         f"got {span!r}")
    start, end = span
    if not 0 <= start < end <= len(context):
        raise ValueError(f"{what} ({start}, {end}) is not a non-empty range inside the passage "
                         f"of {len(context)} characters")
    text = context[start:end]
    if answer_f1(text, text, lang) == 0.0:
        raise ValueError(f"{what} {text!r} has no words (punctuation and articles alone can "
                         f"never be matched)")
    return start, end


def _check_threshold(value: float, what: str, *, allow_zero: bool, allow_one: bool) -> float:
    value = float(value)
    lo_ok = value > 0 or (allow_zero and value == 0)
    hi_ok = value < 1 or (allow_one and value == 1)
    if not (lo_ok and hi_ok):
        lo, hi = ("[0" if allow_zero else "(0"), ("1]" if allow_one else "1)")
        raise ValueError(f"{what} must lie in {lo}, {hi}, got {value}")
    return value


# ----------------------------------------------------------------------------------------------
# Judging an attempt


@dataclass(frozen=True)
class ModelVerdict:
    """One model's answer to an attempt: its span (None offsets = no answer), F1 against the
    person's answer, and whether it won (F1 > threshold)."""

    model: str
    answer: str
    start: int | None
    end: int | None
    score: float | None
    f1: float
    won: bool


def judge(human_answer: str, model_spans: Mapping[str, Span | None], lang: str,
          threshold: float = WIN_THRESHOLD) -> tuple[list[ModelVerdict], str]:
    """Each model's verdict, and the outcome: "model" when ANY model's F1 > ``threshold``
    (the ensemble adversary wins), else "human". A model without an answer (None) has F1 0.

    >>> v, outcome = judge("34 metres", {"a": Span("34 metres tall", 0, 14, 0.9),
    ...                                  "b": Span("granite", 20, 27, 0.5)}, "en")
    >>> [(m.model, round(m.f1, 3), m.won) for m in v], outcome
    ([('a', 0.8, True), ('b', 0.0, False)], 'model')
    """
    threshold = _check_threshold(threshold, "the win threshold", allow_zero=True, allow_one=False)
    if not model_spans:
        raise ValueError("at least one model must answer")
    verdicts = []
    for name, span in model_spans.items():
        if span is None:
            verdicts.append(ModelVerdict(name, "", None, None, None, 0.0, False))
            continue
        f1 = answer_f1(span.text, human_answer, lang)
        verdicts.append(ModelVerdict(name, span.text, span.start, span.end, float(span.score),
                                     f1, f1 > threshold))
    return verdicts, ("model" if any(v.won for v in verdicts) else "human")


# ----------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Attempt:
    """A stored attempt, with its model verdicts and a summary of its validations."""

    id: int
    created_at: str
    user: str
    session: str
    passage_id: str
    dataset: str
    title: str
    lang: str
    context: str
    question: str
    answer_start: int
    answer_end: int
    answer_text: str
    threshold: float
    outcome: str  # "human" (every model fooled) or "model" (some model matched)
    models: tuple[ModelVerdict, ...] = ()
    validations: int = 0
    agreements: int = 0
    browser: str = ""  # identity.token_key of the author's browser token ("" before schema 2)

    @property
    def human_won(self) -> bool:
        return self.outcome == "human"

    @property
    def answerable(self) -> bool | None:
        """None before any validation; else True when a strict majority of validators agree."""
        if self.validations == 0:
            return None
        return self.agreements > self.validations - self.agreements

    @property
    def flagged(self) -> bool:
        """Some validator disagreed with the author's answer."""
        return self.agreements < self.validations

    @property
    def validation_status(self) -> str:
        if self.validations == 0:
            return "unvalidated"
        if not self.flagged:
            return "answerable"
        if self.agreements == 0:
            return "not answerable"
        return "answerable (disputed)" if self.answerable else "disputed"


@dataclass(frozen=True)
class Validation:
    """A validator's answer to a stored question. No span (None offsets, empty text) means
    "the passage does not answer it". ``agrees``: F1 with the author's answer >= threshold."""

    id: int
    attempt_id: int
    created_at: str
    validator: str
    session: str
    answer_start: int | None
    answer_end: int | None
    answer_text: str
    f1: float
    threshold: float
    agrees: bool
    browser: str = ""  # identity.token_key of the validator's browser token


# ----------------------------------------------------------------------------------------------
# The store

SCHEMA_VERSION = "2"  # 2: attempts.browser and validations.browser (1 is upgraded on open)

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
                if row is not None and row[0] == "1":
                    # Schema 1 had no browser column: old rows get '' (unknown browser) and
                    # keep working; the name comparison covers them.
                    for table in ("attempts", "validations"):
                        cols = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
                        if "browser" not in cols:
                            c.execute(f"ALTER TABLE {table} ADD COLUMN browser TEXT NOT NULL "
                                      f"DEFAULT ''")
                    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                              (SCHEMA_VERSION,))
                elif row is None:
                    c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
                elif row[0] != SCHEMA_VERSION:
                    raise ValueError(f"{self.path}: Beat-the-AI schema version {row[0]}, this "
                                     f"code reads version {SCHEMA_VERSION}")
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
                       browser: str | None = None) -> Attempt:
        """Judge and store one attempt (committed on return); returns it as stored.

        ``span``: the person's answer, character offsets [start, end) into ``passage.context``.
        ``model_spans``: model name -> its best span (None: it gave no answer), in the order
        the models were chosen. ``user``: the player's name (:func:`core.identity.display_name`;
        blank -> "anonymous"). ``browser``: the player's browser token (only its hash is kept).
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        if passage.id != passage_id(passage.context):
            raise ValueError(f"passage id {passage.id!r} does not match its text")
        start, end = _check_span(passage.context, span, "the answer span", passage.lang)
        answer = passage.context[start:end]
        verdicts, outcome = judge(answer, model_spans, passage.lang, threshold)
        user = identity.display_name(user) or "anonymous"
        created = now or _now()
        with self.transaction() as c:
            c.execute("INSERT OR IGNORE INTO passages VALUES (?, ?)", (passage.id, passage.context))
            cur = c.execute(
                "INSERT INTO attempts (created_at, user, session, passage_id, dataset, title, lang,"
                " question, answer_start, answer_end, answer_text, threshold, outcome, browser)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (created, user, session, passage.id, passage.dataset, passage.title, passage.lang,
                 question.strip(), start, end, answer, float(threshold), outcome,
                 identity.token_key(browser)))
            attempt_id = int(cur.lastrowid)
            c.executemany(
                "INSERT INTO model_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(attempt_id, i, v.model, v.answer, v.start, v.end, v.score, v.f1, int(v.won))
                 for i, v in enumerate(verdicts)])
        return self.attempt(attempt_id)

    def record_validation(self, attempt_id: int, validator: str, span: Sequence[int] | None, *,
                          session: str, threshold: float = AGREE_THRESHOLD,
                          now: str | None = None, browser: str | None = None) -> Validation:
        """Store a validator's answer to attempt ``attempt_id`` (committed on return).

        ``span``: the validator's answer as character offsets, or None for "the passage does not
        answer this question" (F1 0, a disagreement). ``browser``: the validator's browser
        token. The author cannot validate their own question (same browser, or a name with the
        same :func:`core.identity.name_key`), and each person (by name key or by browser)
        validates a question once.
        """
        threshold = _check_threshold(threshold, "the agreement threshold", allow_zero=False,
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
            start, end = _check_span(attempt.context, span, "the validator's answer span",
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


# ----------------------------------------------------------------------------------------------
# Statistics (Bartolo et al. 2020, Table 3 and Figure 3)

WH_CLASSES = ("what", "which", "who", "when", "where", "why", "how", "other")

# First wh-word of an English or German question (by word); whom/whose -> who, welche* -> which.
_WH_EN = {"what": "what", "which": "which", "who": "who", "whom": "who", "whose": "who",
          "when": "when", "where": "where", "why": "why", "how": "how"}
_WH_DE = {"was": "what", "welche": "which", "welcher": "which", "welches": "which",
          "welchen": "which", "welchem": "which", "wer": "who", "wen": "who", "wem": "who",
          "wessen": "who", "wann": "when", "wo": "where", "wohin": "where", "woher": "where",
          "warum": "why", "weshalb": "why", "wieso": "why", "weswegen": "why", "wie": "how"}
# Chinese question words (substrings); the earliest in the question wins, longer ones first at
# the same position (什么时候 "when" before 什么 "what").
_WH_ZH = [("什么时候", "when"), ("哪一年", "when"), ("何时", "when"), ("几时", "when"),
          ("哪里", "where"), ("哪儿", "where"), ("何地", "where"), ("为什么", "why"),
          ("为何", "why"), ("什么", "what"), ("啥", "what"), ("谁", "who"), ("怎么", "how"),
          ("如何", "how"), ("多少", "how"), ("几", "how"), ("哪", "which")]


def wh_word(question: str, lang: str) -> str:
    """The wh-class of a question: its first question word mapped to one of :data:`WH_CLASSES`
    (English and German by word, Chinese by substring), "other" when it has none, "n/a" for
    languages without a word list.

    >>> wh_word("In what year was it first lit?", "en"), wh_word("Wie hoch ist der Turm?", "de")
    ('what', 'how')
    >>> wh_word("望川桥是什么时候建成的？", "zh"), wh_word("Name the keeper.", "en")
    ('when', 'other')
    """
    base = lang.split("-")[0].lower()
    if base in ("en", "de"):
        table = _WH_EN if base == "en" else _WH_DE
        for w in word_tokens(question):
            if w.lower() in table:
                return table[w.lower()]
        return "other"
    if base == "zh":
        best: tuple[int, int, str] | None = None
        for pat, cls in _WH_ZH:
            i = question.find(pat)
            if i != -1 and (best is None or (i, -len(pat)) < best[:2]):
                best = (i, -len(pat), cls)
        return best[2] if best else "other"
    return "n/a"


@functools.lru_cache(maxsize=4096)  # a data set asks several questions about each passage
def _lower_words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in word_tokens(text))


@functools.lru_cache(maxsize=4096)
def _ngrams(text: str, n: int) -> frozenset[tuple[str, ...]]:
    words = _lower_words(text)
    return frozenset(words[i:i + n] for i in range(len(words) - n + 1))


def longest_common_ngram(question: str, passage: str) -> int:
    """Length of the longest run of consecutive words (lower-cased, punctuation dropped) that
    the question shares with the passage: the paper's lexical-overlap measure (it falls from 3
    to 2 as stronger models are put in the loop).

    >>> longest_common_ngram("Who kept the light burning?",
    ...                      "Margaret Ellison kept the light burning for 31 years.")
    4
    >>> longest_common_ngram("When was the lighthouse first lit?",  # "the lighthouse", "first lit"
    ...                      "The lighthouse was first lit in 1871.")
    2
    """
    q = _lower_words(question)
    # Grow n while some question n-gram occurs in the passage: a shared (n+1)-gram implies a
    # shared n-gram, so the first n without one ends the search (set lookups, no O(|q||p|) DP).
    best = 0
    for n in range(1, len(q) + 1):
        grams = _ngrams(passage, n)
        if not any(q[i:i + n] in grams for i in range(len(q) - n + 1)):
            break
        best = n
    return best


@dataclass(frozen=True)
class ItemStats:
    """One question's statistics: lengths in words (:func:`word_tokens`), longest common n-gram
    with its passage, and its wh-class."""

    question_tokens: int
    answer_tokens: int
    longest_ngram: int
    wh: str


def question_stats(question: str, context: str, answer: str, lang: str) -> ItemStats:
    return ItemStats(len(word_tokens(question)), len(word_tokens(answer)),
                     longest_common_ngram(question, context), wh_word(question, lang))


@dataclass
class SetStatistics:
    """Statistics of a set of questions (a collected set or a source data set)."""

    name: str
    items: list[ItemStats]

    @property
    def n(self) -> int:
        return len(self.items)

    def _mean(self, attr: str) -> float | None:
        return sum(getattr(i, attr) for i in self.items) / self.n if self.items else None

    @property
    def mean_question_tokens(self) -> float | None:
        return self._mean("question_tokens")

    @property
    def mean_answer_tokens(self) -> float | None:
        return self._mean("answer_tokens")

    @property
    def mean_longest_ngram(self) -> float | None:
        return self._mean("longest_ngram")

    def wh_counts(self) -> dict[str, int]:
        """Count per wh-class, in :data:`WH_CLASSES` order ("n/a" last, when present)."""
        c = Counter(i.wh for i in self.items)
        out = {k: c.get(k, 0) for k in WH_CLASSES}
        if c.get("n/a"):
            out["n/a"] = c["n/a"]
        return out


def set_statistics(name: str, items: Iterable[tuple[str, str, str, str]]) -> SetStatistics:
    """Statistics of (question, context, answer, lang) tuples."""
    try:
        return SetStatistics(name, [question_stats(q, c, a, lang) for q, c, a, lang in items])
    finally:
        # The word caches serve one set's repeated passages; emptied afterwards, so no text of
        # an uploaded set outlives the visitor's session in this process-wide cache.
        _lower_words.cache_clear()
        _ngrams.cache_clear()


def dataset_statistics(dataset: Dataset) -> SetStatistics:
    """Statistics of a source data set; each question's first gold answer gives its answer
    length, questions without a gold answer are left out."""
    return set_statistics(dataset.name, ((ex.question, ex.context, ex.answers[0].text, ex.lang)
                                         for ex in dataset.examples if ex.answers))


def attempt_statistics(name: str, attempts: Iterable[Attempt]) -> SetStatistics:
    return set_statistics(name, ((a.question, a.context, a.answer_text, a.lang) for a in attempts))


def fooling_rates(attempts: Sequence[Attempt]) -> list[dict[str, Any]]:
    """Per model: the attempts it answered and the share it lost (its F1 <= threshold, i.e. the
    question fooled it); last row "any model (ensemble)": the share every model lost."""
    per: dict[str, list[int]] = {}
    for a in attempts:
        for m in a.models:
            n, fooled = per.setdefault(m.model, [0, 0]), not m.won
            n[0] += 1
            n[1] += fooled
    rows = [{"model": k, "attempts": n, "fooled": f, "fooling_rate": f / n}
            for k, (n, f) in per.items()]
    if attempts:
        human = sum(a.human_won for a in attempts)
        rows.append({"model": "any model (ensemble)", "attempts": len(attempts), "fooled": human,
                     "fooling_rate": human / len(attempts)})
    return rows


def answerability(attempts: Sequence[Attempt]) -> dict[str, Any]:
    """Validated questions, how many are answerable and flagged, and the answerable share."""
    validated = [a for a in attempts if a.validations]
    ok = sum(bool(a.answerable) for a in validated)
    return {"validated": len(validated), "answerable": ok,
            "flagged": sum(a.flagged for a in validated),
            "answerability": ok / len(validated) if validated else None}


def comparison_rows(sets: Sequence[SetStatistics],
                    attempts_by_set: Mapping[str, Sequence[Attempt]] | None = None
                    ) -> list[dict[str, Any]]:
    """The Table-3-like summary: one row per set. Model-fooling rate (ensemble) and human
    answerability only exist for collected sets (given in ``attempts_by_set``), else None."""
    rows = []
    for s in sets:
        atts = (attempts_by_set or {}).get(s.name)
        fool = fooling_rates(atts)[-1]["fooling_rate"] if atts else None
        rows.append({"set": s.name, "questions": s.n,
                     "question_tokens": s.mean_question_tokens,
                     "answer_tokens": s.mean_answer_tokens,
                     "longest_common_ngram": s.mean_longest_ngram,
                     "model_fooling_rate": fool,
                     "human_answerability": answerability(atts)["answerability"] if atts else None})
    return rows


def wh_rows(sets: Sequence[SetStatistics]) -> list[dict[str, Any]]:
    """Wh-word distribution per set (Figure 3): count and share of every wh-class."""
    rows = []
    for s in sets:
        for wh, count in s.wh_counts().items():
            rows.append({"set": s.name, "wh": wh, "count": count,
                         "share": count / s.n if s.n else 0.0})
    return rows


def distribution_rows(sets: Sequence[SetStatistics], attr: str) -> list[dict[str, Any]]:
    """Histogram of one per-question statistic (``question_tokens``, ``answer_tokens`` or
    ``longest_ngram``) per set: count and share of each value, values ascending."""
    if attr not in ("question_tokens", "answer_tokens", "longest_ngram"):
        raise ValueError(f"no per-question statistic {attr!r}")
    rows = []
    for s in sets:
        c = Counter(getattr(i, attr) for i in s.items)
        for value in sorted(c):
            rows.append({"set": s.name, attr: value, "count": c[value], "share": c[value] / s.n})
    return rows
