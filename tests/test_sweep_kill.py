"""Interrupted sweeps (issue 23, item 10): a CLI sweep SIGKILLed at several points, then resumed.

``python -m core.sweeps`` runs in a child process whose model answers slowly (a sleep before each
batched predict call, so the parent can kill it between two committed chunks), with chunks of 3
units and the tiny model of tests/conftest.py. It is killed before its first chunk, after 1, 3
and 5 chunks (in the clean phase and in the perturbed one), resumed each time by the same
command, and finally finished; its rows must equal those of an uninterrupted run, none lost or
duplicated. After every kill the sweep lists as interrupted (its owner process is gone), not as
running, in core.sweeps.analysis.sweep_cells, ``--list`` and the Sweeps page, which resumes it.

(tests/test_sweep.py kills a run_sweep worker once mid-sweep; this file covers the CLI, several
kill points and how a killed sweep is shown.)
"""
from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.sweeps.analysis import sweep_cells
from core.sweeps.ownership import STALE_AFTER_S, effective_status, process_identity
from core.sweeps.store import SCHEMA, Store

REPO = Path(__file__).resolve().parents[1]
CHUNK = 3
ARGS = ["--dataset", "demo.en", "--perturbations", "TUQ,DRQ:n_words=1..2", "--models", "tiny-a",
        "--repeats", "2", "--seed", "3", "--chunk-size", str(CHUNK), "--quiet"]
TOTAL = 12 * (1 + 1 + 2 + 2)     # 12 demo questions: clean, TUQ once, DRQ n_words=1 and 2 twice each
SLOW_CLI = """
import sys, time
sys.path.insert(0, {repo!r})
from core.qa.engine import QAEngine

delay = float(sys.argv[1])
predict = QAEngine.predict

def slow_predict(self, *args, **kwargs):   # the parent kills the sweep during this sleep
    time.sleep(delay)
    return predict(self, *args, **kwargs)

QAEngine.predict = slow_predict
from core.sweeps.cli import main
sys.exit(main(sys.argv[2:]))
"""
ROWS = ("SELECT 'clean', model, '', '', 0, example_hash, prediction_key, em, f1 FROM clean_results "
        "UNION ALL SELECT 'perturbed', model, perturbation, params_json, repeat, example_hash, prediction_key, "
        "em, f1 FROM results ORDER BY 1, 2, 3, 4, 5, 6")


@pytest.fixture
def cli_env(tiny_registry, tmp_path, monkeypatch):
    env = dict(os.environ, QAX_MODELS_TOML=str(tiny_registry), HF_HUB_OFFLINE="1",
               QAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return env


def _query(db: Path, sql: str) -> list:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []   # not created yet


def _rows_done(db: Path) -> int:
    got = _query(db, "SELECT (SELECT COUNT(*) FROM clean_results) + (SELECT COUNT(*) FROM results)")
    return got[0][0] if got else 0


def _sweep_started(db: Path) -> bool:
    return bool(_query(db, "SELECT 1 FROM sweeps"))


def run_cli(env: dict, db: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core.sweeps", *ARGS, "--db", str(db), *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def kill_after(env: dict, script: Path, db: Path, chunks: int, delay: float = 1.0) -> tuple[int, int]:
    """Start the slowed CLI on ``db`` and SIGKILL it once ``chunks`` chunks in all are committed
    (0: once the sweep row exists, before any chunk). Returns (its pid, rows committed)."""
    proc = subprocess.Popen([sys.executable, str(script), str(delay), *ARGS, "--db", str(db)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not (_sweep_started(db) and _rows_done(db) >= chunks * CHUNK):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the sweep never got there"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)   # during the next chunk's (slow) predict call
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return proc.pid, _rows_done(db)


def test_cli_sweep_killed_at_several_points_resumes_to_the_same_rows(cli_env, tmp_path, capsys):
    from core.sweeps.cli import main

    script = tmp_path / "slow_cli.py"
    script.write_text(SLOW_CLI.format(repo=str(REPO)))
    db = tmp_path / "killed.sqlite"
    seen: list[tuple] = []
    for chunks in (0, 1, 3, 5):
        pid, rows = kill_after(cli_env, script, db, chunks)
        assert rows == chunks * CHUNK                     # killed mid-chunk: that chunk left no row
        [sweep] = sweep_cells.list_sweeps(db)
        assert (sweep["stored_status"], sweep["status"]) == ("running", "interrupted")
        assert sweep["owner"] == f"pid {pid} on {socket.gethostname()}"
        assert (sweep["done_units"], sweep["total_units"]) == (rows, TOTAL)
        assert main(["--list", "--db", str(db)]) == 0
        listed = capsys.readouterr().out
        assert f"[interrupted]  {rows}/{TOTAL} rows" in listed and "[running]" not in listed
        now = _query(db, ROWS)
        assert set(seen) <= set(now) and len(now) == rows    # every row committed before is still there
        seen = now

    finished = run_cli(cli_env, db)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert f": done, {TOTAL}/{TOTAL} rows ({5 * CHUNK} resumed)" in finished.stdout
    straight = run_cli(cli_env, tmp_path / "straight.sqlite", "--chunk-size", "50")
    assert straight.returncode == 0, straight.stderr[-2000:]

    resumed, clean = _query(db, ROWS), _query(tmp_path / "straight.sqlite", ROWS)
    assert len(resumed) == len(set(resumed)) == TOTAL       # none lost, none duplicated
    assert resumed == clean and set(seen) <= set(resumed)
    view = ("SELECT model, perturbation, params_json, repeat, example_id, variant_text, answer, span_start, "
            "span_end, em, f1, clean_answer FROM result_rows ORDER BY 1, 2, 3, 4, 5")
    assert _query(db, view) == _query(tmp_path / "straight.sqlite", view)
    assert _query(db, "SELECT COUNT(*) FROM sweeps") == [(1,)]
    [sweep] = sweep_cells.list_sweeps(db)
    assert (sweep["status"], sweep["stored_status"], sweep["done_units"]) == ("done", "done", TOTAL)
    assert [c.as_dict() for c in sweep_cells.cells(db, sweep["name"])] == \
        [c.as_dict() for c in sweep_cells.cells(tmp_path / "straight.sqlite", sweep["name"])]


def test_sweeps_page_lists_a_killed_cli_sweep_as_interrupted_and_resumes_it(cli_env, tmp_path, monkeypatch):
    script = tmp_path / "slow_cli.py"
    script.write_text(SLOW_CLI.format(repo=str(REPO)))
    db = tmp_path / "dbs" / "sweeps.sqlite"
    pid, rows = kill_after(cli_env, script, db, 2)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=180).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["status"]) == ["interrupted"] and list(table["rows done"]) == [rows]
    assert list(table["owner"]) == [f"pid {pid} on {socket.gethostname()}"]
    name = table["name"][0]
    assert at.selectbox(key="sw_resume_pick").value == name
    assert any("This sweep was interrupted: the process that ran it" in i.value.replace("\\", "") for i in at.info)
    assert not any("still running" in w.value for w in at.warning)
    at.button(key="sw_resume").click().run()
    assert not at.exception, at.exception
    job = at.session_state["sweep_job"]
    assert job.wait(240)
    at.run()
    assert job.error is None and job.result.status == "done"
    assert (job.result.resumed_units, job.result.done_units) == (rows, TOTAL)
    assert list(at.dataframe[0].value["status"]) == ["done"]
    got = _query(db, ROWS)
    assert len(got) == len(set(got)) == TOTAL


def test_a_second_start_of_a_running_sweep_is_refused_and_loses_nothing(cli_env, tmp_path, monkeypatch):
    """The same command started twice (two terminals, or the CLI and the Sweeps page) would run two
    drivers that each answer every unit they planned; the second is refused with its owner named."""
    script = tmp_path / "slow_cli.py"
    script.write_text(SLOW_CLI.format(repo=str(REPO)))
    db = tmp_path / "busy.sqlite"
    # 4 s a chunk: 24 chunks outlast the second start and the page's check on a loaded machine (at
    # 1 s a chunk the first had finished before them once); it is killed when they are done
    first = subprocess.Popen([sys.executable, str(script), "4.0", *ARGS, "--db", str(db)],
                             cwd=REPO, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not (_sweep_started(db) and _rows_done(db) >= CHUNK):
            assert first.poll() is None, first.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the sweep never got there"
            time.sleep(0.01)
        second = run_cli(cli_env, db)
        assert first.poll() is None                       # the first goes on
        assert second.returncode == 2, second.stderr[-2000:]
        [line] = [x for x in second.stderr.splitlines() if "already running" in x]
        assert f"(pid {first.pid} on {socket.gethostname()}, last chunk at " in line
        assert "stop it (Ctrl-C, or Cancel on the Sweeps page) and run this again to resume" in line
        [sweep] = sweep_cells.list_sweeps(db)
        assert sweep["status"] == "running" and sweep["owner"] == f"pid {first.pid} on {socket.gethostname()}"
        # the Sweeps page says so and offers no Resume while it runs
        monkeypatch.setenv("QAX_SWEEP_DB", str(db))
        monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
        at = AppTest.from_file("../pages/sweeps.py", default_timeout=180).run()
        assert not at.exception, at.exception
        assert list(at.dataframe[0].value["status"]) == ["running"]
        assert at.button(key="sw_resume").disabled
        assert any(f"This sweep is still running (pid {first.pid} on" in w.value.replace("\\", "")
                   and "It can be resumed here once that process stops" in w.value.replace("\\", "")
                   for w in at.warning)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    kept = _query(db, ROWS)
    finished = run_cli(cli_env, db)                       # its owner is gone: this one resumes it
    assert finished.returncode == 0, finished.stderr[-2000:]
    got = _query(db, ROWS)
    assert len(got) == len(set(got)) == TOTAL and set(kept) <= set(got)


# ------------------------------------------------------------------------- status, old databases


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()   # reaped: the pid names no process now
    return child.pid


def _iso(age_s: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=age_s)).isoformat(timespec="seconds")


def test_effective_status():
    pid, host, start = process_identity()
    fresh, stale = _iso(5), _iso(STALE_AFTER_S + 60)

    def row(**kw):
        base = {"status": "running", "updated_at": fresh, "owner_pid": pid, "owner_host": host,
                "owner_start": start}
        return _Row({**base, **kw})

    assert effective_status(row()) == "running"                               # this very process
    assert effective_status(row(owner_pid=_dead_pid())) == "interrupted"      # its process is gone
    assert effective_status(row(owner_start="boot:1")) == "interrupted"       # the pid was recycled
    assert effective_status(row(owner_host="elsewhere")) == "running"         # cannot check: heartbeat
    assert effective_status(row(owner_host="elsewhere", updated_at=stale)) == "interrupted"
    assert effective_status(row(owner_pid=None, updated_at=stale)) == "interrupted"
    for stored in ("done", "cancelled", "failed"):
        assert effective_status(row(status=stored, owner_pid=_dead_pid())) == stored


class _Row(dict):
    def keys(self):
        return list(super().keys())


def test_old_database_is_read_as_it_was_and_gains_the_owner_columns_on_write(tmp_path):
    """A store written before the owner columns existed: read-only listing works (a 'running'
    sweep with a stale heartbeat is interrupted, a fresh one running), and the next write adds the
    columns without touching a stored value."""
    old_schema = "\n".join(line for line in SCHEMA.splitlines() if "owner_" not in line)
    old_schema = old_schema.replace("updated_at  TEXT NOT NULL,          -- heartbeat: rewritten with every "
                                    "committed chunk", "updated_at  TEXT NOT NULL")
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(old_schema)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    for i, (status, updated) in enumerate([("running", _iso(STALE_AFTER_S * 2)), ("running", _iso(1)),
                                           ("done", _iso(STALE_AFTER_S * 2))]):
        conn.execute("INSERT INTO sweeps (name, config_hash, config_json, dataset, n_examples, total_units, "
                     "status, note, created_at, updated_at) VALUES (?, ?, '{}', 'toy', 1, 2, ?, NULL, ?, ?)",
                     (f"s{i}", f"hash{i}", status, updated, updated))
    conn.commit()
    before = conn.execute("SELECT * FROM sweeps ORDER BY id").fetchall()
    conn.close()
    assert "owner_pid" not in {r[1] for r in _query(db, "PRAGMA table_info(sweeps)")}

    listed = sweep_cells.list_sweeps(db)                     # read-only: nothing added yet
    assert [(s["name"], s["status"], s["owner"]) for s in listed] == [
        ("s0", "interrupted", ""), ("s1", "running", ""), ("s2", "done", "")]
    assert "owner_pid" not in {r[1] for r in _query(db, "PRAGMA table_info(sweeps)")}

    with Store(db) as store:                            # a write: the columns are added, NULL
        assert store.sweep_id("s1") == 2
    columns = [r[1] for r in _query(db, "PRAGMA table_info(sweeps)")]
    assert columns[-3:] == ["owner_pid", "owner_host", "owner_start"]
    assert [tuple(r[:11]) for r in _query(db, "SELECT * FROM sweeps ORDER BY id")] == before
    assert [s["status"] for s in sweep_cells.list_sweeps(db)] == ["interrupted", "running", "done"]
