"""core.explain.run: an attribution request on a background thread, its progress, cancel, budget and reaping."""
import threading

import pytest

from core.budgets import BudgetError
from core.explain import run as attr_run


def looping(started: threading.Event, steps: list):
    """A task that reports progress until it is cancelled (its progress call raises)."""
    def task(progress):
        started.set()
        for k in range(10_000):
            steps.append(k)
            progress("integrating at 8 steps", k, 10_000)
            threading.Event().wait(0.01)
        return "finished"
    return task


def test_cancel_stops_the_running_model_and_skips_the_next():
    started, steps = threading.Event(), []
    run = attr_run.start([("a", looping(started, steps)), ("b", lambda progress: "b's result")], key=("k",))
    assert started.wait(30)
    run.cancel("cancelled on the page")
    assert run.wait(30) and not run.running
    assert [m.state for m in run.models] == [attr_run.CANCELLED, attr_run.CANCELLED]
    assert run.models[0].phase == "integrating at 8 steps" and 0 < run.models[0].fraction < 0.5
    assert run.cancel_reason == "cancelled on the page"
    assert len(steps) < 10_000 and run not in attr_run.running_runs()


def test_one_failure_does_not_stop_the_others_and_results_are_kept():
    def broken(progress):
        raise ValueError("no torch weights")

    def fine(progress):
        progress("reading", 1, 1)
        return 42

    run = attr_run.start([("a", broken), ("b", fine)])
    assert run.wait(30)
    a, b = run.models
    assert (a.state, a.error, a.result) == (attr_run.FAILED, "ValueError: no torch weights", None)
    assert (b.state, b.result, b.fraction) == (attr_run.DONE, 42, 1.0)


def test_reap_cancels_the_runs_of_sessions_that_have_gone():
    started_gone, started_here, started_free = threading.Event(), threading.Event(), threading.Event()
    gone = attr_run.start([("a", looping(started_gone, []))], owner="tab-closed")
    here = attr_run.start([("a", looping(started_here, []))], owner="tab-open")
    try:
        assert started_gone.wait(30) and started_here.wait(30)
        assert attr_run.reap(lambda sid: sid == "tab-open") == [gone]
        assert gone.wait(30) and gone.models[0].state == attr_run.CANCELLED
        assert gone.cancel_reason == "its browser session ended"
        assert here.running
    finally:
        here.cancel()
        gone.cancel()
        here.wait(30)
    free = attr_run.start([("a", looping(started_free, []))])   # no owner: not reaped
    try:
        assert started_free.wait(30)
        assert attr_run.reap(lambda sid: False) == [] and free.running
    finally:
        free.cancel()
        free.wait(30)


def test_the_server_runs_at_most_its_budget_of_runs(monkeypatch):
    monkeypatch.setenv("QAX_MAX_ATTRIBUTIONS", "1")
    started = threading.Event()
    first = attr_run.start([("a", looping(started, []))])
    try:
        assert started.wait(30)
        with pytest.raises(BudgetError, match="QAX_MAX_ATTRIBUTIONS"):
            attr_run.start([("b", lambda progress: 1)])
    finally:
        first.cancel()
        first.wait(30)
    assert attr_run.start([("b", lambda progress: 1)]).wait(30)   # once it ended, another may start

