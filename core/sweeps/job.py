"""A sweep running on a background thread, so a page can poll its progress and cancel it.

:class:`SweepJob` runs :func:`core.sweeps.lifecycle.launch` (the lifecycle the command line shares:
local or Ray, the stored backend on resume, the aggregates at the end): ``start()`` runs it on a daemon thread;
``done`` / ``total`` follow its progress callback (result rows committed so far / in the complete
sweep); ``cancel()`` sets the event run_sweep checks between chunks, so the sweep stops after the
chunk in flight with status 'cancelled' (everything committed is kept; running the same
configuration again resumes). ``result`` is the :class:`core.sweeps.config.SweepRun`, or ``error`` the
message of whatever run_sweep raised (a SweepError names the problem).

The thread opens its own database connection (run_sweep is given the path, not a Store), so the
page's reads never share a connection with the writer; SQLite's WAL mode lets them run together.
``ray=RayOptions(...)`` runs the sweep on Ray instead (core.sweeps.ray: the models load in its
actors, so ``engines`` is empty); ``workers`` then holds each worker's state (node, calls,
restarts) as the driver reports it, for the page to show.

A started job is known to this process by its database and sweep name while it runs
(:func:`running_on_this_server`): a page reloaded in the browser is a new session that has lost its
job, and finds it there again.

No streamlit import.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.datasets import Dataset
from core.sweeps.config import SweepConfig, SweepRun
from core.sweeps.lifecycle import RayOptions, launch

__all__ = ["SweepJob", "RayOptions", "running_on_this_server"]

_RUNNING: dict[tuple[str, str], "SweepJob"] = {}   # (database, sweep name) -> the job running it here
_RUNNING_LOCK = threading.Lock()


def _db_key(db: str | Path) -> str:
    return str(Path(db).resolve())


def running_on_this_server(db: str | Path, name: str) -> "SweepJob | None":
    """The job of this process that is running the sweep ``name`` of ``db``, or None."""
    with _RUNNING_LOCK:
        job = _RUNNING.get((_db_key(db), name))
    return job if job is not None and job.running else None


class SweepJob:
    """One sweep launched (core.sweeps.lifecycle.launch) on a background thread (see module doc)."""

    def __init__(self, config: SweepConfig, engines: Mapping[str, Any], db: str | Path, *,
                 dataset: Dataset | None = None, data_dir: str | Path | None = None, chunk_size: int = 128,
                 ray: RayOptions | None = None, stored: Mapping[str, str] | None = None,
                 load_as: Callable[[str, str], Any] | None = None):
        self.config = config
        self.db = str(db)
        self.done = 0
        self.total = 0
        self.result: SweepRun | None = None
        self.name: str | None = config.name  # the stored sweep's name, known once it has started
        self.error: str | None = None
        self.phase = "sweep"   # then "aggregates" while the heatmap's aggregates are stored
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._cancel = threading.Event()
        self._kwargs = dict(dataset=dataset, data_dir=data_dir, chunk_size=chunk_size)
        self._engines = dict(engines)
        self._resume = dict(stored=stored, load_as=load_as)   # launch's step 2 (core.sweeps.lifecycle)
        self.ray = ray
        self.workers: list = []   # core.sweeps.ray.WorkerState per worker (Ray sweeps)
        self.switched: dict[str, str] = {}   # model -> the stored backend it switched to (a resume)
        self._thread = threading.Thread(target=self._run, name=f"sweep-{config.name or config.dataset}",
                                        daemon=True)

    def start(self) -> "SweepJob":
        if self.started_at is not None:
            raise RuntimeError("this sweep job was already started")
        self.started_at = time.monotonic()
        self._thread.start()
        return self

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _workers(self, states: list) -> None:
        self.workers = states

    def _started(self, run: SweepRun) -> None:
        self.name = run.name
        with _RUNNING_LOCK:
            _RUNNING[(_db_key(self.db), run.name)] = self

    def _phase(self, phase: str) -> None:
        self.phase = phase

    def _run(self) -> None:
        try:
            self.result = launch(self.config, self.db, engines=self._engines, ray=self.ray,
                                 progress=self._progress, cancel=self._cancel, on_start=self._started,
                                 on_workers=self._workers, on_switched=self.switched.update, on_phase=self._phase,
                                 outlive_cluster=True, **self._resume, **self._kwargs)
            self.done, self.total = self.result.done_units, self.result.total_units
        except BaseException as e:  # shown on the page; the thread must not die silently
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.finished_at = time.monotonic()
            self._engines = {}  # let the engines go once the sweep ends
            with _RUNNING_LOCK:
                if self.name is not None and _RUNNING.get((_db_key(self.db), self.name)) is self:
                    del _RUNNING[(_db_key(self.db), self.name)]

    def cancel(self) -> None:
        """Stop after the chunk in flight (the sweep can be resumed later)."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.finished_at is None

    @property
    def elapsed_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.finished_at or time.monotonic()) - self.started_at

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the sweep ends (or ``timeout`` seconds); True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
