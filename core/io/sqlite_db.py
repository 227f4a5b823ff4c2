"""What the project's SQLite stores share: a WAL connection, explicit transactions, closing.

Both the sweep store (core.sweeps.store) and the Beat-the-AI store (core.collect.beat_store) open one connection in
autocommit mode (``isolation_level=None``) and group writes with :meth:`SQLiteFile.transaction`
(``BEGIN IMMEDIATE`` ... ``COMMIT``, ``ROLLBACK`` on any exception), so a killed process leaves
either all of a unit of work or none of it. WAL lets pages read while a writer writes.

Readers that must never write (a page listing sweeps) open with :meth:`SQLiteFile._connect_readonly`
(``mode=ro``): SQLite then refuses every write, so reading a file cannot turn it into a database.
:func:`sqlite_kind` tells a SQLite file from anything else BEFORE a writing connection is given the
file (sqlite3.connect on a text file writes nothing, but a schema statement would).

Lock safety: nothing in the project opens a database file with a plain ``open()``. On POSIX,
closing *any* descriptor of a file drops *every* fcntl lock the process holds on that file
(SQLite's "How To Corrupt An SQLite Database File", section 2.2): a header read with
``open()``/``close()`` in the process of a running sweep released the sweep's locks, and the next
process to close the database deleted ``-wal`` and ``-shm`` under it, losing every later commit
(issue 46). So :func:`sqlite_kind` asks SQLite itself (a ``mode=ro`` connection and
``PRAGMA schema_version``): SQLite's unix VFS shares one descriptor set per file per process
and defers closing a descriptor while another connection of the process holds locks on it.
Copies of a live database go through SQLite's backup API (:func:`snapshot_bytes`).
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

#: SQLite's result codes for "unable to open database file" and "file is not a database".
_SQLITE_CANTOPEN, _SQLITE_NOTADB = 14, 26


def _readonly_uri(path: str | Path, immutable: bool = False) -> str:
    """A ``file:`` URI for ``path`` opened read-only (special characters percent-encoded)."""
    return Path(path).resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def connect_readonly(path: str | Path, timeout: float = 5.0) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``) to the database at ``path``, opened (its header read)
    before it is returned.

    A WAL database needs its ``-shm`` file even to be read; on a read-only mount (a backup, a
    shared volume) that file cannot be created, and ``mode=ro`` fails with "unable to open
    database file". There, and only where the folder is not writable (so no process can be
    writing the file), the database is opened ``immutable=1``: SQLite then reads the main file
    without locks or ``-shm``. A file that is not a database raises sqlite3.DatabaseError."""
    conn = sqlite3.connect(_readonly_uri(path), uri=True, timeout=timeout, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
        return conn
    except sqlite3.Error as e:
        conn.close()
        folder = Path(path).resolve().parent
        if getattr(e, "sqlite_errorcode", None) != _SQLITE_CANTOPEN or os.access(folder, os.W_OK):
            raise
    conn = sqlite3.connect(_readonly_uri(path, immutable=True), uri=True, timeout=timeout,
                           isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def sqlite_kind(path: str | Path, timeout: float = 5.0) -> str:
    """What is at ``path``: "missing", "directory", "empty" (0 bytes: SQLite's own new-database
    state), "sqlite" (a file SQLite reads as a database), or "other" (anything else, e.g. a text
    file, or a file with SQLite's header and garbage after it).

    Never opens the file with ``open()`` (see the module docstring: that would drop the locks of
    a connection in this process); SQLite reads the header through a read-only connection, which
    creates and changes nothing."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "other"
    if p.is_dir():
        return "directory"
    if not p.is_file():
        return "other"
    if st.st_size == 0:
        return "empty"
    try:
        connect_readonly(p, timeout).close()
    except sqlite3.Error as e:
        if getattr(e, "sqlite_errorcode", None) == _SQLITE_NOTADB:
            return "other"
        if getattr(e, "sqlite_errorcode", None) in (5, 6):   # BUSY, LOCKED: SQLite's own locks
            return "sqlite"
        raise
    return "sqlite"


def snapshot_bytes(path: str | Path, timeout: float = 30.0) -> bytes:
    """A consistent copy of the SQLite database at ``path`` (its WAL folded in), as the bytes of
    a database file, made by SQLite's backup API: the live file is never opened with ``open()``,
    so no lock of another connection in this process is dropped and no writer is disturbed."""
    src = connect_readonly(path, timeout)
    dst = sqlite3.connect(":memory:")
    try:
        src.backup(dst)
        return dst.serialize()
    finally:
        dst.close()
        src.close()


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
        that writes, so the file is left byte for byte as it was. On a read-only mount it is
        opened immutable (:func:`connect_readonly`)."""
        self.conn = connect_readonly(path, timeout)
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
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            # a COMMIT that failed (SQLITE_BUSY) leaves the transaction open: end it, so the
            # connection can start the next one (a retry) instead of "transaction within a
            # transaction"
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
