"""The sweep database: every perturbed question, every prediction, every score, in one SQLite file.

Why SQLite (stdlib ``sqlite3``) and not DuckDB or files:
  * zero dependencies: it ships with Python, so a clean clone can run and browse sweeps;
  * transactional: a chunk of work (its variants, predictions and scores) is committed at once or
    not at all, so a sweep killed at any moment (SIGKILL included) leaves no half-written chunk;
  * one writer is all a sweep needs (the model is the bottleneck, not the inserts), and WAL mode
    lets the app read a sweep's results while the sweep is still writing them;
  * every drill-down is a plain SQL query (``WHERE model = ? AND perturbation = ? ORDER BY ...``),
    and the aggregates are ``GROUP BY`` queries over the same rows;
  * the whole store is one portable file that can be copied, attached to an issue or opened with
    the ``sqlite3`` shell. (DuckDB would aggregate faster, but the tables hold tens of thousands
    of rows, where SQLite answers in milliseconds, and it would add a dependency.)

Opening: ``Store(path)`` writes (a sweep starting or resuming) and opens only a new file or an
existing sweep store: a folder, a file that is not SQLite, or another application's SQLite
database is refused with :class:`StoreError` before anything is written, so the file stays byte
for byte as it was. ``Store(path, readonly=True)`` (every report and page read) opens with
SQLite's ``mode=ro`` and refuses the same files, plus a missing one.

Interrupted sweeps: a sweep's row records its owner, the process running it (``owner_pid``,
``owner_host``, ``owner_start``: the process start time, so a recycled pid is not mistaken for
it), and ``updated_at`` is a heartbeat rewritten with every committed chunk. A sweep stored as
'running' whose owner is gone is *interrupted* (:func:`effective_status`); when the owner cannot
be checked (another host, another OS, a database written before these columns existed) a
heartbeat older than :data:`STALE_AFTER_S` says the same. Nothing is stored for 'interrupted':
it is what 'running' means once its process died, and resuming sets a new owner. Databases
written before the owner columns existed get them on their next write (``ALTER TABLE ... ADD
COLUMN``, NULL for old rows); nothing else changes, so stored sweeps keep their meaning and keys.

``synchronous=NORMAL`` in WAL mode: a committed transaction survives the process being killed;
only a power cut can lose the last commits (which a re-run then recomputes).

Tables (``SCHEMA`` below has the columns):
  contexts        context texts by content hash (perturbed contexts too), stored once
  examples        the QA examples by content hash (id, lang, question, context, gold answers)
  variants        CACHE: one perturbed example per content key (perturbation id + params + seed
                  + repeat + example hash); status 'ok', or 'n/a' / 'error' with a note
  predictions     CACHE: one best span per (model name + model fingerprint + question + context)
  sweeps          one row per sweep: its name, configuration (JSON) and status
  sweep_examples, sweep_models, sweep_specs: what a sweep covers
  clean_results   per sweep, model and example: the clean prediction and its EM/F1
  results         per sweep, model, perturbation, params, repeat and example: the perturbed
                  prediction and its EM/F1 (NULL when the perturbation did not apply)
  result_rows     a VIEW joining all of the above: one readable row per perturbed prediction

The caches are shared by every sweep in the file: a new or extended sweep finds the variants and
predictions already computed and only adds its own ``results`` rows. Uniqueness is enforced by
primary keys and every insert is ``INSERT OR IGNORE``, so re-running a unit of work is harmless.
"""
from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core.io.sqlite_db import SQLiteFile, sqlite_kind, table_names
from core.perturb.spec import canonical_json  # noqa: F401  (re-exported: the stored JSON's form)

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS contexts (
    hash TEXT PRIMARY KEY,              -- sha256 of the text
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS examples (
    hash         TEXT PRIMARY KEY,      -- content hash: id, lang, question, context, answers
    id           TEXT NOT NULL,
    title        TEXT NOT NULL,
    lang         TEXT NOT NULL,
    question     TEXT NOT NULL,
    context_hash TEXT NOT NULL REFERENCES contexts(hash),
    answers_json TEXT NOT NULL          -- [[text, answer_start], ...]
);
CREATE TABLE IF NOT EXISTS variants (
    key          TEXT PRIMARY KEY,      -- content key, see core.perturb.spec.variant_key
    perturbation TEXT NOT NULL,
    params_json  TEXT NOT NULL,
    seed         INTEGER,               -- NULL for deterministic perturbations (seed-independent)
    repeat       INTEGER NOT NULL,
    example_hash TEXT NOT NULL REFERENCES examples(hash),
    status       TEXT NOT NULL CHECK (status IN ('ok', 'n/a', 'error')),
    note         TEXT,                  -- why 'n/a' or 'error'
    field        TEXT,                  -- what changed: question | context | both
    question     TEXT,                  -- the question asked (the original for context edits)
    context_hash TEXT REFERENCES contexts(hash),
    answers_json TEXT,                  -- gold answers in the perturbed context
    changed      INTEGER,               -- 0 when a randomised perturbation happened to change nothing
    cer          REAL,
    wer          REAL,
    meta_json    TEXT
);
CREATE TABLE IF NOT EXISTS predictions (
    key          TEXT PRIMARY KEY,      -- sha256 of model name, fingerprint, question, context hash
    model        TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    question     TEXT NOT NULL,
    context_hash TEXT NOT NULL REFERENCES contexts(hash),
    answer       TEXT NOT NULL,         -- '' when the engine gave no span (e.g. empty question)
    span_start   INTEGER,               -- character offsets into that context, [start, end)
    span_end     INTEGER,
    score        REAL
);
CREATE TABLE IF NOT EXISTS sweeps (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    config_hash TEXT NOT NULL,
    config_json TEXT NOT NULL,
    dataset     TEXT NOT NULL,
    n_examples  INTEGER NOT NULL,
    total_units INTEGER NOT NULL,       -- clean + perturbed result rows when complete
    status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'failed')),
    note        TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,          -- heartbeat: rewritten with every committed chunk
    owner_pid   INTEGER,                -- the process that set it 'running' (see effective_status)
    owner_host  TEXT,
    owner_start TEXT                    -- that process's start time (boot id + clock ticks)
);
CREATE TABLE IF NOT EXISTS sweep_examples (
    sweep_id     INTEGER NOT NULL REFERENCES sweeps(id),
    example_hash TEXT NOT NULL REFERENCES examples(hash),
    position     INTEGER NOT NULL,
    PRIMARY KEY (sweep_id, example_hash)
);
CREATE TABLE IF NOT EXISTS sweep_models (
    sweep_id    INTEGER NOT NULL REFERENCES sweeps(id),
    model       TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (sweep_id, model)
);
CREATE TABLE IF NOT EXISTS sweep_specs (
    sweep_id     INTEGER NOT NULL REFERENCES sweeps(id),
    perturbation TEXT NOT NULL,
    params_json  TEXT NOT NULL,
    label        TEXT NOT NULL,         -- e.g. DCRQ(n_chars=2)
    family       TEXT NOT NULL,
    field        TEXT NOT NULL,
    randomised   INTEGER NOT NULL,
    repeats      INTEGER NOT NULL,
    source       TEXT NOT NULL,
    position     INTEGER NOT NULL,
    PRIMARY KEY (sweep_id, perturbation, params_json)
);
CREATE TABLE IF NOT EXISTS clean_results (
    sweep_id       INTEGER NOT NULL REFERENCES sweeps(id),
    model          TEXT NOT NULL,
    example_hash   TEXT NOT NULL REFERENCES examples(hash),
    prediction_key TEXT NOT NULL REFERENCES predictions(key),
    em             REAL NOT NULL,       -- in [0, 1]
    f1             REAL NOT NULL,
    PRIMARY KEY (sweep_id, model, example_hash)
);
CREATE TABLE IF NOT EXISTS results (
    sweep_id       INTEGER NOT NULL REFERENCES sweeps(id),
    model          TEXT NOT NULL,
    perturbation   TEXT NOT NULL,
    params_json    TEXT NOT NULL,
    repeat         INTEGER NOT NULL,
    example_hash   TEXT NOT NULL REFERENCES examples(hash),
    variant_key    TEXT NOT NULL REFERENCES variants(key),
    status         TEXT NOT NULL CHECK (status IN ('ok', 'n/a', 'error')),
    prediction_key TEXT REFERENCES predictions(key),
    em             REAL,                -- in [0, 1], NULL unless status = 'ok'
    f1             REAL,
    PRIMARY KEY (sweep_id, model, perturbation, params_json, repeat, example_hash)
);
CREATE INDEX IF NOT EXISTS results_cell ON results (sweep_id, model, perturbation, params_json);

CREATE VIEW IF NOT EXISTS result_rows AS
SELECT r.sweep_id, s.name AS sweep, r.model, r.perturbation, r.params_json, v.seed, r.repeat,
       e.id AS example_id, e.lang, e.title, r.status, v.note, v.field,
       e.question AS original_question, v.question AS variant_question,
       CASE WHEN v.field = 'question' THEN v.question ELSE vc.text END AS variant_text,
       p.answer, p.span_start, p.span_end, p.score, r.em, r.f1,
       cp.answer AS clean_answer, cp.span_start AS clean_start, cp.span_end AS clean_end,
       cp.score AS clean_score, c.em AS clean_em, c.f1 AS clean_f1,
       e.answers_json AS gold_json, v.answers_json AS variant_gold_json,
       e.context_hash, v.context_hash AS variant_context_hash, v.cer, v.wer, v.changed,
       r.example_hash, r.variant_key
FROM results r
JOIN sweeps s ON s.id = r.sweep_id
JOIN examples e ON e.hash = r.example_hash
JOIN variants v ON v.key = r.variant_key
LEFT JOIN contexts vc ON vc.hash = v.context_hash
LEFT JOIN predictions p ON p.key = r.prediction_key
LEFT JOIN clean_results c
       ON c.sweep_id = r.sweep_id AND c.model = r.model AND c.example_hash = r.example_hash
LEFT JOIN predictions cp ON cp.key = c.prediction_key;
"""

# SQLite's default limit on host parameters is 32766 (3.32+); stay far below it.
_IN_BATCH = 900


# Columns added after the first release; an older file gets them on its next write.
_ADDED_COLUMNS = {"sweeps": (("owner_pid", "INTEGER"), ("owner_host", "TEXT"), ("owner_start", "TEXT"))}
# The tables that make a file a sweep store (another application's database lacks them).
_SIGNATURE = {"meta", "sweeps", "results", "clean_results"}

#: A 'running' sweep whose owner cannot be checked is interrupted after this long without a chunk.
STALE_AFTER_S = 3600.0


class StoreError(RuntimeError, ValueError):
    """A database that cannot be used (another schema version, not a sweep store). Also a
    ValueError: it is bad input, which the CLIs (core.cli) report in one line."""


# ------------------------------------------------------------------------------------- owners


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started, as "<boot id>:<clock ticks since boot>" (Linux /proc), or
    None where that cannot be read. With the pid it names one process, even after pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()   # after "pid (comm)": state is field 3, starttime 22
    if len(fields) < 20 or fields[0] in ("Z", "X"):   # a zombie has exited: it owns nothing
        return "exited"
    return f"{boot}:{fields[19]}"


def process_identity() -> tuple[int, str, str | None]:
    """(pid, host name, start time) of this process: the owner recorded for a running sweep."""
    pid = os.getpid()
    return pid, socket.gethostname(), _process_start(pid)


def owner_alive(pid: int | None, host: str | None, start: str | None) -> bool | None:
    """True when the recorded owner process still runs, False when it is gone, None when this
    machine cannot tell (another host, no pid recorded, not a POSIX system).

    >>> owner_alive(*process_identity())
    True
    >>> owner_alive(None, socket.gethostname(), None) is None
    True
    """
    if pid is None or host != socket.gethostname() or os.name != "posix":
        return None   # (on Windows os.kill(pid, 0) would send CTRL_C_EVENT, not probe)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass          # it exists, under another user
    except (OverflowError, ValueError):
        return False
    now = _process_start(int(pid))
    if now == "exited":
        return False
    if start is not None and now is not None and now != start:
        return False  # the pid was recycled by another process
    return True


def _age_s(iso: str | None, now: datetime | None = None) -> float:
    try:
        then = datetime.fromisoformat(str(iso))
    except ValueError:
        return float("inf")
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - then).total_seconds()


def effective_status(row: Any, now: datetime | None = None) -> str:
    """A sweep row's status as a reader should show it: 'interrupted' for a 'running' sweep whose
    owner process is gone (or, when that cannot be checked, whose last chunk is older than
    STALE_AFTER_S); the stored status otherwise. ``row``: a sweeps row or a dict of one."""
    status = row["status"]
    if status != "running":
        return status
    keys = row.keys()

    def get(k):
        return row[k] if k in keys else None

    alive = owner_alive(get("owner_pid"), get("owner_host"), get("owner_start"))
    if alive is False:
        return "interrupted"
    if alive is None and _age_s(row["updated_at"], now) > STALE_AFTER_S:
        return "interrupted"
    return "running"


def text_hash(text: str) -> str:
    """sha256 hex digest of a text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Store(SQLiteFile):
    """An open sweep database. Use as a context manager, or call :meth:`close`.

    Reads go straight through ``self.conn``; writes go inside ``with store.transaction():`` so that
    each chunk of work is atomic.
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        if str(path) == ":memory:":
            if readonly:
                raise StoreError("an in-memory database cannot be opened read-only")
            self._connect(path, timeout)
            self._init_schema()
            return
        kind = sqlite_kind(self.path)
        if kind == "directory":
            raise StoreError(f"{path} is a folder, not a sweep database file")
        if kind == "other":
            raise StoreError(f"{path} is not a SQLite file, so not a sweep database; it was left "
                             "untouched (name a new file or an existing sweep database)")
        if readonly and kind in ("missing", "empty"):
            raise StoreError(f"no sweep database at {path}" + (" (an empty file)" if kind == "empty" else ""))
        if kind == "sqlite":
            self._refuse_foreign(timeout)   # read-only look first: a foreign file is never written
        if readonly:
            self._connect_readonly(self.path, timeout)
            self._check_version()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._connect(path, timeout)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a usable SQLite sweep database ({e})") from e
        try:
            self._init_schema()
        except sqlite3.DatabaseError as e:
            self.conn.close()
            raise StoreError(f"{path}: not a usable SQLite sweep database ({e})") from e
        except BaseException:
            self.conn.close()
            raise

    def _refuse_foreign(self, timeout: float) -> None:
        """StoreError unless the SQLite file at self.path holds a sweep store or no table at all."""
        probe = SQLiteFile()
        try:
            probe._connect_readonly(self.path, timeout)
            tables = table_names(probe.conn)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable SQLite sweep database ({e}); it was left "
                             "untouched") from e
        finally:
            if hasattr(probe, "conn"):
                probe.close()
        if tables and not _SIGNATURE <= tables:
            shown = ", ".join(sorted(tables)[:8]) + (", ..." if len(tables) > 8 else "")
            raise StoreError(f"{self.path} is another application's SQLite database (tables: {shown}), "
                             "not a sweep database; it was left untouched (name a new file)")

    def _check_version(self) -> None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            self.conn.close()
            raise StoreError(f"{self.path}: not a usable SQLite sweep database ({e})") from e
        if row is None or row[0] != SCHEMA_VERSION:
            self.conn.close()
            found = "no schema version" if row is None else f"schema version {row[0]}"
            raise StoreError(f"{self.path}: sweep database with {found}, this code reads version "
                             f"{SCHEMA_VERSION}; use a new --db file")

    def _init_schema(self) -> None:
        with self.transaction():
            for statement in _statements(SCHEMA):
                self.conn.execute(statement)
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self.conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                                  (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: sweep database schema version {row[0]}, this code reads version "
                    f"{SCHEMA_VERSION}; use a new --db file")
            for table, columns in _ADDED_COLUMNS.items():
                have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
                for column, kind in columns:
                    if column not in have:   # a file written before the column existed
                        self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    # ------------------------------------------------------------------------------ plumbing

    def fetch_by_keys(self, table: str, key_column: str, keys: Iterable[str],
                      columns: str = "*") -> dict[str, sqlite3.Row]:
        """Rows of ``table`` whose ``key_column`` is one of ``keys``, by key (batched IN queries)."""
        if table not in _TABLES:
            raise ValueError(f"unknown table {table!r}")
        found: dict[str, sqlite3.Row] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), _IN_BATCH):
            batch = unique[i:i + _IN_BATCH]
            marks = ",".join("?" * len(batch))
            for row in self.conn.execute(
                    f"SELECT {columns} FROM {table} WHERE {key_column} IN ({marks})", batch):
                found[row[key_column]] = row
        return found

    def insert_many(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """INSERT OR IGNORE ``rows`` (dicts with the same keys) into ``table``."""
        if not rows:
            return
        if table not in _TABLES:
            raise ValueError(f"unknown table {table!r}")
        columns = list(rows[0])
        sql = (f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
               f"VALUES ({', '.join('?' * len(columns))})")
        self.conn.executemany(sql, [tuple(r[c] for c in columns) for r in rows])

    # ------------------------------------------------------------------------------ sweeps

    def sweep_by_name(self, name: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM sweeps WHERE name = ?", (name,)).fetchone()

    def sweep_id(self, sweep: int | str) -> int:
        """The id of a sweep given by id or name; KeyError naming the known sweeps otherwise."""
        if isinstance(sweep, int):
            row = self.conn.execute("SELECT id FROM sweeps WHERE id = ?", (sweep,)).fetchone()
        else:
            row = self.conn.execute("SELECT id FROM sweeps WHERE name = ?", (sweep,)).fetchone()
        if row is None:
            known = [r[0] for r in self.conn.execute("SELECT name FROM sweeps ORDER BY id")]
            raise KeyError(f"no sweep {sweep!r} in {self.path}; known sweeps: "
                           f"{', '.join(known) if known else '(none)'}")
        return int(row[0])

    def set_status(self, sweep_id: int, status: str, note: str | None, now: str) -> None:
        """Store a sweep's status; 'running' also records this process as its owner."""
        with self.transaction():
            self.conn.execute("UPDATE sweeps SET status = ?, note = ?, updated_at = ? WHERE id = ?",
                              (status, note, now, sweep_id))
            if status == "running":
                self.set_owner(sweep_id)

    def set_owner(self, sweep_id: int) -> None:
        """Record this process as the owner of a running sweep (call inside a transaction)."""
        pid, host, start = process_identity()
        self.conn.execute("UPDATE sweeps SET owner_pid = ?, owner_host = ?, owner_start = ? WHERE id = ?",
                          (pid, host, start, sweep_id))

    def insert_sweep(self, name: str, cfg_hash: str, cfg_json: str, dataset: str, n_examples: int,
                     total_units: int, now: str) -> int:
        """A new sweep's row, status 'running' and owned by this process (call inside a transaction)."""
        cur = self.conn.execute(
            "INSERT INTO sweeps (name, config_hash, config_json, dataset, n_examples, total_units, "
            "status, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?)",
            (name, cfg_hash, cfg_json, dataset, n_examples, total_units, now, now))
        sweep_id = int(cur.lastrowid)
        self.set_owner(sweep_id)   # this process: a reader tells a killed sweep from a live one
        return sweep_id

    def heartbeat(self, sweep_id: int, now: str) -> None:
        """Inside a chunk's transaction: ``updated_at`` tells a live sweep from a killed one."""
        self.conn.execute("UPDATE sweeps SET updated_at = ? WHERE id = ?", (now, sweep_id))

    def clean_done(self, sweep_id: int) -> set[tuple[str, str]]:
        """(model, example hash) of every clean result a sweep has."""
        return {(r[0], r[1]) for r in self.conn.execute(
            "SELECT model, example_hash FROM clean_results WHERE sweep_id = ?", (sweep_id,))}

    def perturbed_done(self, sweep_id: int) -> set[tuple[str, str, str, int, str]]:
        """(model, perturbation, params_json, repeat, example hash) of every perturbed result a sweep has."""
        return {tuple(r) for r in self.conn.execute(
            "SELECT model, perturbation, params_json, repeat, example_hash FROM results WHERE sweep_id = ?",
            (sweep_id,))}

    def done_units(self, sweep_id: int) -> int:
        """Result rows (clean + perturbed) written so far for a sweep."""
        clean = self.conn.execute("SELECT COUNT(*) FROM clean_results WHERE sweep_id = ?",
                                  (sweep_id,)).fetchone()[0]
        perturbed = self.conn.execute("SELECT COUNT(*) FROM results WHERE sweep_id = ?",
                                      (sweep_id,)).fetchone()[0]
        return int(clean) + int(perturbed)

    # ------------------------------------------------------------------ what a sweep covers

    def sweep_row(self, sweep_id: int) -> sqlite3.Row:
        """The sweep's row (name, configuration, status, owner, times)."""
        return self.conn.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()

    def sweep_rows(self) -> list[sqlite3.Row]:
        """Every sweep's row, oldest first."""
        return self.conn.execute("SELECT * FROM sweeps ORDER BY id").fetchall()

    def models(self, sweep_id: int) -> list[str]:
        """The sweep's models, in its order."""
        return [r[0] for r in self.conn.execute(
            "SELECT model FROM sweep_models WHERE sweep_id = ? ORDER BY position", (sweep_id,))]

    def spec_rows(self, sweep_id: int) -> list[sqlite3.Row]:
        """The sweep's resolved specs, in its order (id, params_json, label, family, field, ...)."""
        return self.conn.execute("SELECT * FROM sweep_specs WHERE sweep_id = ? ORDER BY position",
                                 (sweep_id,)).fetchall()

    def clean_scores(self, sweep_id: int, models: Sequence[str] | None = None) -> list[sqlite3.Row]:
        """(model, example_hash, em, f1) of every clean result (of ``models`` only, when given)."""
        sql = "SELECT model, example_hash, em, f1 FROM clean_results WHERE sweep_id = ?"
        return self.conn.execute(*_for_models(sql, sweep_id, models)).fetchall()

    def perturbed_scores(self, sweep_id: int, models: Sequence[str] | None = None) -> list[sqlite3.Row]:
        """(model, perturbation, params_json, example_hash, em, f1) of every perturbed result that
        was scored (status 'ok'; of ``models`` only, when given)."""
        sql = ("SELECT model, perturbation, params_json, example_hash, em, f1 FROM results "
               "WHERE sweep_id = ? AND status = 'ok'")
        return self.conn.execute(*_for_models(sql, sweep_id, models)).fetchall()

    def context_text(self, context_hash: str) -> str:
        row = self.conn.execute("SELECT text FROM contexts WHERE hash = ?", (context_hash,)).fetchone()
        if row is None:
            raise KeyError(f"context {context_hash} is not in {self.path}")
        return row[0]


_TABLES = {"meta", "contexts", "examples", "variants", "predictions", "sweeps", "sweep_examples",
           "sweep_models", "sweep_specs", "clean_results", "results"}


def _for_models(sql: str, sweep_id: int, models: Sequence[str] | None) -> tuple[str, tuple]:
    """``sql`` (filtered by sweep) with ``AND model IN (...)`` when ``models`` is given."""
    if models is None:
        return sql, (sweep_id,)
    return f"{sql} AND model IN ({', '.join('?' * len(models))})", (sweep_id, *models)


def _statements(script: str) -> list[str]:
    """Split the schema into statements (it has no ';' inside strings or triggers)."""
    return [s.strip() for s in script.split(";") if s.strip()]
