"""Issue 46 (10): the benchmarks answer bad input in one line with exit status 2, like the CLIs.

``benchmarks/qa_throughput.py`` answered a bad model, data set, batch size, thread count,
backend, ``--batch-sizes a,b`` or ``--chunk 0`` with a traceback, and ``--n -5`` silently meant
"all but 5". Every case here is refused before a model loads, in one line on stderr.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def qa_throughput():
    return load_benchmark("qa_throughput")


def status(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:   # argparse's own refusals exit from inside
        return e.code


@pytest.mark.parametrize("argv, message", [
    (["--model", "no-such-model"], "no-such-model"),
    (["--dataset", "no/such/set"], "no/such/set"),
    (["--batch-size", "0"], "--batch-size: must be a whole number of at least 1, got '0'"),
    (["--batch-size", "x"], "--batch-size: must be a whole number of at least 1, got 'x'"),
    (["--threads", "-2"], "--threads: must be a whole number of at least 0, got '-2'"),
    (["--backend", "tensorrt"],
     "--backend must be one of default, torch, torch-bf16, onnx, onnx-int8, openvino, openvino-int8, "
     "openvino-int8-full, got 'tensorrt'"),
    (["--batch-sizes", "a,b"], "--batch-sizes: expected comma-separated whole numbers of at least 1"),
    (["--batch-sizes", "4,0"], "--batch-sizes: expected comma-separated whole numbers of at least 1"),
    (["--chunk", "0"], "--chunk: must be a whole number of at least 1, got '0'"),
    (["--n", "-5"], "--n: must be a whole number of at least 0, got '-5'"),
])
def test_qa_throughput_refuses_bad_input_in_one_line(qa_throughput, argv, message, capsys):
    assert status(qa_throughput.main, ["--dataset", "demo.en", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("benchmarks/qa_throughput.py: error: ") and message in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""


def test_qa_throughput_json_may_not_be_its_dataset(qa_throughput, tmp_path, capsys):
    from core.datasets import demo_dataset

    data = tmp_path / "set.json"
    demo_dataset("en").to_squad_json(data)
    before = data.read_bytes()
    assert status(qa_throughput.main, ["--dataset", str(data), "--json", str(data), "--compare-backends"]) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_every_benchmark_uses_the_one_line_error_handling():
    """Each benchmark with a command line wraps its main with core.cli.command and parses with
    core.cli.ArgumentParser (one line, exit 2, --debug for the traceback)."""
    missing = []
    for f in sorted((ROOT / "benchmarks").glob("*.py")):
        text = f.read_text(encoding="utf-8")
        if "add_argument(" not in text:
            continue
        if "@cli.command(" not in text or "argparse.ArgumentParser(" in text:
            missing.append(f.name)
    assert missing == []


# ----------------------------------------------------------------- a sweep store on a read-only mount


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs a mount namespace (unshare -m) for a real read-only mount")
def test_a_sweep_store_on_a_read_only_mount_can_be_listed(tmp_path):
    """A WAL database needs its -shm file even to be read, and a read-only mount cannot create
    it: ``mode=ro`` alone failed with "unable to open database file". A real read-only bind
    mount (a private mount namespace), listed by the CLI."""
    from core.datasets import Dataset
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep
    from core.types import Answer, Prediction, QAExample, Span

    class Echo:
        fingerprint = "echo-1"

        def predict(self, questions, contexts, **kw):
            return [Prediction([Span(c.split()[0], 0, len(c.split()[0]), 1.0)]) for c in contexts]

    toy = Dataset("toy", "en", [QAExample("q1", "Who came?", "Anna came.", (Answer("Anna", 0),))])
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    run_sweep(SweepConfig("toy", ["TUQ"], ["echo"], name="read-only demo"), {"echo": Echo()},
              src / "sweeps.sqlite", dataset=toy)
    assert sorted(p.name for p in src.iterdir()) == ["sweeps.sqlite"]     # closed cleanly: no -wal, -shm
    before = (src / "sweeps.sqlite").read_bytes()
    script = (f"mount --bind {src} {mnt} && mount -o remount,ro,bind {mnt} && "
              f"exec {sys.executable} -m core.sweeps --list --db {mnt / 'sweeps.sqlite'}")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "read-only demo  [done]  2/2 rows  toy n=1  models=echo" in proc.stdout
    assert sorted(p.name for p in src.iterdir()) == ["sweeps.sqlite"]
    assert (src / "sweeps.sqlite").read_bytes() == before
