"""Issue 46 (1): no plain open() of a live database file.

On POSIX, closing *any* descriptor of a file drops *every* fcntl lock the process holds on it
(SQLite's "How To Corrupt An SQLite Database File", section 2.2). A header check that opened and
closed the sweep database in the process of a running sweep dropped the sweep's SHARED lock; the
next process to close the database then believed itself the last one, checkpointed, and deleted
``-wal`` and ``-shm`` under the sweep: every later commit went into an unlinked WAL and was lost
when the sweep was killed.

The test runs that sequence deterministically: a writer process commits rows and calls the
header check (:func:`core.io.sqlite_db.sqlite_kind`) every few commits, a reader (this process)
opens and closes the database in between, then the writer is SIGKILLed. Every acknowledged
commit must be in the file. On the old ``sqlite_kind`` (open/read/close) all rows after the first
header check were lost.
"""
from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from core.io.sqlite_db import sqlite_kind

ROOT = Path(__file__).resolve().parents[1]

WRITER = r"""
import sqlite3, sys
from core.io.sqlite_db import sqlite_kind
path, rounds, per_round = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=NORMAL")
conn.execute("CREATE TABLE IF NOT EXISTS t (i INTEGER PRIMARY KEY)")
n = 0
for r in range(rounds):
    for _ in range(per_round):
        n += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?)", (n,))
        conn.execute("COMMIT")
    assert sqlite_kind(path) == "sqlite"     # the header check, in the writer's own process
    print(n, flush=True)                     # acknowledged: committed before this line
    sys.stdin.readline()                     # wait while the reader opens and closes the file
sys.stdin.readline()                         # then wait to be killed
"""


def _read_and_close(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.skipif(os.name != "posix", reason="fcntl lock semantics are POSIX's")
def test_header_check_in_the_writers_process_loses_no_acknowledged_commit(tmp_path):
    db = tmp_path / "sweeps.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "6", "10"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    acknowledged = 0
    try:
        for _ in range(6):
            line = proc.stdout.readline()
            assert line, "the writer died early"
            acknowledged = int(line)
            _read_and_close(db)          # another process closing the database
            proc.stdin.write("\n")
            proc.stdin.flush()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert acknowledged == 60
    assert _read_and_close(db) == acknowledged


def test_sqlite_kind_reads_through_sqlite(tmp_path):
    """The kinds are unchanged: missing, directory, empty, sqlite, other; nothing is created."""
    assert sqlite_kind(tmp_path / "nope.sqlite") == "missing"
    assert sqlite_kind(tmp_path) == "directory"
    (tmp_path / "empty.sqlite").write_bytes(b"")
    assert sqlite_kind(tmp_path / "empty.sqlite") == "empty"
    (tmp_path / "notes.sqlite").write_text("hello, not a database\n")
    assert sqlite_kind(tmp_path / "notes.sqlite") == "other"
    (tmp_path / "fake.sqlite").write_bytes(b"SQLite format 3\x00" + b"x" * 200)
    assert sqlite_kind(tmp_path / "fake.sqlite") == "other"   # a header alone is not a database
    real = tmp_path / "real.sqlite"
    with sqlite3.connect(real) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert sqlite_kind(real) == "sqlite"
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # no -wal, -shm or journal made
    odd = tmp_path / "a dir?#x"
    odd.mkdir()
    with sqlite3.connect(odd / "db.sqlite") as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert sqlite_kind(odd / "db.sqlite") == "sqlite"             # URI-special characters in the path


def test_no_plain_open_of_database_files_in_the_code():
    """The header sniffing is gone from the code: nothing compares a file's first bytes to
    SQLite's magic string to decide it is a database any more. The data set reader's table of
    binary kinds (core/datasets/squad.py) only names what a refused upload is, in its message."""
    hits = []
    for folder in ("core", "components", "pages", "benchmarks"):
        for f in (ROOT / folder).rglob("*.py"):
            if f.relative_to(ROOT).as_posix() == "core/datasets/squad.py":
                continue
            if "SQLite format 3" in f.read_text(encoding="utf-8"):
                hits.append(str(f.relative_to(ROOT)))
    assert hits == []


def test_database_copies_go_through_sqlite(tmp_path):
    """A trial's zip holds its databases as SQLite's backup makes them (complete, WAL folded in,
    while a writer still has the file open), never by opening the live files."""
    from core.io.sqlite_db import snapshot_bytes

    db = tmp_path / "sweep.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (i)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(50)])
    data = snapshot_bytes(db)           # while the writer's connection is open, WAL not folded
    conn.close()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x/sweep.sqlite", data)
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(zipfile.ZipFile(buf).read("x/sweep.sqlite"))
    with sqlite3.connect(copy) as c2:
        assert c2.execute("SELECT COUNT(*), SUM(i) FROM t").fetchone() == (50, sum(range(50)))
