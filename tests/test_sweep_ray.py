"""Sweeps on Ray (core.sweeps.running.ray): the same rows as the local backend, a killed model actor
and a SIGKILLed driver both end in the complete, identical sweep, and the Sweeps page runs one.

One local Ray (num_cpus=2) serves the whole file; the CLI runs join it with --address. The
models are the tiny BERT of tests/conftest.py under two names (real engine code, deterministic
answers), the data set the bundled demo.en plus a challenge file written here (a file: spec,
which the driver reads itself, next to registry perturbations, which run as Ray tasks).
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from core.datasets import demo_dataset
from core.sweeps import cli_text
from core.sweeps.analysis import sweep_cells
from core.sweeps.analysis.stored import StoredSweep
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep

REPO = Path(__file__).resolve().parents[1]
SPECS = "TUQ,DRQ:n_words=1..2,file:noisy"
MODELS = ["tiny-a", "tiny-b"]
TOTAL = 12 * 2 * (1 + 1 + 2 + 2 + 1)   # 12 questions, 2 models: clean, TUQ, DRQ x2 params x2 repeats, file
ROWS = ("SELECT 'clean', model, '', '', 0, example_hash, prediction_key, em, f1 FROM clean_results "
        "UNION ALL SELECT 'perturbed', model, perturbation, params_json, repeat, example_hash, prediction_key, "
        "em, f1 FROM results ORDER BY 1, 2, 3, 4, 5, 6")
VARIANTS = ("SELECT key, status, note, field, question, context_hash, answers_json, changed, cer, wer, meta_json "
            "FROM variants ORDER BY key")
PREDICTIONS = ("SELECT key, model, fingerprint, question, context_hash, answer, span_start, span_end "
               "FROM predictions ORDER BY key")


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


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A data directory holding noisy.json: demo.en's questions upper-cased, paired by id."""
    d = tmp_path_factory.mktemp("ray_data")
    ds = demo_dataset("en")
    paragraphs = [{"context": ex.context, "qas": [{"id": ex.id, "question": ex.question.upper(), "answers": [
        {"text": a.text, "answer_start": a.answer_start} for a in ex.answers]}]} for ex in ds.examples]
    (d / "noisy.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return d


@pytest.fixture(scope="module")
def env(tiny_registry, tmp_path_factory, data_dir):
    """The environment of this file's processes and Ray workers (they inherit the driver's QAX_*)."""
    saved = {k: os.environ.get(k) for k in ("QAX_MODELS_TOML", "HF_HUB_OFFLINE", "QAX_CACHE_DIR", "QAX_DATA_DIR")}
    values = {"QAX_MODELS_TOML": str(tiny_registry), "HF_HUB_OFFLINE": "1",
              "QAX_CACHE_DIR": str(tmp_path_factory.mktemp("ray_cache")), "QAX_DATA_DIR": str(data_dir)}
    os.environ.update(values)
    # Ray 2.60's local clusters authenticate with a token (~/.ray/auth_token, written by
    # ray.init): a second driver joining one must be told to send it
    yield dict(os.environ, PYTHONPATH=str(REPO), RAY_AUTH_MODE="token")
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def cluster(env):
    """One local Ray with 2 CPUs for the file; yields its address for the CLI drivers."""
    from core.sweeps.running import ray_cluster

    ray = ray_cluster.connect(num_cpus=2)
    yield ray.get_runtime_context().gcs_address
    ray_cluster.disconnect()


def _config(name: str, models=MODELS) -> SweepConfig:
    return SweepConfig("demo.en", [SPECS], models, repeats=2, seed=3, name=name)


@pytest.fixture(scope="module")
def local_db(env, data_dir, tmp_path_factory) -> Path:
    """The reference: the same sweep on the local backend."""
    from core.qa.registry import load_engine

    db = tmp_path_factory.mktemp("local") / "local.sqlite"
    run = run_sweep(_config("s"), {m: load_engine(m) for m in MODELS}, db, data_dir=data_dir, chunk_size=5)
    assert (run.status, run.done_units) == ("done", TOTAL)
    return db


def _same_sweep(db: Path, reference: Path, name: str = "s") -> None:
    rows = _query(db, ROWS)
    assert len(rows) == len(set(rows)) == TOTAL            # none lost, none duplicated
    assert rows == _query(reference, ROWS)
    assert _query(db, VARIANTS) == _query(reference, VARIANTS)
    assert _query(db, PREDICTIONS) == _query(reference, PREDICTIONS)
    # what --show prints
    assert cli_text.format_report(StoredSweep(db, name)) == cli_text.format_report(StoredSweep(reference, name))


def test_ray_sweep_gives_the_rows_of_the_local_backend(cluster, local_db, data_dir, tmp_path):
    from core.sweeps.running.ray import run_sweep_ray

    seen: list = []
    db = tmp_path / "ray.sqlite"
    run = run_sweep_ray(_config("s"), db, workers=2, data_dir=data_dir, chunk_size=5,
                        on_workers=lambda states: seen.append(states))
    assert (run.status, run.done_units, run.total_units, run.resumed_units) == ("done", TOTAL, TOTAL, 0)
    _same_sweep(db, local_db)
    final = seen[-1]
    assert [w.state for w in final] == ["stopped", "stopped"]
    assert all(w.node and w.calls > 0 and w.restarts == 0 for w in final)   # both workers answered
    assert sum(w.predictions for w in final) == run.predictions_computed
    assert {m for w in final for m in w.actors} == set(MODELS)
    # run again: everything is stored, nothing is computed
    again = run_sweep_ray(_config("s"), db, workers=1, data_dir=data_dir)
    assert (again.resumed_units, again.predictions_computed, again.variants_computed) == (TOTAL, 0, 0)


def test_a_model_actor_killed_mid_sweep_is_replaced_and_the_sweep_completes(cluster, local_db, data_dir, tmp_path):
    import ray

    from core.sweeps.running.ray import run_sweep_ray

    states: list = []
    killed: list[str] = []

    def kill_once(done: int, total: int) -> None:   # after the first committed chunk
        if done and not killed and states:
            name = states[-1][1].actors["tiny-b"]
            ray.kill(ray.get_actor(name, namespace="qax"))
            killed.append(name)

    db = tmp_path / "killed.sqlite"
    run = run_sweep_ray(_config("s"), db, workers=2, data_dir=data_dir, chunk_size=3, progress=kill_once,
                        on_workers=lambda s: states.append(s))
    assert killed and run.status == "done" and run.done_units == TOTAL
    final = states[-1]
    assert [w.restarts for w in final] == [0, 1]                 # worker 1's tiny-b actor, replaced once
    assert final[1].actors["tiny-b"] != killed[0]
    _same_sweep(db, local_db)


SLOW_RAY_CLI = """
import sys, time
sys.path.insert(0, {repo!r})
import core.sweeps.running.ray as sweep_ray

delay = float(sys.argv[1])

class SlowActor(sweep_ray.ModelActor):   # defined here, so Ray ships it to the workers by value
    def predict(self, questions, contexts):
        time.sleep(delay)   # the parent kills the driver while the actors answer
        return super().predict(questions, contexts)

sweep_ray.ModelActor = SlowActor
from core.sweeps.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_sigkilled_ray_driver_resumes_to_the_same_sweep(cluster, env, local_db, tmp_path, capsys):
    from core.sweeps.cli import main

    script = tmp_path / "slow_ray_cli.py"
    script.write_text(SLOW_RAY_CLI.format(repo=str(REPO)))
    db = tmp_path / "driver.sqlite"
    args = ["--dataset", "demo.en", "--perturbations", SPECS, "--models", ",".join(MODELS), "--repeats", "2",
            "--seed", "3", "--name", "s", "--chunk-size", "3", "--quiet", "--db", str(db),
            "--backend", "ray", "--address", cluster, "--workers", "2"]
    proc = subprocess.Popen([sys.executable, str(script), "0.3", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # a fresh driver starts four model actors, each a process importing torch: 60 s on a quiet
        # 2-core machine, past 240 s with two other test workers beside it (CI)
        deadline = time.monotonic() + 600
        while _rows_done(db) < 12:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the Ray sweep never committed a chunk"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    kept = _query(db, ROWS)
    assert 12 <= len(kept) < TOTAL                         # killed mid-sweep
    [sweep] = sweep_cells.list_sweeps(db)
    assert (sweep["stored_status"], sweep["status"]) == ("running", "interrupted")

    # the same command, not slowed: resumes (a crash prints every thread's Python stack)
    resumed = subprocess.run([sys.executable, "-m", "core.sweeps", *args], cwd=REPO, capture_output=True,
                             env={**env, "PYTHONFAULTHANDLER": "1"}, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = resumed.stdout
    assert f": done, {TOTAL}/{TOTAL} rows ({len(kept)} resumed)" in out
    assert set(kept) <= set(_query(db, ROWS))              # nothing committed was lost
    _same_sweep(db, local_db)
    assert main(["--show", "s", "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert main(["--show", "s", "--db", str(local_db)]) == 0
    assert capsys.readouterr().out == shown


def test_ray_flags_need_the_ray_backend(capsys):
    from core.sweeps.cli import main

    base = ["--dataset", "demo.en", "--perturbations", "TUQ", "--models", "tiny-a"]
    assert main([*base, "--workers", "2"]) == 2
    assert "--workers go with --backend ray" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:   # argparse's own refusal, while parsing
        main([*base, "--backend", "ray", "--workers", "0"])
    assert refused.value.code == 2
    assert "argument --workers: must be a whole number of at least 1, got '0'" in capsys.readouterr().err
    assert main([*base, "--backend", "onnx", "--engine-backend", "torch"]) == 2
    assert "contradicts --engine-backend torch" in capsys.readouterr().err


def test_sweeps_page_runs_a_ray_sweep_and_shows_its_workers(cluster, env, local_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "page" / "sweeps.sqlite"
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    monkeypatch.delenv("QAX_RAY_ADDRESS", raising=False)
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=400).run()
    assert not at.exception, at.exception
    assert at.radio(key="sw_where").options == ["This process", "Ray on this machine"]   # no cluster set
    at.multiselect(key="sw_fam_case").set_value(["TUQ"]).run()
    at.number_input(key="sw_sample").set_value(12).run()
    at.number_input(key="sw_repeats").set_value(1).run()
    at.multiselect(key="sw_models").set_value(["tiny-a"]).run()
    at.radio(key="sw_where").set_value("Ray on this machine").run()
    at.number_input(key="sw_workers").set_value(2).run()
    assert not at.exception, at.exception
    at.button(key="sw_start").click().run()
    assert not at.exception, at.exception
    job = at.session_state["sweep_job"]
    assert job.ray is not None and job.ray.workers == 2
    assert job.wait(240)
    at.run()
    assert job.error is None, job.error
    assert (job.result.status, job.result.done_units) == ("done", 12 * 2)
    tables = [d.value for d in at.dataframe]
    [workers] = [t for t in tables if "actor restarts" in t.columns]
    assert list(workers["worker"]) == [0, 1] and list(workers["state"]) == ["stopped", "stopped"]
    assert workers["predictions"].sum() == job.result.predictions_computed
    [stored] = [t for t in tables if "rows done" in t.columns]
    assert list(stored["status"]) == ["done"]
    clean = _query(db, "SELECT model, example_hash, prediction_key, em, f1 FROM clean_results ORDER BY 1, 2")
    assert clean == _query(local_db, "SELECT model, example_hash, prediction_key, em, f1 FROM clean_results "
                                     "WHERE model = 'tiny-a' ORDER BY 1, 2")


def test_a_sweep_smaller_than_a_chunk_is_cut_so_every_worker_has_work(cluster, local_db, data_dir, tmp_path):
    """One chunk of 256 would hold the whole sweep: its units are cut into at least
    CHUNKS_PER_WORKER x workers chunks (so answers overlap perturbations), with the same rows."""
    from core.sweeps.running.ray import CHUNKS_PER_WORKER, run_sweep_ray

    commits: list[int] = []
    db = tmp_path / "cut.sqlite"
    run = run_sweep_ray(_config("s"), db, workers=2, data_dir=data_dir, chunk_size=256,
                        progress=lambda done, total: commits.append(done))
    assert (run.status, run.done_units) == ("done", TOTAL)
    _same_sweep(db, local_db)
    # progress is told after each committed chunk: the clean chunk and the perturbed ones
    rows_after_each_commit = sorted({done for done in commits if done})
    assert len(rows_after_each_commit) >= 1 + CHUNKS_PER_WORKER * 2
    assert rows_after_each_commit[-1] == TOTAL


@pytest.fixture(scope="module")
def onnx_sweep(cluster, tmp_path_factory):
    """A sweep made on Ray with the onnx backend of the card-less tiny model (whose default is
    torch): (config, db, its stored fingerprints)."""
    pytest.importorskip("onnxruntime")
    from core.qa.engine import EngineSettings
    from core.sweeps.running.backends import stored_fingerprints
    from core.sweeps.running.ray import run_sweep_ray

    config = SweepConfig("demo.en", ["TUQ"], ["tiny-a"], sample=4, name="kept")
    db = tmp_path_factory.mktemp("backend") / "backend.sqlite"
    made = run_sweep_ray(config, db, settings=EngineSettings(backend="onnx"), workers=1)
    assert made.status == "done"
    return config, db, made, stored_fingerprints(db, "kept")


def test_a_stored_sweep_resumes_on_ray_with_the_backend_it_was_made_with(onnx_sweep):
    from core.sweeps.config import SweepError
    from core.sweeps.running.job import RayOptions, SweepJob
    from core.sweeps.running.ray import run_sweep_ray

    config, db, made, stored = onnx_sweep
    with pytest.raises(SweepError, match="different configuration"):
        run_sweep_ray(config, db, workers=1)   # the default backend (torch here), not the stored one
    job = SweepJob(config, {}, db, ray=RayOptions(workers=2, stored=stored)).start()   # the page's Resume
    assert job.wait(240) and job.error is None, job.error
    assert job.switched == {"tiny-a": "onnx"}
    assert (job.result.resumed_units, job.result.predictions_computed) == (made.total_units, 0)


def test_the_cli_resumes_a_named_sweep_on_ray_with_its_backend(onnx_sweep, cluster, env):
    _, db, made, _ = onnx_sweep
    args = ["--dataset", "demo.en", "--perturbations", "TUQ", "--models", "tiny-a", "--sample", "4", "--name",
            "kept", "--db", str(db), "--quiet", "--backend", "ray", "--address", cluster, "--workers", "1"]
    # a crash prints every thread's Python stack (CI saw a SIGSEGV here after the report)
    resumed = subprocess.run([sys.executable, "-m", "core.sweeps", *args], cwd=REPO, capture_output=True,
                             env={**env, "PYTHONFAULTHANDLER": "1"}, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "tiny-a: resuming kept with the onnx backend it was made with" in resumed.stderr
    assert f": done, {made.total_units}/{made.total_units} rows ({made.total_units} resumed), 0 predictions" \
        in resumed.stdout


def test_the_apps_ray_driver_outlives_its_cluster_the_clis_does_not(monkeypatch):
    """Ray's driver exits its process 60 s after losing the cluster's GCS; the app's server must
    not (core.sweeps.running.ray_cluster.RECONNECT_ENV). connect(outlive_cluster=True) sets the reconnect timeout
    before ray.init starts the core worker, keeps a value the user set, and the CLI's connect
    leaves Ray's default. The app's SweepJob asks for it."""
    import inspect

    import ray as ray_module

    from core.sweeps.running import job, ray_cluster

    seen = []
    monkeypatch.setattr(ray_module, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_module, "init", lambda **kw: seen.append(os.environ.get(ray_cluster.RECONNECT_ENV)))
    monkeypatch.setattr(ray_cluster, "_connected_to", None)
    monkeypatch.setenv(ray_cluster.RECONNECT_ENV, "0")  # recorded, so the test's own setting is undone
    monkeypatch.delenv(ray_cluster.RECONNECT_ENV)
    ray_cluster.connect(num_cpus=1)
    assert seen == [None]
    ray_cluster.connect(num_cpus=1, outlive_cluster=True)
    assert seen[-1] == str(ray_cluster.OUTLIVE_CLUSTER_S)
    monkeypatch.setenv(ray_cluster.RECONNECT_ENV, "30")
    ray_cluster.connect(num_cpus=1, outlive_cluster=True)
    assert seen[-1] == "30"
    assert "outlive_cluster=True" in inspect.getsource(job.SweepJob._run)


def test_actors_of_one_served_llm_split_its_requests_in_flight(tmp_path, monkeypatch, tiny_registry):
    """A generative reader behind a server is one server for every worker: each actor keeps
    max_concurrent // workers requests in flight (at least one); a local model is untouched."""
    from core.sweeps.running.ray import ModelActor

    reg = tmp_path / "models.toml"
    reg.write_text(tiny_registry.read_text() + '\n[[model]]\nname = "served"\nkind = "generative"\n'
                   'languages = ["en"]\n[model.server]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                   'max_concurrent = 6\n')
    monkeypatch.setenv("QAX_MODELS_TOML", str(reg))
    settings = {"backend": "torch"}
    assert ModelActor("served", settings, 1).engine.runtime.concurrency == 6
    assert ModelActor("served", settings, 1, sharers=2).engine.runtime.concurrency == 3
    assert ModelActor("served", settings, 1, sharers=3).engine.runtime.concurrency == 2
    assert ModelActor("served", settings, 1, sharers=9).engine.runtime.concurrency == 1
    from core.qa.registry import load_engine

    assert load_engine("served").runtime.concurrency == 6   # the process's cached engine is left whole
    assert not hasattr(ModelActor("tiny-a", settings, 1, sharers=4).engine, "runtime")
