"""What the project's SQLite stores share: a WAL connection, explicit transactions, closing.

Both the sweep store (core.store) and the Beat-the-AI store (core.beat) open one connection in
autocommit mode (``isolation_level=None``) and group writes with :meth:`SQLiteFile.transaction`
(``BEGIN IMMEDIATE`` ... ``COMMIT``, ``ROLLBACK`` on any exception), so a killed process leaves
either all of a unit of work or none of it. WAL lets pages read while a writer writes.
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path


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
