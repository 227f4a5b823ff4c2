"""A local sweep answered by worker processes (core.sweeps.running.processes, issue 47 item 4): the same
rows as one process, a CLI sweep killed and resumed, a cancelled one resumed, the default N."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from stored_rows import rows_done

from core.perturb.spec import parse_specs
from core.sweeps.config import SweepConfig
from core.sweeps.running import processes

REPO = Path(__file__).resolve().parents[1]
CHUNK = 5
ARGS = ["--dataset", "demo.en", "--perturbations", "TUQ,DRQ:n_words=1..2", "--models", "tiny-a,tiny-b",
        "--repeats", "2", "--seed", "3", "--chunk-size", str(CHUNK), "--quiet"]
TOTAL = 2 * 12 * (1 + 1 + 2 + 2)   # 2 models x 12 demo questions: clean, TUQ once, DRQ n=1 and n=2 twice
# Every stored row but ids and times: results, clean results, predictions (the score to 1e-6: each
# process pads its own batches), variants.
TABLES = {
    "clean_results": "SELECT model, example_hash, prediction_key, em, f1 FROM clean_results ORDER BY 1, 2",
    "results": "SELECT model, perturbation, params_json, repeat, example_hash, variant_key, status, prediction_key, "
               "em, f1 FROM results ORDER BY 1, 2, 3, 4, 5",
    "predictions": "SELECT key, model, fingerprint, question, context_hash, answer, span_start, span_end, score "
                   "FROM predictions ORDER BY key",
    "variants": "SELECT * FROM variants ORDER BY key",
    "contexts": "SELECT * FROM contexts ORDER BY hash",
}
# A worker sleeps before each answer when QAX_TEST_PREDICT_DELAY is set, so the test can kill the
# driver mid-chunk. sitecustomize runs in every Python started with this PYTHONPATH: the workers too.
SITECUSTOMIZE = """
import os
if os.environ.get("QAX_TEST_PREDICT_DELAY"):
    import time
    from core.qa.engine import QAEngine
    _predict = QAEngine.predict
    def _slow(self, *a, **k):
        time.sleep(float(os.environ["QAX_TEST_PREDICT_DELAY"]))
        return _predict(self, *a, **k)
    QAEngine.predict = _slow
"""


@pytest.fixture
def env(tiny_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return dict(os.environ, PYTHONPATH=f"{hooks}{os.pathsep}{REPO}")


def rows(db: Path) -> dict[str, list]:
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(sql).fetchall() for t, sql in TABLES.items()}
    finally:
        conn.close()


def assert_same_rows(a: Path, b: Path) -> None:
    ra, rb = rows(a), rows(b)
    for table in TABLES:
        assert len(ra[table]) == len(rb[table]), table
        for x, y in zip(ra[table], rb[table]):
            if table == "predictions":
                assert x[:-1] == y[:-1] and x[-1] == pytest.approx(y[-1], abs=1e-6)
            else:
                assert x == y, table


def engines():
    from core.qa.registry import load_engine

    return {m: load_engine(m) for m in ("tiny-a", "tiny-b")}


def config(name=None) -> SweepConfig:
    return SweepConfig("demo.en", parse_specs("TUQ,DRQ:n_words=1..2"), ["tiny-a", "tiny-b"], repeats=2, seed=3,
                       name=name)


def test_two_processes_write_the_same_rows_as_one(env, tmp_path, monkeypatch):
    from core.sweeps.running.lifecycle import launch

    monkeypatch.setattr(processes, "MIN_PIECE", 2)   # the demo's 12 questions are cut in two pieces
    answered: list[list[int]] = []
    close = processes.WorkerPool.close
    monkeypatch.setattr(processes.WorkerPool, "close", lambda self: (answered.append(list(self.answered)), close(self)))
    one = launch(config(), tmp_path / "one.sqlite", engines=engines(), chunk_size=CHUNK, processes=1)
    two = launch(config(), tmp_path / "two.sqlite", engines=engines(), chunk_size=CHUNK, processes=2)
    assert (one.status, two.status, one.done_units, two.done_units) == ("done", "done", TOTAL, TOTAL)
    assert one.predictions_computed == two.predictions_computed > 0
    assert_same_rows(tmp_path / "one.sqlite", tmp_path / "two.sqlite")
    # both processes answered, every prediction the sweep computed between them
    [counts] = answered
    assert all(c > 0 for c in counts) and sum(counts) == two.predictions_computed


def test_cancelled_pooled_sweep_resumes_to_the_same_rows(env, tmp_path):
    from core.sweeps.running.lifecycle import launch

    cancel = threading.Event()
    db = tmp_path / "cancelled.sqlite"
    run = launch(config(), db, engines=engines(), chunk_size=CHUNK, processes=2, cancel=cancel,
                 progress=lambda done, total: cancel.set() if done >= 2 * CHUNK else None)
    assert run.status == "cancelled" and 0 < run.done_units < TOTAL
    resumed = launch(config(), db, engines=engines(), chunk_size=CHUNK, processes=2)
    assert (resumed.status, resumed.done_units, resumed.resumed_units) == ("done", TOTAL, run.done_units)
    straight = launch(config(), tmp_path / "straight.sqlite", engines=engines(), chunk_size=50, processes=1)
    assert straight.status == "done"
    assert_same_rows(db, tmp_path / "straight.sqlite")


def test_cli_sweep_with_processes_killed_resumes_and_leaves_no_worker(env, tmp_path):
    db = tmp_path / "killed.sqlite"
    cmd = [sys.executable, "-m", "core.sweeps", *ARGS, "--db", str(db), "--processes", "2"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=dict(env, QAX_TEST_PREDICT_DELAY="0.5"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while rows_done(db) < 2 * CHUNK:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the sweep never got there"
            time.sleep(0.05)
        children = psutil.Process(proc.pid).children()   # the workers and multiprocessing's resource tracker
        assert sum("spawn_main" in " ".join(p.cmdline()) for p in children) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    killed_at = rows_done(db)
    assert 2 * CHUNK <= killed_at < TOTAL
    _, alive = psutil.wait_procs(children, timeout=30)   # the workers see their driver gone and exit
    assert alive == [], [(p.cmdline(), p.status()) for p in alive]
    finished = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert f": done, {TOTAL}/{TOTAL} rows ({killed_at} resumed)" in finished.stdout
    straight = subprocess.run([sys.executable, "-m", "core.sweeps", *ARGS, "--db", str(tmp_path / "s.sqlite"),
                               "--processes", "1"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert straight.returncode == 0, straight.stderr[-2000:]
    assert_same_rows(db, tmp_path / "s.sqlite")


def test_processes_flag_is_checked_and_the_default_is_the_stored_measurement(env, tmp_path):
    from core.sweeps.running.job import SweepJob

    for argv, message in ((["--processes", "0"], "argument --processes: must be a whole number of at least 1, got '0'"),
                          (["--processes", "2", "--backend", "ray"], "--processes goes with --backend local")):
        done = subprocess.run([sys.executable, "-m", "core.sweeps", *ARGS, "--db", str(tmp_path / "x.sqlite"), *argv],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "x.sqlite").exists()
    assert processes.default_processes() == 1                     # nothing measured here yet
    path = tmp_path / "cache" / "sweep_processes.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({processes.machine_key(): {"processes": 2},
                                "another CPU x64": {"processes": 8}}))
    assert processes.default_processes() == 2
    # the Sweeps page's jobs take the measured default; one asked for, or a Ray sweep, keeps its own
    assert SweepJob(config(), {}, tmp_path / "j.sqlite")._kwargs["processes"] == 2
    assert SweepJob(config(), {}, tmp_path / "j.sqlite", processes=1)._kwargs["processes"] == 1
    path.write_text("not json")
    assert processes.default_processes() == 1


def test_the_calibration_command_measures_both_and_stores_the_choice(env, tmp_path):
    """The documented command runs its module as ``__main__``; the spawned workers must still find
    their target (they failed to unpickle ``__main__._worker`` before)."""
    done = subprocess.run([sys.executable, "-m", "core.sweeps.running.processes", "--calibrate", "--model", "tiny-a",
                           "--dataset", "demo.en", "--n", "12"],
                          cwd=REPO, env=dict(env, QAX_THREADS="2"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "cache" / "sweep_processes.json").read_text())[processes.machine_key()]
    assert record["model"] == "tiny-a" and record["questions"] == 12
    assert set(record["questions_per_second"]) >= {"1", "2"}
    assert record["processes"] in (1, 2)
    assert f"{record['processes']} worker process(es) (measured)" in done.stdout
