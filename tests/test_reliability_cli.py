"""Bad input through every command line (issue 23, items 6, 7 and 9): each ends in ONE line on
stderr, ``python -m core.<tool>: error: <message>``, exit status 2 and no traceback, and nothing is
written or lost (no output file, the sweep database byte for byte the same, no cached prediction).
``--debug`` shows the traceback. The CLIs run as subprocesses on the tiny registry of conftest.py,
offline (HF_HUB_OFFLINE=1: the hub model fails at once instead of after network retries)."""
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def squad(qas, context="the eiffel tower is in paris . it was completed in 1889 .", title="t"):
    return {"version": "1.1", "data": [{"title": title, "paragraphs": [{"context": context, "qas": qas}]}]}


@pytest.fixture(scope="module")
def env(tiny_registry, tmp_path_factory):
    """Input files (good and bad), an empty data directory and the environment the CLIs run in."""
    d = tmp_path_factory.mktemp("reliability")
    (d / "data").mkdir()
    (d / "malformed.json").write_text('{"data": [')
    (d / "latin1.json").write_bytes(json.dumps(squad([{"id": "q", "question": "où ?", "answers": []}]),
                                               ensure_ascii=False).encode("latin-1"))
    (d / "schema.json").write_text(json.dumps({"data": [{"paragraphs": [{"context": 5}]}]}))
    (d / "dureader.json").write_text(json.dumps(squad(
        [{"id": "d1", "question": "where ?", "answers": [{"text": "paris", "answer_start": -1}]}],
        context="the tower is in paris . paris is big .")))
    (d / "impossible.json").write_text(json.dumps(squad(
        [{"id": "i1", "question": "who sold it ?", "answers": [], "is_impossible": True}])))
    (d / "squad2.json").write_text(json.dumps(squad([
        {"id": "a1", "question": "where is the tower ?", "answers": [{"text": "paris", "answer_start": 23}]},
        {"id": "a2", "question": "when was it completed ?", "answers": [{"text": "1889", "answer_start": 51}]},
        {"id": "i1", "question": "who sold it ?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "paris", "answer_start": 23}]},
        {"id": "e1", "question": " ", "answers": [{"text": "paris", "answer_start": 23}]}])))
    (d / "a-file").write_text("I am a file, not a folder\n")
    (d / "not-sqlite.db").write_bytes(b"precious notes of another application\n" * 10)
    environ = {**os.environ, "QAX_MODELS_TOML": str(tiny_registry), "HF_HUB_OFFLINE": "1",
               "QAX_DATA_DIR": str(d / "data"), "PYTHONPATH": str(ROOT)}
    environ.pop("QAX_DEBUG", None)
    return d, environ


def run(env, module, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=env[1],
                          capture_output=True, text=True, timeout=timeout)


def assert_refused(proc, prog, *fragments):
    """Exit 2, one line on stderr naming the command, each fragment in it, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"python -m {prog}: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------ core.models.evaluate


EVALUATE_CASES = {
    "unknown model": (["--model", "nope", "--dataset", "demo.en"], ["no model named 'nope'"]),
    "unknown dataset": (["--model", "tiny-a", "--dataset", "no/such/set"],
                        ["dataset 'no/such/set'", "neither a file nor found"]),
    "malformed JSON": (["--model", "tiny-a", "--dataset", "{d}/malformed.json"], ["not valid JSON"]),
    "not UTF-8": (["--model", "tiny-a", "--dataset", "{d}/latin1.json"], ["not UTF-8"]),
    "wrong schema": (["--model", "tiny-a", "--dataset", "{d}/schema.json"],
                     ["data[0].paragraphs[0].context should be str, got int"]),
    "ambiguous DuReader offset": (["--model", "tiny-a", "--dataset", "{d}/dureader.json"], ["d1", "paris"]),
    "offline hub model": (["--model", "hub-model", "--dataset", "demo.en"],
                          ["could not load 'no-such-org/no-such-qa-model' from the Hugging Face hub",
                           "register it in models.toml with path"]),
    "negative batch size": (["--model", "tiny-a", "--dataset", "demo.en", "--batch-size", "-1"],
                            ["argument --batch-size: must be a whole number of at least 1, got '-1'"]),
    "negative threads": (["--model", "tiny-a", "--dataset", "demo.en", "--threads", "-3"],
                         ["argument --threads: must be a whole number of at least 0, got '-3'"]),
    "batch size not a number": (["--model", "tiny-a", "--dataset", "demo.en", "--batch-size", "eight"],
                                ["argument --batch-size: must be a whole number of at least 1, got 'eight'"]),
    "json output under a file": (["--model", "tiny-a", "--dataset", "demo.en", "--json", "{d}/a-file/out.json"],
                                 ["--json", "a-file is a file, not a folder"]),
    "only unanswerable questions": (["--model", "tiny-a", "--dataset", "{d}/impossible.json"],
                                    ["no question can be scored", "1 unanswerable (SQuAD 2.0 is_impossible)"]),
    "paired with one model": (["--model", "tiny-a", "--dataset", "demo.en", "--paired"],
                              ["--paired compares exactly two models"]),
}


@pytest.mark.parametrize("case", list(EVALUATE_CASES))
def test_evaluate_bad_input(env, case):
    args, fragments = EVALUATE_CASES[case]
    d = env[0]
    before = sorted(p.name for p in d.iterdir())
    json_out = [] if "--json" in args else ["--json", d / f"out-{case}.json"]
    proc = run(env, "core.models.evaluate", *[a.format(d=d) for a in args], *json_out)
    assert_refused(proc, "core.models.evaluate", *fragments)
    assert proc.stdout == ""  # refused before any evaluation
    assert sorted(p.name for p in d.iterdir()) == before  # no --json output, nothing else either


def test_evaluate_reports_what_it_skips_on_a_squad2_file(env):
    d = env[0]
    proc = run(env, "core.models.evaluate", "--model", "tiny-a", "--dataset", d / "squad2.json",
               "--json", d / "s2.json")
    assert proc.returncode == 0, proc.stderr
    assert (f"{d / 'squad2.json'}: scored 2 of 4 questions; skipped 2: 1 unanswerable (SQuAD 2.0 "
            "is_impossible), 1 empty question") in proc.stderr
    [result] = json.loads((d / "s2.json").read_text())
    assert result["n"] == 2
    assert result["skipped"] == {"unanswerable (SQuAD 2.0 is_impossible)": 1, "empty question": 1}
    (d / "s2.json").unlink()


def test_debug_shows_the_traceback(env):
    proc = run(env, "core.models.evaluate", "--model", "nope", "--dataset", "demo.en", "--debug")
    assert proc.returncode == 1 and "Traceback" in proc.stderr
    assert "ModelLoadError: no model named 'nope'" in proc.stderr


# -------------------------------------------------------------------------------- core.sweeps


SWEEP = ["--dataset", "demo.en", "--perturbations", "TLQ", "--models", "tiny-a", "--sample", "3", "--quiet"]


def predictions(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT answer, span_start, span_end FROM predictions ORDER BY key").fetchall()


def test_batch_size_minus_one_never_reaches_the_prediction_cache(env, tmp_path):
    """Before: exit 0, every prediction empty (F1 0.0), and those empty predictions cached, so a
    later correct run of the same configuration in that database reused them."""
    db = tmp_path / "sweeps.sqlite"
    bad = run(env, "core.sweeps", *SWEEP, "--db", db, "--batch-size", "-1")
    assert_refused(bad, "core.sweeps", "argument --batch-size: must be a whole number of at least 1, got '-1'")
    assert not db.exists()  # refused before the database was opened

    good = run(env, "core.sweeps", *SWEEP, "--db", db)
    assert good.returncode == 0, good.stderr
    assert "6 predictions computed, 0 from cache" in good.stdout
    rows = predictions(db)
    assert len(rows) == 6 and all(answer and start is not None and end > start for answer, start, end in rows)

    before = digest(db)
    again = run(env, "core.sweeps", *SWEEP, "--db", db, "--batch-size", "-1")
    assert_refused(again, "core.sweeps", "argument --batch-size: must be a whole number of at least 1, got '-1'")
    assert digest(db) == before and predictions(db) == rows


@pytest.fixture(scope="module")
def sweep_db(env, tmp_path_factory):
    db = tmp_path_factory.mktemp("sweepdb") / "sweeps.sqlite"
    proc = run(env, "core.sweeps", *SWEEP, "--db", db, "--name", "toy")
    assert proc.returncode == 0, proc.stderr
    return db


SWEEP_CASES = {
    "show an unknown sweep": (["--show", "nope"], ["no sweep 'nope'", "known sweeps: toy"]),
    "compare an unknown model": (["--show", "toy", "--compare", "tiny-a,nobody"],
                                 ["model 'nobody' is not in this sweep"]),
    "compare one model": (["--show", "toy", "--compare", "tiny-a"], ["--compare takes two model names"]),
    "compare without show": (["--compare", "tiny-a,tiny-b"], ["--compare goes with --show"]),
    "unknown perturbation": (["--dataset", "demo.en", "--perturbations", "NOPE", "--models", "tiny-a"],
                             ["unknown perturbation id 'NOPE'"]),
    "bad perturbation parameter": (["--dataset", "demo.en", "--perturbations", "DCRQ:n_chars=abc",
                                    "--models", "tiny-a"],
                                   ["DCRQ: parameter 'n_chars' must be int"]),
    "unknown model": (["--dataset", "demo.en", "--perturbations", "TLQ", "--models", "tiny-a,nope"],
                      ["no model named 'nope'"]),
    "zero repeats": (["--dataset", "demo.en", "--perturbations", "TLQ", "--models", "tiny-a", "--repeats", "0"],
                     ["argument --repeats: must be a whole number of at least 1, got '0'"]),
    "unknown dataset": (["--dataset", "demo.xx", "--perturbations", "TLQ", "--models", "tiny-a"],
                        ["the demo set has no 'xx' part"]),
}


@pytest.mark.parametrize("case", list(SWEEP_CASES))
def test_sweep_bad_input_leaves_the_database_alone(env, sweep_db, case):
    args, fragments = SWEEP_CASES[case]
    before = digest(sweep_db)
    proc = run(env, "core.sweeps", *args, "--db", sweep_db, "--quiet")
    assert_refused(proc, "core.sweeps", *fragments)
    assert digest(sweep_db) == before


def test_sweep_db_that_is_not_sqlite_is_refused_untouched(env):
    d = env[0]
    before = digest(d / "not-sqlite.db")
    for args in (["--list"], ["--show", "toy"], SWEEP):  # SWEEP: refused before a model loads
        proc = run(env, "core.sweeps", *args, "--db", d / "not-sqlite.db")
        assert_refused(proc, "core.sweeps", "not-sqlite.db", "SQLite")
        assert digest(d / "not-sqlite.db") == before


def test_sweep_show_without_a_database(env, tmp_path):
    proc = run(env, "core.sweeps", "--show", "toy", "--db", tmp_path / "none.sqlite")
    assert_refused(proc, "core.sweeps", "no sweep database at", "cannot show 'toy'")
    assert not (tmp_path / "none.sqlite").exists()


# ------------------------------------------------------------------- core.perturb.make_challenge


def test_make_challenge_bad_input_writes_nothing(env, tmp_path):
    d = env[0]
    out = tmp_path / "challenge.json"
    cases = [
        (["--input", d / "squad2.json", "--perturbation", "backtranslate_Q", "--param", "pivot=xx", "--output", out],
         ["backtranslate_Q cannot run on 'en' questions"]),            # unknown pivot language
        (["--input", d / "squad2.json", "--perturbation", "keyboard_Q", "--output", d / "a-file" / "c.json"],
         ["--output", "a-file is a file, not a folder"]),              # output under a file
        (["--input", d / "squad2.json", "--perturbation", "keyboard_Q", "--output", tmp_path],
         ["is a folder, not a file"]),                                  # output is a folder
        (["--input", d / "squad2.json", "--perturbation", "no_such_Q", "--output", out],
         ["no_such_Q"]),                                                # unknown perturbation
        (["--input", d / "malformed.json", "--perturbation", "keyboard_Q", "--output", out],
         ["not valid JSON"]),                                           # malformed input
    ]
    for args, fragments in cases:
        assert_refused(run(env, "core.perturb.make_challenge", *args), "core.perturb.make_challenge", *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ------------------------------------------------------------------- core.training, core.models.ship, natural_mt


@pytest.fixture(scope="module")
def train_env(tmp_path_factory):
    from tiny_model import build_training_env

    return build_training_env(tmp_path_factory.mktemp("train"))


def train_args(train_env, out, *extra):
    return ["--base", train_env / "base", "--train", train_env / "train.json", "--output", out, "--batch-size", "2",
            "--max-length", "48", "--stride", "16", "--max-steps", "2", "--cpu-bf16", "off", *extra]


class _Planted:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_train_refuses_a_planted_checkpoint_before_it_runs_code(env, train_env, tmp_path):
    """Before: ``torch.load(weights_only=False)`` on resume ran the planted object's __reduce__."""
    import torch

    out, marker = tmp_path / "run", tmp_path / "pwned.txt"
    out.mkdir()
    torch.save({"model": {}, "opt": {}, "sched": {}, "step": 1, "log": {}, "lora": None,
                "rng": {"torch": _Planted(marker)}}, out / "checkpoint.pt")
    proc = run((env[0], {**env[1], "QAX_DATA_DIR": str(train_env / "data")}), "core.training",
               *train_args(train_env, out))
    assert_refused(proc, "core.training", "checkpoint.pt holds more than tensors and plain data (a reference to exec)")
    assert not marker.exists()
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt"]  # no model, no log


@pytest.mark.parametrize("extra, fragment", [
    (["--batch-size", "0"], "argument --batch-size: must be a whole number of at least 1, got '0'"),
    (["--stride", "40"], "--stride must be at most half of --max-length (48), got 40"),
])
def test_train_bad_numbers(env, train_env, tmp_path, extra, fragment):
    proc = run(env, "core.training", *train_args(train_env, tmp_path / "run"), *extra)
    assert_refused(proc, "core.training", fragment)
    assert not (tmp_path / "run").exists()


def test_ship_bad_input_writes_nothing(env, tmp_path):
    dest = tmp_path / "models"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    cases = [
        (["--run", run_dir, "--name", "../../escaped"], ["--name '../../escaped'"]),
        (["--run", run_dir, "--name", "ok"], ["train_log.json not found"]),
    ]
    for args, fragments in cases:
        proc = run(env, "core.models.ship", *args, "--description", "d", "--dest", dest)
        assert_refused(proc, "core.models.ship", *fragments)
    (run_dir / "train_log.json").write_text('{"base": "minilm"}')
    proc = run(env, "core.models.ship", "--run", run_dir, "--name", "ok", "--description", "d", "--dest", dest)
    assert_refused(proc, "core.models.ship", "lacks args", "not a complete core.training log")
    assert not dest.exists() and not (tmp_path / "escaped").exists()


def test_natural_mt_bad_input_writes_nothing(env, tmp_path):
    d = env[0]
    proc = run(env, "core.translate.natural_mt", "--lang", "es", "--output", tmp_path / "o.json", "--limit", "0")
    assert_refused(proc, "core.translate.natural_mt", "argument --limit: must be a whole number of at least 1, got '0'")
    proc = run(env, "core.translate.natural_mt", "--lang", "es", "--output", d / "a-file" / "o.json")
    assert_refused(proc, "core.translate.natural_mt", "--output", "a-file is a file, not a folder")
    assert list(tmp_path.iterdir()) == []


def test_sweep_list_of_a_folder_is_refused(env, tmp_path):
    proc = run(env, "core.sweeps", "--list", "--db", tmp_path)
    assert_refused(proc, "core.sweeps", "is a folder, not a sweep database")


def test_sweep_list_and_show_never_write_to_the_store(env, sweep_db):
    """Reading is read-only: listing and showing leave the database byte for byte."""
    before = digest(sweep_db)
    for args in (["--list"], ["--show", "toy"]):
        proc = run(env, "core.sweeps", *args, "--db", sweep_db)
        assert proc.returncode == 0, proc.stderr
        assert digest(sweep_db) == before


def test_no_command_imports_torch_before_it_parses_its_arguments():
    """A typo'd flag is refused in a fraction of a second: no command line of core/ imports torch
    (2 s and 200 MB) when its module loads; the model code imports it when a model is built."""
    from core.commands import command_sources

    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in command_sources()
               if p.relative_to(ROOT).parts[0] == "core"]
    assert "core.sweeps.cli" in modules
    probe = f"import importlib, sys\nfor m in {modules!r}:\n    importlib.import_module(m)\n" \
            "print(sorted(m for m in ('torch', 'transformers', 'onnxruntime') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
