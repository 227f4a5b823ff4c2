import atexit
import os
import shutil
import sys
import tempfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# Ray starts its workers (model actors, perturbation tasks) at nice 15. Beside the suite's other
# workers, all at nice 0 on two cores, they starved: one Ray sweep took 491 s against 88 s at nice
# 0 beside two busy processes, and the Ray file was the suite's critical path (1,053 s of 1,596).
# Every Ray this suite starts, in-process or in a CLI it runs, inherits this.
os.environ["RAY_worker_niceness"] = "0"

# The runs folder (core.config.runs_dir: the default sweep database, the command lines' outputs) is
# a temporary one per test process: a developer's own sweeps in the checkout's runs/ were listed
# beside a test's database of the same name and failed seven page tests, and the tests' sweeps
# stayed in runs/. Every server and command line a test starts inherits it.
os.environ["QAX_RUNS_DIR"] = tempfile.mkdtemp(prefix="qax-test-runs-")
atexit.register(shutil.rmtree, os.environ["QAX_RUNS_DIR"], True)


# The quick tier is ``pytest -m "not slow"`` (the README's quick command): these files are marked
# slow as a whole because every test in them starts something expensive: a Chromium (e2e), a Ray
# cluster, a training run, an ONNX export, the shipped models on real data, speech synthesis and
# recognition, a fresh Python process per case, or one AppTest per perturbation (the last two
# measured with pytest -v under load 7 on 2 cores: 196 of the other files' 370 s). A single slow
# test elsewhere takes ``@pytest.mark.slow`` itself.
SLOW_FILES = (
    "test_e2e_*.py",                                     # headless Chromium
    "test_sweep_ray.py", "test_ray_lifecycle.py",        # Ray
    "test_lora.py", "test_train_stages.py", "test_distill.py", "test_pseudo_label.py",
    "test_train_augment.py", "test_vocab.py",            # training runs
    "test_backends.py", "test_int8_per_token.py", "test_prepare.py",  # ONNX exports
    "test_shipped_models.py", "test_capabilities.py",   # the shipped models on real data
    "test_multilingual_e5.py",                           # the E5 base converted, and its model
    "test_speech.py", "test_asr_fresh_state.py",         # TTS and ASR
    "test_agreement_models.py",                          # a trial spoken, transcribed and answered
    "test_sweep_kill.py",                                # killed and restarted sweep processes
    "test_sweep_processes.py",                           # sweeps answered by spawned worker processes
    "test_reliability_cli.py",                           # every command line started as a process
    "test_param_widgets.py",                             # every perturbation's form drawn by AppTest
    "test_explain.py",                                   # integrated gradients on the shipped models
    "test_fonts.py",                                     # kaleido's PNG export in Chromium
    "test_server_launcher.py",                           # ./run.sh app's launcher served, its models loaded
)


# The longest files first, so the three workers (./run.sh test: --dist loadfile, each file on one
# worker) end together: in collection order, with xdist's default reordering by the number of tests
# in a file, these few-test files came last and one worker ran on alone for minutes. The three that
# start together are the Ray file, the LLM server file and a browser file, not the CPU-heavy
# process sweeps: with the LLM server, Ray and two process-sweep files first, a clean-clone run
# took 1,514 s of pytest, against 1,340 and 1,433 s in this order (one run each way; runs of the
# same code differ by about 100 s, so the order's share of it is not settled: suite-time.md).
SLOWEST_FIRST = (
    "test_sweep_ray.py", "test_generative_llm.py", "test_e2e_ask.py", "test_e2e_first_minutes.py",
    "test_e2e_demo_walk.py", "test_e2e_narrow.py", "test_e2e_attribution.py", "test_sweep_processes.py",
    "test_sweep_kill.py", "test_e2e_permalinks.py", "test_e2e_server_paths.py", "test_e2e_rows_table.py",
    "test_backends.py", "test_e2e_llm_ask.py", "test_e2e_untrusted_text.py",
)


def is_slow_file(name: str) -> bool:
    """Whether every test in the file ``name`` is slow.

    >>> is_slow_file("test_e2e_ask.py"), is_slow_file("test_metrics.py")
    (True, False)
    """
    return any(fnmatch(name, pattern) for pattern in SLOW_FILES)


def file_rank(name: str) -> int:
    """Where the file ``name`` runs: its place in :data:`SLOWEST_FIRST`, else after all of them.

    >>> file_rank("test_sweep_ray.py"), file_rank("test_metrics.py") == len(SLOWEST_FIRST)
    (0, True)
    """
    return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)


def pytest_addoption(parser):
    parser.addoption("--cpu-report", metavar="FILE", help="append each test's CPU seconds to FILE "
                     "(tests/cpu_report.py sums them per file)")


def pytest_configure(config):
    if config.getoption("--cpu-report"):
        from cpu_report import CpuReport

        config.pluginmanager.register(CpuReport(config.getoption("--cpu-report")), "cpu-report")


def pytest_collection_modifyitems(config, items):
    """Mark every test of :data:`SLOW_FILES`, and every e2e test, ``slow``; put the longest files
    first (a stable sort: the tests of a file keep their order)."""
    for item in items:
        if is_slow_file(item.path.name) or item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: file_rank(item.path.name))


def pytest_runtest_setup(item):
    """``@pytest.mark.needs_data("xquad/xquad.en.json", ...)``: skip, naming what is missing, when the
    data directory (QAX_DATA_DIR or ../shared/data) lacks a file the test reads. CI always has it."""
    marker = item.get_closest_marker("needs_data")
    if marker is None:
        return
    from core import config

    root = config.data_dir()
    if root is None:
        pytest.skip("no data directory: set QAX_DATA_DIR or provide ../shared/data")
    missing = [p for p in marker.args if not (root / p).is_file()]
    if missing:
        pytest.skip(f"not in the data directory {root}: {', '.join(missing)}")


@pytest.fixture
def sweep_db(tmp_path, monkeypatch):
    """The toy sweep of tests/test_app_heatmaps.py (two lookup models, hand-checked scores) in a
    fresh database that the pages open (QAX_SWEEP_DB). A file that needs another sweep defines its own."""
    from test_app_heatmaps import build_sweep

    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    return db


@pytest.fixture(scope="session")
def tiny_qa_dir(tmp_path_factory):
    from tiny_model import build_tiny_qa

    d = tmp_path_factory.mktemp("tiny_qa")
    build_tiny_qa(d)
    return d


@pytest.fixture(scope="session")
def tiny_registry(tiny_qa_dir, tmp_path_factory):
    """A models.toml naming the tiny model (twice, to exercise multi-model code) and a hub id."""
    f = tmp_path_factory.mktemp("registry") / "models.toml"
    f.write_text(
        f'[[model]]\nname = "tiny-a"\npath = "{tiny_qa_dir}"\nlanguages = ["en"]\ndescription = "tiny"\n\n'
        f'[[model]]\nname = "tiny-b"\npath = "{tiny_qa_dir}"\nlanguages = ["en"]\ndescription = "tiny twin"\n\n'
        '[[model]]\nname = "hub-model"\nhf_id = "no-such-org/no-such-qa-model"\n'
    )
    return f
