"""The sweep store's tables: SCHEMA (its SQL), its version, and what marks a file as a sweep store.

:mod:`core.sweeps.store` opens files with it and holds every query; this module is only the DDL.
"""
from __future__ import annotations

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

# Columns added after the first release; an older file gets them on its next write.
ADDED_COLUMNS = {"sweeps": (("owner_pid", "INTEGER"), ("owner_host", "TEXT"), ("owner_start", "TEXT"))}
# The tables that make a file a sweep store (another application's database lacks them).
SIGNATURE = {"meta", "sweeps", "results", "clean_results"}

TABLES = {"meta", "contexts", "examples", "variants", "predictions", "sweeps", "sweep_examples",
           "sweep_models", "sweep_specs", "clean_results", "results"}


def statements(script: str) -> list[str]:
    """Split the schema into statements (it has no ';' inside strings or triggers)."""
    return [s.strip() for s in script.split(";") if s.strip()]


# Created on the first write of aggregates (core.sweeps.analysis.aggregates), so older stores need no upgrade.
AGGREGATES_TABLE = """CREATE TABLE IF NOT EXISTS sweep_aggregates (
    sweep_id INTEGER NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL, json TEXT NOT NULL,
    PRIMARY KEY (sweep_id, name))"""
