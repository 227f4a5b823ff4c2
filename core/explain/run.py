"""The app's attribution runs: the settings it explains with, and one request computed off the
page's thread, with progress per model and a cancel.

An :class:`AttributionRun` is one person's request: several models' attributions of one text
(Ask) or of a clean and a perturbed pair (why did it change?), one model after another on a
daemon thread. Per model it keeps a :class:`ModelProgress` (state, phase, fraction done,
seconds, result or error) that the page polls. :meth:`AttributionRun.cancel` stops it at the
next chunk of integration rows (core.explain.integrated.CHUNK_TOKENS: one forward and two
backward passes). Each run names its owner (a browser session); :func:`reap` cancels the runs
whose owner has gone, so no attribution outlives the person who asked for it.

The settings (docs/results/attribution.md measured them against the 50-step captum run the app
used before, on three XQuAD-en passages with minilm-squad-v2): :data:`STEPS` Gauss-Legendre steps,
whose token scores rank as the 50-step ones do (Spearman's rho over the context tokens at least
0.994, the same top-5 context tokens on two passages and four of five on the third) at a
quarter of the work. Doubling the steps until the completeness error is within 5 % (``explain``'s
``tolerance``) needed 32 steps on one passage of three, twice the time, for rankings that 16
already matched; 8 steps ranked visibly worse (rho 0.94 to 0.99, top-5 three of five on one
passage) and gradient x input (one step) did not agree at all (rho 0.09 to 0.29). The page
shows each result's completeness error.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.budgets import MAX_ATTRIBUTIONS, BudgetError
from core.explain.integrated import Cancelled, Progress

__all__ = ["STEPS", "ModelProgress", "AttributionRun", "start", "running_runs", "reap", "explain_settings",
           "releasing", "cheapest_first", "BudgetError", "WAITING", "RUNNING", "DONE", "FAILED", "CANCELLED"]

STEPS = 16

WAITING, RUNNING, DONE, FAILED, CANCELLED = "waiting", "running", "done", "failed", "cancelled"

log = logging.getLogger(__name__)

_lock = threading.Lock()
_runs: list[AttributionRun] = []


def explain_settings() -> dict:
    """The keyword arguments of core.explain.explain (and explain_change) the app runs with."""
    return {"n_steps": STEPS}


@dataclass
class ModelProgress:
    """One model's part of a run, as the page shows it."""

    model: str
    state: str = WAITING
    phase: str = ""
    fraction: float = 0.0
    seconds: float = 0.0
    result: Any = None
    error: str | None = None


Task = Callable[[Progress], Any]


class AttributionRun:
    """Tasks (``(model, task)``: ``task(progress)`` computes and returns that model's result,
    calling ``progress(phase, done, total)`` as it goes) run in order on a daemon thread.
    ``key`` says what was asked (the page compares it with what it shows); ``owner``: the
    session that asked (:func:`reap`)."""

    def __init__(self, tasks: Sequence[tuple[str, Task]], key: Any = None, owner: str | None = None):
        self.key = key
        self.owner = owner
        self.models = [ModelProgress(name) for name, _ in tasks]
        self._tasks = [task for _, task in tasks]
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self.cancel_reason: str | None = None

    def start(self) -> AttributionRun:
        """Start the thread; BudgetError when the server already runs its budget of runs."""
        with _lock:
            alive = [r for r in _runs if r.running]
            MAX_ATTRIBUTIONS.check(len(alive) + 1, "this attribution", "would make")
            _runs[:] = alive + [self]
            self._thread = threading.Thread(target=self._work, name="attribution", daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self, reason: str | None = None) -> None:
        if reason and not self._cancel.is_set():
            self.cancel_reason = reason
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; whether it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def _work(self) -> None:
        for mp, task in zip(self.models, self._tasks):
            if self._cancel.is_set():
                mp.state = CANCELLED
                continue
            mp.state, t0 = RUNNING, time.perf_counter()

            def progress(phase: str, done: int, total: int, mp=mp, t0=t0) -> None:
                mp.phase, mp.fraction = phase, done / total if total else 0.0
                mp.seconds = time.perf_counter() - t0
                if self._cancel.is_set():
                    raise Cancelled(phase)

            try:
                mp.result = task(progress)
                mp.state, mp.fraction = DONE, 1.0
            except Cancelled:
                mp.state = CANCELLED
            except Exception as e:   # one model's failure must not stop the others'
                mp.state, mp.error = FAILED, f"{type(e).__name__}: {e}"
            mp.seconds = time.perf_counter() - t0


def running_runs() -> list[AttributionRun]:
    """The runs of this process whose thread is running now."""
    with _lock:
        return [r for r in _runs if r.running]


def reap(is_active: Callable[[str], bool]) -> list[AttributionRun]:
    """Cancel the running runs whose owner session is no longer active (``is_active``); returns
    them. Runs without an owner are left alone."""
    gone = []
    for run in running_runs():
        if run.owner is not None and not run.cancelled and not is_active(run.owner):
            run.cancel("its browser session ended")
            gone.append(run)
            log.warning("attribution of %s cancelled: its browser session ended",
                        ", ".join(m.model for m in run.models))
    return gone


def releasing(engine, compute: Task) -> Task:
    """``compute`` (a task attributing with ``engine``), after which the engine lets go of what the
    attribution loaded beside its graph: the torch weights an ONNX or OpenVINO engine had dropped
    (QAEngine.release_torch; they load again on the next attribution) and the float32 copy of fp16
    weights (core.explain.integrated.float32_model). Without it, each attributed model kept its
    torch weights outside the engine cache's budget: a demo server went from 2.3 GB to 4.5 GB after
    one attribution of three models and stayed at 3.5 GB (docs/results/demo-walk-2026-11-27.md)."""
    def task(progress: Progress):
        try:
            return compute(progress)
        finally:
            engine.__dict__.pop("_explain_float32", None)
            release = getattr(engine, "release_torch", None)
            if release is not None and release():
                from core import memory

                memory.trim_later(1.0)   # once this thread's own references have gone too
    return task


def cheapest_first(models: Sequence[str], torch_ms: Callable[[str], float | None]) -> list[str]:
    """``models`` ordered by what one attribution costs (``torch_ms``: the torch pass's CPU ms per
    question; unmeasured last, the given order kept among equals): the first is the one a page
    attributes unless asked for more.

    >>> cheapest_first(["mpnet", "e5", "minilm", "odd"], {"mpnet": 498.0, "e5": 149.2, "minilm": 67.6}.get)
    ['minilm', 'e5', 'mpnet', 'odd']
    """
    cost = {m: torch_ms(m) for m in models}
    return sorted(models, key=lambda m: (cost[m] is None, cost[m] or 0.0))


def start(tasks: Sequence[tuple[str, Task]], key: Any = None, owner: str | None = None) -> AttributionRun:
    """A started :class:`AttributionRun` (BudgetError: the server is at its budget of runs)."""
    return AttributionRun(tasks, key, owner).start()

