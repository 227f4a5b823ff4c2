"""The sweep database: every perturbed question, every prediction, every score, in one SQLite file.

Every query on it lives here (:class:`Store`'s methods: the runner's writes, the reads every view
shares, each view's own read, the stored aggregates); its tables are :mod:`core.sweeps.schema`'s.
The views (report, tables, slices, calibration, repair, drill, the Gallery) hold no SQL.

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

Interrupted sweeps: a sweep's row records its owner process and a heartbeat; which process owns a
'running' sweep, and whether it is still alive, is :mod:`core.sweeps.ownership`'s to say.

``synchronous=NORMAL`` in WAL mode: a committed transaction survives the process being killed;
only a power cut can lose the last commits (which a re-run then recomputes).

Tables (``core.sweeps.schema.SCHEMA`` has the columns):
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

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.compat import text_hash  # noqa: F401 (its old import place: core.sweeps.running.run, runner)
from core.io.sqlite_db import SQLiteFile, sqlite_kind, table_names
from core.perturb.spec import canonical_json  # noqa: F401  (re-exported: the stored JSON's form)
from core.sweeps.ownership import STALE_AFTER_S, effective_status, owner_alive, process_identity
from core.sweeps.schema import ADDED_COLUMNS, AGGREGATES_TABLE, SCHEMA, SCHEMA_VERSION, SIGNATURE, TABLES, statements

# SQLite's default limit on host parameters is 32766 (3.32+); stay far below it.
_IN_BATCH = 900


class StoreError(RuntimeError, ValueError):
    """A database that cannot be used (another schema version, not a sweep store). Also a
    ValueError: it is bad input, which the CLIs (core.cli) report in one line."""


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
        if tables and not SIGNATURE <= tables:
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
            for statement in statements(SCHEMA):
                self.conn.execute(statement)
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self.conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                                  (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: sweep database schema version {row[0]}, this code reads version "
                    f"{SCHEMA_VERSION}; use a new --db file")
            for table, columns in ADDED_COLUMNS.items():
                have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
                for column, kind in columns:
                    if column not in have:   # a file written before the column existed
                        self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    # ------------------------------------------------------------------------------ plumbing

    def fetch_by_keys(self, table: str, key_column: str, keys: Iterable[str],
                      columns: str = "*") -> dict[str, sqlite3.Row]:
        """Rows of ``table`` whose ``key_column`` is one of ``keys``, by key (batched IN queries)."""
        if table not in TABLES:
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
        if table not in TABLES:
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
            self.write_status(sweep_id, status, note, now)

    def write_status(self, sweep_id: int, status: str, note: str | None, now: str) -> None:
        """:meth:`set_status` inside the caller's transaction."""
        self.conn.execute("UPDATE sweeps SET status = ?, note = ?, updated_at = ? WHERE id = ?",
                          (status, note, now, sweep_id))
        if status == "running":
            self.set_owner(sweep_id)

    def running_elsewhere(self, sweep_id: int) -> str | None:
        """Who runs this sweep, when another live process does (call inside a transaction, before
        claiming it with :meth:`write_status`): "pid N on HOST, last chunk at T"; else None.
        A sweep this process owns, or whose owner is gone, is free to resume."""
        row = self.conn.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
        if row is None or effective_status(row) != "running":
            return None
        pid, host, _ = process_identity()
        if (row["owner_pid"], row["owner_host"]) == (pid, host):
            return None
        who = "no owner recorded" if row["owner_pid"] is None else f"pid {row['owner_pid']} on {row['owner_host']}"
        said = f"{who}, last chunk at {row['updated_at']}"
        if owner_alive(row["owner_pid"], row["owner_host"], row["owner_start"]) is None:   # not checkable here
            said += f"; it counts as interrupted {STALE_AFTER_S / 60:.0f} minutes after its last chunk"
        return said

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

    # ---------------------------------------------------------------- what the views read

    def clean_means(self, sweep_id: int) -> list[sqlite3.Row]:
        """(model, em, f1, n): clean EM/F1 (in [0, 1]) per model over the examples done so far."""
        return self.conn.execute("SELECT model, AVG(em) AS em, AVG(f1) AS f1, COUNT(*) AS n FROM clean_results "
                                 "WHERE sweep_id = ? GROUP BY model", (sweep_id,)).fetchall()

    def repeat_means(self, sweep_id: int) -> list[sqlite3.Row]:
        """Per (model, perturbation, params_json, repeat), repeats in order: n, the mean perturbed
        em/f1 and the mean clean_em/clean_f1 of the same examples (scored rows only)."""
        return self.conn.execute(
            "SELECT r.model, r.perturbation, r.params_json, r.repeat, COUNT(*) AS n, "
            "AVG(r.em) AS em, AVG(r.f1) AS f1, AVG(c.em) AS clean_em, AVG(c.f1) AS clean_f1 "
            "FROM results r JOIN clean_results c ON c.sweep_id = r.sweep_id "
            "AND c.model = r.model AND c.example_hash = r.example_hash "
            "WHERE r.sweep_id = ? AND r.status = 'ok' "
            "GROUP BY r.model, r.perturbation, r.params_json, r.repeat "
            "ORDER BY r.repeat", (sweep_id,)).fetchall()

    def result_counts(self, sweep_id: int) -> tuple[dict[tuple, int], dict[tuple, int]]:
        """({(model, perturbation, params_json): examples scored}, {...: rows not scored})."""
        scored = {(r[0], r[1], r[2]): r[3] for r in self.conn.execute(
            "SELECT model, perturbation, params_json, COUNT(DISTINCT example_hash) FROM results "
            "WHERE sweep_id = ? AND status = 'ok' GROUP BY model, perturbation, params_json", (sweep_id,))}
        skipped = {(r[0], r[1], r[2]): r[3] for r in self.conn.execute(
            "SELECT model, perturbation, params_json, COUNT(*) FROM results "
            "WHERE sweep_id = ? AND status != 'ok' GROUP BY model, perturbation, params_json", (sweep_id,))}
        return scored, skipped

    def cell_rows(self, sweep_id: int, model: str, perturbation: str, params_json: str | None, *,
                  scored_only: bool, limit: int | None) -> list[sqlite3.Row]:
        """A cell's result_rows with the example's context, the perturbed context and the example's
        position, worst F1 loss first (unscored rows last), then sweep order and repeat."""
        spec = "" if params_json is None else " AND rr.params_json = ?"
        status = " AND rr.status = 'ok'" if scored_only else ""
        sql = ("SELECT rr.*, ctx.text AS context, vctx.text AS perturbed_context, se.position "
               "FROM result_rows rr JOIN examples e ON e.hash = rr.example_hash "
               "JOIN contexts ctx ON ctx.hash = e.context_hash "
               "LEFT JOIN contexts vctx ON vctx.hash = rr.variant_context_hash "
               "JOIN sweep_examples se ON se.sweep_id = rr.sweep_id AND se.example_hash = rr.example_hash "
               f"WHERE rr.sweep_id = ? AND rr.model = ? AND rr.perturbation = ?{spec}{status} "
               "ORDER BY (rr.f1 IS NULL), (rr.clean_f1 - rr.f1) DESC, se.position, rr.repeat")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        args = (sweep_id, model, perturbation) + (() if params_json is None else (params_json,))
        return self.conn.execute(sql, args).fetchall()

    def question_pairs(self, sweep_id: int) -> list[sqlite3.Row]:
        """(perturbation, params_json, variant_key, original, noisy) of every distinct scored
        variant that changed the question, ordered by spec and key."""
        return self.conn.execute(
            "SELECT DISTINCT r.perturbation, r.params_json, r.variant_key, e.question AS original, "
            "v.question AS noisy FROM results r JOIN examples e ON e.hash = r.example_hash "
            "JOIN variants v ON v.key = r.variant_key "
            "WHERE r.sweep_id = ? AND r.status = 'ok' AND v.field IN ('question', 'both') "
            "ORDER BY r.perturbation, r.params_json, r.variant_key", (sweep_id,)).fetchall()

    def scored_answer_rows(self, sweep_id: int, perturbation: str, params_json: str) -> list[sqlite3.Row]:
        """(model, perturbation, params_json, lang, original_question, variant_question, answer,
        clean_answer, f1) of a spec's scored rows."""
        return self.conn.execute(
            "SELECT model, perturbation, params_json, lang, original_question, variant_question, "
            "answer, clean_answer, f1 FROM result_rows WHERE sweep_id = ? AND perturbation = ? "
            "AND params_json = ? AND status = 'ok'", (sweep_id, perturbation, params_json)).fetchall()

    def clean_with_contexts(self, sweep_id: int) -> list[sqlite3.Row]:
        """(model, f1, lang, question, context, answers_json) of every clean result."""
        return self.conn.execute(
            "SELECT c.model, c.f1, e.lang, e.question, ctx.text AS context, e.answers_json "
            "FROM clean_results c JOIN examples e ON e.hash = c.example_hash "
            "JOIN contexts ctx ON ctx.hash = e.context_hash WHERE c.sweep_id = ?", (sweep_id,)).fetchall()

    def variants_with_contexts(self, sweep_id: int, perturbation: str, params_json: str | None) -> list[sqlite3.Row]:
        """(model, f1, lang, question, context, answers_json) of a perturbation's scored variants
        (one spec of it when ``params_json`` is given)."""
        spec = "" if params_json is None else " AND r.params_json = ?"
        return self.conn.execute(
            "SELECT r.model, r.f1, e.lang, v.question, ctx.text AS context, v.answers_json "
            "FROM results r JOIN examples e ON e.hash = r.example_hash "
            "JOIN variants v ON v.key = r.variant_key JOIN contexts ctx ON ctx.hash = v.context_hash "
            f"WHERE r.sweep_id = ? AND r.perturbation = ? AND r.status = 'ok'{spec}",
            (sweep_id, perturbation) + (() if params_json is None else (params_json,))).fetchall()

    def examples_in_order(self, sweep_id: int) -> list[sqlite3.Row]:
        """(hash, question, lang, answers_json, context) of the sweep's examples, in its order."""
        return self.conn.execute(
            "SELECT e.hash, e.question, e.lang, e.answers_json, c.text AS context FROM sweep_examples se "
            "JOIN examples e ON e.hash = se.example_hash JOIN contexts c ON c.hash = e.context_hash "
            "WHERE se.sweep_id = ? ORDER BY se.position", (sweep_id,)).fetchall()

    def scored_with_noise(self, sweep_id: int) -> list[sqlite3.Row]:
        """(model, perturbation, params_json, example_hash, em, f1, cer, changed) of every scored result."""
        return self.conn.execute(
            "SELECT r.model, r.perturbation, r.params_json, r.example_hash, r.em, r.f1, v.cer, v.changed "
            "FROM results r JOIN variants v ON v.key = r.variant_key "
            "WHERE r.sweep_id = ? AND r.status = 'ok'", (sweep_id,)).fetchall()

    def clean_answers(self, sweep_id: int, model: str) -> list[sqlite3.Row]:
        """(example_hash, id, question, answers_json, context, f1, em, answer) of a model's clean
        results, lowest F1 first, then sweep order."""
        return self.conn.execute(
            "SELECT e.hash AS example_hash, e.id, e.question, e.answers_json, c.text AS context, cr.f1, cr.em, "
            "p.answer FROM clean_results cr JOIN examples e ON e.hash = cr.example_hash "
            "JOIN contexts c ON c.hash = e.context_hash JOIN predictions p ON p.key = cr.prediction_key "
            "JOIN sweep_examples se ON se.sweep_id = cr.sweep_id AND se.example_hash = cr.example_hash "
            "WHERE cr.sweep_id = ? AND cr.model = ? ORDER BY cr.f1, se.position", (sweep_id, model)).fetchall()

    def answer_scores(self, sweep_id: int, model: str, perturbation: str, params_json: str):
        """(perturbed, clean): the model's (answer score, f1, example_hash) per scored perturbed row
        (by example, then repeat) and per clean result (by example)."""
        perturbed = self.conn.execute(
            "SELECT p.score, r.f1, r.example_hash FROM results r LEFT JOIN predictions p ON p.key = r.prediction_key "
            "WHERE r.sweep_id = ? AND r.model = ? AND r.perturbation = ? AND r.params_json = ? AND r.status = 'ok' "
            "ORDER BY r.example_hash, r.repeat", (sweep_id, model, perturbation, params_json)).fetchall()
        clean = self.conn.execute(
            "SELECT p.score, c.f1, c.example_hash FROM clean_results c LEFT JOIN predictions p "
            "ON p.key = c.prediction_key WHERE c.sweep_id = ? AND c.model = ? ORDER BY c.example_hash",
            (sweep_id, model)).fetchall()
        return perturbed, clean

    def alignment_counts(self, sweep_id: int, model: str) -> list[sqlite3.Row]:
        """(perturbation, params_json, kind, n) of the model's scored answers, clean ones under
        perturbation 'clean'. ``kind`` reads the stored answer as a generative reader wrote it
        (core.qa.generative.reader): no answer; a free answer with no span (not in the passage);
        a span scored 1 (found exactly) or below (the approximate window's similarity)."""
        kind = ("CASE WHEN p.answer = '' THEN 'no answer' WHEN p.span_start IS NULL THEN 'not in the passage' "
                "WHEN p.score >= 1.0 THEN 'exact' ELSE 'approximate' END")
        return self.conn.execute(
            f"SELECT 'clean' AS perturbation, '{{}}' AS params_json, {kind} AS kind, COUNT(*) AS n "
            "FROM clean_results c JOIN predictions p ON p.key = c.prediction_key "
            "WHERE c.sweep_id = ? AND c.model = ? GROUP BY kind "
            f"UNION ALL SELECT r.perturbation, r.params_json, {kind} AS kind, COUNT(*) AS n "
            "FROM results r JOIN predictions p ON p.key = r.prediction_key "
            "WHERE r.sweep_id = ? AND r.model = ? AND r.status = 'ok' GROUP BY r.perturbation, r.params_json, kind",
            (sweep_id, model, sweep_id, model)).fetchall()

    def original_questions(self, sweep_id: int) -> list[sqlite3.Row]:
        """(hash, question) of the sweep's examples."""
        return self.conn.execute(
            "SELECT e.hash, e.question FROM sweep_examples se JOIN examples e ON e.hash = se.example_hash "
            "WHERE se.sweep_id = ?", (sweep_id,)).fetchall()

    def variant_questions(self, sweep_id: int, perturbation: str, params_json: str) -> list[sqlite3.Row]:
        """(example_hash, repeat, question) of a spec's distinct scored variants."""
        return self.conn.execute(
            "SELECT DISTINCT r.example_hash, r.repeat, v.question FROM results r JOIN variants v "
            "ON v.key = r.variant_key WHERE r.sweep_id = ? AND r.perturbation = ? AND r.params_json = ? "
            "AND r.status = 'ok'", (sweep_id, perturbation, params_json)).fetchall()

    def variant_metas(self, sweep_id: int, perturbation: str, params_json: str) -> list[sqlite3.Row]:
        """(meta_json,) of a spec's distinct scored variants."""
        return self.conn.execute(
            "SELECT DISTINCT v.meta_json FROM results r JOIN variants v ON v.key = r.variant_key "
            "WHERE r.sweep_id = ? AND r.perturbation = ? AND r.params_json = ? AND r.status = 'ok'",
            (sweep_id, perturbation, params_json)).fetchall()

    def unit_rows(self, sweep_id: int, perturbation: str, params_json: str, example_hash: str,
                  repeat: int) -> list[sqlite3.Row]:
        """One unit's result_rows, one per model: status, answers, spans, scores, the variant."""
        return self.conn.execute(
            "SELECT model, status, answer, span_start, span_end, em, f1, clean_answer, clean_start, clean_end, "
            "clean_em, clean_f1, variant_question, variant_context_hash, variant_gold_json FROM result_rows "
            "WHERE sweep_id = ? AND perturbation = ? AND params_json = ? AND example_hash = ? AND repeat = ?",
            (sweep_id, perturbation, params_json, example_hash, repeat)).fetchall()

    def clean_answers_by_model(self, sweep_id: int) -> list[sqlite3.Row]:
        """Every clean result with its answer and example (example_hash, model, f1, answer, id, lang,
        question, answers_json, context, position), models in the sweep's order."""
        return self.conn.execute(
            "SELECT c.example_hash, c.model, c.f1, p.answer, e.id, e.lang, e.question, e.answers_json, "
            "ctx.text AS context, sm.position FROM clean_results c "
            "JOIN predictions p ON p.key = c.prediction_key JOIN examples e ON e.hash = c.example_hash "
            "JOIN contexts ctx ON ctx.hash = e.context_hash "
            "JOIN sweep_models sm ON sm.sweep_id = c.sweep_id AND sm.model = c.model "
            "WHERE c.sweep_id = ? ORDER BY sm.position", (sweep_id,)).fetchall()

    def near_question_flips(self, sweep_id: int, right: float) -> list[sqlite3.Row]:
        """Scored question variants at most one character longer or shorter than the question
        whose clean answer scored at least ``right`` and whose perturbed one less."""
        return self.conn.execute(
            "SELECT rr.model, rr.perturbation, rr.example_id, rr.lang, rr.original_question, "
            "rr.variant_question, rr.answer, rr.clean_answer, rr.f1, rr.clean_f1, rr.gold_json, "
            "ctx.text AS context FROM result_rows rr JOIN examples e ON e.hash = rr.example_hash "
            "JOIN contexts ctx ON ctx.hash = e.context_hash "
            "WHERE rr.sweep_id = ? AND rr.status = 'ok' AND rr.field = 'question' "
            "AND rr.clean_f1 >= ? AND rr.f1 < ? AND length(rr.variant_question) "
            "BETWEEN length(rr.original_question) - 1 AND length(rr.original_question) + 1",
            (sweep_id, right, right)).fetchall()

    # ------------------------------------------------------------ aggregates (core.sweeps.analysis.aggregates)

    def replace_aggregates(self, sweep_id: int, rows: Sequence[tuple[str, str, str]]) -> None:
        """Store a sweep's aggregates, (name, version, json) each, replacing the ones it had."""
        with self.transaction():
            self.conn.execute(AGGREGATES_TABLE)
            self.conn.execute("DELETE FROM sweep_aggregates WHERE sweep_id = ?", (sweep_id,))
            self.conn.executemany("INSERT INTO sweep_aggregates (sweep_id, name, version, json) VALUES (?, ?, ?, ?)",
                                  [(sweep_id, *r) for r in rows])

    def aggregate(self, sweep_id: int, name: str) -> sqlite3.Row | None:
        """(version, json) of a stored aggregate; sqlite3.Error where the table does not exist yet."""
        return self.conn.execute("SELECT version, json FROM sweep_aggregates WHERE sweep_id = ? AND name = ?",
                                 (sweep_id, name)).fetchone()

    def context_text(self, context_hash: str) -> str:
        row = self.conn.execute("SELECT text FROM contexts WHERE hash = ?", (context_hash,)).fetchone()
        if row is None:
            raise KeyError(f"context {context_hash} is not in {self.path}")
        return row[0]


def _for_models(sql: str, sweep_id: int, models: Sequence[str] | None) -> tuple[str, tuple]:
    """``sql`` (filtered by sweep) with ``AND model IN (...)`` when ``models`` is given."""
    if models is None:
        return sql, (sweep_id,)
    return f"{sql} AND model IN ({', '.join('?' * len(models))})", (sweep_id, *models)
