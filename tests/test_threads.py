"""The thread policy (core.qa.threads): a caller alone gets the budget, a caller beside another
(a thread of this process or another process) gets one thread; a fixed setting is kept."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.qa.threads import Slot, budget


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QAX_THREADS", "4")


def test_alone_the_budget_beside_another_one_thread():
    assert budget() == 4
    with Slot() as first:
        assert first.threads() == 4
        with Slot() as second:
            assert first.index != second.index
            assert (first.threads(), second.threads()) == (1, 1)
        assert first.threads() == 4  # the other one left


def test_a_fixed_setting_is_kept_but_counts_for_the_others():
    with Slot(3) as fixed, Slot() as policy:
        assert fixed.threads() == 3
        assert policy.threads() == 1


def test_a_caller_in_another_process_counts(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, time
            sys.path.insert(0, ".")
            from core.qa.threads import Slot
            with Slot():
                print("holding", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        assert holder.stdout.readline().strip() == "holding"
        with Slot() as mine:
            assert mine.threads() == 1
    finally:
        holder.communicate("done\n", timeout=30)
    with Slot() as mine:  # the process left: its lock went with it
        assert mine.threads() == 4


def test_an_unwritable_cache_means_no_coordination(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("QAX_CACHE_DIR", str(blocker))
    with Slot() as a, Slot() as b:
        assert (a.threads(), b.threads()) == (4, 4)
