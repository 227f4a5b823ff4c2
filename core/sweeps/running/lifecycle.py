"""One sweep's lifecycle, written once for every caller: the command line (``core.sweeps.cli``),
the Sweeps page and the speech trial (both through :class:`core.sweeps.running.job.SweepJob`).

:func:`launch` does, in order:

1. **where**: in this process with the ``engines`` given, or on Ray (:class:`RayOptions`; its
   actors load the models by name, so ``engines`` is empty);
2. **resume with the stored backend**: a resumed sweep's models answer with the engine backend
   the sweep was made with (``stored``: its {model: fingerprint},
   :func:`core.sweeps.running.backends.stored_fingerprints`). Here ``load_as(model, backend)`` replaces
   each engine whose fingerprint differs (:func:`core.sweeps.running.backends.engines_as_stored`); on Ray
   the actors switch. ``on_switched({model: backend})`` hears which models switched;
3. **run** it (:func:`core.sweeps.running.run.run_sweep` or :func:`core.sweeps.running.ray.run_sweep_ray`), with
   the caller's progress, cancel, start and worker callbacks;
4. **store the aggregates** of a finished sweep (:func:`core.sweeps.analysis.aggregates.store`), so that
   Heatmaps opens it at once; ``on_phase("aggregates")`` says this step has begun.

A cancelled or failed sweep keeps everything committed; launching the same configuration again
resumes it.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.datasets import Dataset
from core.sweeps.config import ProgressFn, SweepConfig, SweepRun

__all__ = ["RayOptions", "launch"]


@dataclass
class RayOptions:
    """Where a Ray sweep runs: ``address`` None starts (or reuses) a local Ray in this process."""

    address: str | None = None
    workers: int | None = None
    settings: Any = None          # core.qa.engine.EngineSettings for the actors' engines
    stored: Mapping[str, str] | None = None   # a resumed sweep's {model: fingerprint}: its backends


def launch(config: SweepConfig, db: str | Path, *, engines: Mapping[str, Any] | None = None,
           ray: RayOptions | None = None, stored: Mapping[str, str] | None = None,
           load_as: Callable[[str, str], Any] | None = None,
           dataset: Dataset | None = None, data_dir: str | Path | None = None, chunk_size: int | None = None,
           progress: ProgressFn | None = None, cancel: threading.Event | None = None,
           on_start: Callable[[SweepRun], None] | None = None, on_workers: Callable[[list], None] | None = None,
           on_switched: Callable[[dict[str, str]], None] | None = None,
           on_phase: Callable[[str], None] | None = None,
           shutdown: bool = False, outlive_cluster: bool = False, processes: int = 1) -> SweepRun:
    """Run (or resume) ``config`` into the sweep store ``db``: the four steps of the module doc.

    ``ray`` None runs here with ``engines``; ``stored`` (or ``ray.stored``) resumes each model with
    its stored backend, loaded here by ``load_as`` (without it the engines stay as given).
    ``chunk_size`` None keeps the runner's default. ``shutdown``, ``outlive_cluster``: Ray only
    (core.sweeps.running.ray.run_sweep_ray). ``processes`` > 1: a local sweep's models answer in that many
    worker processes of one thread (core.sweeps.running.processes; the same rows), when every model is a
    registry model's engine (else here). Raises what the run raises (a SweepError names bad input).
    """
    sizing = {} if chunk_size is None else {"chunk_size": chunk_size}
    if ray is not None:
        from core.sweeps.running.ray import run_sweep_ray

        run = run_sweep_ray(config, db, settings=ray.settings, address=ray.address, workers=ray.workers,
                            dataset=dataset, data_dir=data_dir, progress=progress, cancel=cancel,
                            on_start=on_start, on_workers=on_workers,
                            stored=stored if stored is not None else ray.stored, on_switched=on_switched,
                            shutdown=shutdown, outlive_cluster=outlive_cluster, **sizing)
    else:
        from core.sweeps.running.run import run_sweep

        engines = dict(engines or {})
        if stored and load_as is not None:
            from core.sweeps.running.backends import engines_as_stored

            engines, switched = engines_as_stored(engines, stored, load_as)
            if switched and on_switched is not None:
                on_switched(switched)
        from core.sweeps.running.processes import poolable, pooled_engines

        with pooled_engines(engines, processes) if processes > 1 and poolable(engines) \
                else _as_given(engines) as answering:
            run = run_sweep(config, answering, db, dataset=dataset, data_dir=data_dir, progress=progress,
                            cancel=cancel, on_start=on_start, **sizing)
    if run.status == "done":   # Heatmaps then opens it from its stored aggregates
        from core.sweeps.analysis import aggregates

        if on_phase is not None:
            on_phase("aggregates")
        aggregates.store(db, run.sweep_id)
    return run


@contextlib.contextmanager
def _as_given(engines):
    yield engines
