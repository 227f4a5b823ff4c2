"""What the project's SQLite stores share: a WAL connection, explicit transactions, closing.

Both the sweep store (core.sweeps.store) and the Beat-the-AI store (core.collect.beat_store) open one connection in
autocommit mode (``isolation_level=None``) and group writes with :meth:`SQLiteFile.transaction`
(``BEGIN IMMEDIATE`` ... ``COMMIT``, ``ROLLBACK`` on any exception), so a killed process leaves
either all of a unit of work or none of it. WAL lets pages read while a writer writes.

Readers that must never write (a page listing sweeps) open with :meth:`SQLiteFile._connect_readonly`
(``mode=ro``): SQLite then refuses every write, so reading a file cannot turn it into a database.
:func:`sqlite_kind` tells a SQLite file from anything else by its 16-byte header BEFORE SQLite is
given the file (sqlite3.connect on a text file writes nothing, but a schema statement would).
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_kind(path: str | Path) -> str:
    """What is at ``path``: "missing", "directory", "empty" (0 bytes: SQLite's own new-database
    state), "sqlite" (the SQLite header), or "other" (anything else, e.g. a text file).
    Reads at most 16 bytes; never creates or changes anything."""
    p = Path(path)
    if not p.exists():
        return "missing"
    if p.is_dir():
        return "directory"
    if not p.is_file():
        return "other"
    with p.open("rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if not head:
        return "empty"
    return "sqlite" if head == SQLITE_HEADER else "other"


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The tables and views a database holds (sqlite_master), internal ones left out."""
    return {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")}


class SQLiteFile:
    """Base class: subclasses call :meth:`_connect` and set ``synchronous`` as their durability needs."""

    #: "NORMAL" survives a killed process; "FULL" also survives a power cut (costs an fsync per commit).
    synchronous = "NORMAL"

    def _connect(self, path: str | Path, timeout: float) -> sqlite3.Connection:
        self.conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None,
                                    check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(f"PRAGMA synchronous={self.synchronous}")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        except BaseException:
            self.conn.close()
            raise
        return self.conn

    def _connect_readonly(self, path: str | Path, timeout: float) -> sqlite3.Connection:
        """A connection SQLite itself keeps from writing (``mode=ro`` URI): no schema, no pragma
        that writes, so the file is left byte for byte as it was."""
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        self.conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                                    check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        except BaseException:
            self.conn.close()
            raise
        return self.conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any exception): all or nothing."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
