"""A sweep running on a background thread, so a page can poll its progress and cancel it.

:class:`SweepJob` runs :func:`core.sweeps.running.lifecycle.launch` (the lifecycle the command line shares:
local or Ray, the stored backend on resume, the aggregates at the end): ``start()`` runs it on a daemon thread;
``done`` / ``total`` follow its progress callback (result rows committed so far / in the complete
sweep); ``cancel()`` sets the event run_sweep checks between chunks, so the sweep stops after the
chunk in flight with status 'cancelled' (everything committed is kept; running the same
configuration again resumes). ``result`` is the :class:`core.sweeps.config.SweepRun`, or ``error`` the
message of whatever run_sweep raised (a SweepError names the problem).

The thread opens its own database connection (run_sweep is given the path, not a Store), so the
page's reads never share a connection with the writer; SQLite's WAL mode lets them run together.
``ray=RayOptions(...)`` runs the sweep on Ray instead (core.sweeps.running.ray: the models load in its
actors, so ``engines`` is empty); ``workers`` then holds each worker's state (node, calls,
restarts) as the driver reports it, for the page to show.

A started job is known to this process by its database and sweep name while it runs
(:func:`running_on_this_server`): a page reloaded in the browser is a new session that has lost its
job, and finds it there again (:meth:`SweepJob.follow` adds that session to the job's owners).

Ray's lifecycle: a local Ray that this process's jobs started (none was running when the first
of them began) is stopped, with every process it started, when the last Ray job ends, so no idle
Ray worker or agent is left listening (docs/SECURITY.md, "Ray"). A Ray started otherwise (a test's,
a cluster at QAX_RAY_ADDRESS) is left alone.

Budgets (core.budgets): ``start()`` refuses a job (BudgetError) when it asks for more Ray workers
than QAX_MAX_RAY_WORKERS (each holds one copy of every model), when the server already runs
QAX_MAX_SWEEPS jobs, or its owner session QAX_MAX_SWEEPS_PER_SESSION. A job started by a browser
session is cancelled QAX_SWEEP_GRACE_S seconds after none of its owner sessions has a browser any
more (:func:`reap_abandoned`, called by the page's watchdog with Streamlit's session check); its
committed rows stay, and starting it again resumes it. Jobs without an owner (the CLI's, tests')
are never reaped.

No streamlit import.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.budgets import MAX_RAY_WORKERS, MAX_SWEEPS, MAX_SWEEPS_PER_SESSION, SWEEP_GRACE_S
from core.datasets import Dataset
from core.sweeps.config import SweepConfig, SweepRun
from core.sweeps.running.lifecycle import RayOptions, launch

__all__ = ["SweepJob", "RayOptions", "running_on_this_server", "running_jobs", "reap_abandoned"]

_RUNNING: dict[tuple[str, str], "SweepJob"] = {}   # (database, sweep name) -> the job running it here
_RUNNING_LOCK = threading.Lock()
_JOBS: set["SweepJob"] = set()   # every job started and not yet ended in this process
_RAY_STARTED_BY_JOBS = False     # the local Ray was started by a job here: the last Ray job stops it


def _db_key(db: str | Path) -> str:
    return str(Path(db).resolve())


def running_on_this_server(db: str | Path, name: str) -> "SweepJob | None":
    """The job of this process that is running the sweep ``name`` of ``db``, or None."""
    with _RUNNING_LOCK:
        job = _RUNNING.get((_db_key(db), name))
    return job if job is not None and job.running else None


def running_jobs() -> list["SweepJob"]:
    """The jobs of this process that are running now."""
    with _RUNNING_LOCK:
        return [j for j in _JOBS if j.running]


def reap_abandoned(now: float, is_active: Callable[[str], bool], grace: float | None = None) -> list["SweepJob"]:
    """Cancel the running jobs none of whose owner sessions has been active (``is_active``) for
    ``grace`` seconds (default QAX_SWEEP_GRACE_S); returns them. Call it periodically with a
    monotonic ``now``. Jobs without an owner are left alone."""
    grace = float(SWEEP_GRACE_S.value()) if grace is None else grace
    cancelled = []
    for job in running_jobs():
        if not job.owners or job.cancel_requested:
            continue
        if any(is_active(o) for o in list(job.owners)):
            job.abandoned_since = None
            continue
        if job.abandoned_since is None:
            job.abandoned_since = now
        if now - job.abandoned_since >= grace:
            job.cancel_reason = (f"no browser followed it for {grace:.0f} s (the server's {SWEEP_GRACE_S.env}): "
                                 "it was cancelled; its rows are kept and starting it again resumes it")
            job.cancel()
            cancelled.append(job)
    return cancelled


def _stop_ray_after_last_job() -> None:
    """Stop the local Ray this process's jobs started once no Ray job is left (called with
    _RUNNING_LOCK held, so no job can start on it meanwhile)."""
    global _RAY_STARTED_BY_JOBS
    if not _RAY_STARTED_BY_JOBS or any(j.ray is not None for j in _JOBS):
        return
    from core.sweeps.running.ray_cluster import connected_to, disconnect

    if connected_to() == "local":
        disconnect()
    _RAY_STARTED_BY_JOBS = False


class SweepJob:
    """One sweep launched (core.sweeps.running.lifecycle.launch) on a background thread (see module doc)."""

    def __init__(self, config: SweepConfig, engines: Mapping[str, Any], db: str | Path, *,
                 dataset: Dataset | None = None, data_dir: str | Path | None = None, chunk_size: int = 128,
                 ray: RayOptions | None = None, stored: Mapping[str, str] | None = None,
                 load_as: Callable[[str, str], Any] | None = None, owner: str | None = None,
                 processes: int | None = None):
        self.config = config
        self.owners: set[str] = {owner} if owner else set()   # browser sessions following it
        self.abandoned_since: float | None = None   # when its last owner session went (reap_abandoned)
        self.cancel_reason: str | None = None
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
        if processes is None and ray is None:   # the measured default (core.sweeps.running.processes)
            from core.sweeps.running.processes import default_processes

            processes = default_processes()
        self._kwargs = dict(dataset=dataset, data_dir=data_dir, chunk_size=chunk_size, processes=processes or 1)
        self._engines = dict(engines)
        self._resume = dict(stored=stored, load_as=load_as)   # launch's step 2 (core.sweeps.running.lifecycle)
        self.ray = ray
        self.workers: list = []   # core.sweeps.running.ray.WorkerState per worker (Ray sweeps)
        self.switched: dict[str, str] = {}   # model -> the stored backend it switched to (a resume)
        self._thread = threading.Thread(target=self._run, name=f"sweep-{config.name or config.dataset}",
                                        daemon=True)

    def start(self) -> "SweepJob":
        """Start the sweep's thread; BudgetError (nothing started) when the server, or this job's
        owner session, already runs as many sweeps as its budget allows."""
        if self.started_at is not None:
            raise RuntimeError("this sweep job was already started")
        if self.ray is not None and self.ray.workers is not None:
            MAX_RAY_WORKERS.check(self.ray.workers, "this Ray sweep", "asks for")
        with _RUNNING_LOCK:
            running = [j for j in _JOBS if j.running]
            MAX_SWEEPS.check(len(running) + 1, "with this one, the server", "would run")
            for owner in self.owners:
                mine = sum(owner in j.owners for j in running)
                MAX_SWEEPS_PER_SESSION.check(mine + 1, "with this one, your session", "would run")
            self.started_at = time.monotonic()
            _JOBS.add(self)
        self._thread.start()
        return self

    def follow(self, owner: str | None) -> None:
        """Another browser session (a reloaded page) follows this job: it keeps it alive."""
        if owner:
            self.owners.add(owner)
            self.abandoned_since = None

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
            if self.ray is not None and self.ray.address is None:
                from core.sweeps.running.ray_cluster import connected_to

                if connected_to() is None:
                    global _RAY_STARTED_BY_JOBS
                    _RAY_STARTED_BY_JOBS = True
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
                _JOBS.discard(self)
                if self.name is not None and _RUNNING.get((_db_key(self.db), self.name)) is self:
                    del _RUNNING[(_db_key(self.db), self.name)]
                if self.ray is not None:
                    _stop_ray_after_last_job()

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
