"""Running a sweep in this process: :func:`run_sweep`, and :func:`execute_plan` that every backend uses.

A sweep is identified by its name (default ``<dataset>-<config hash>``): the same configuration
resumes, a different configuration under an existing name is an error. Every result lands in one
SQLite file (:mod:`core.sweeps.store`); the work is done by :class:`core.sweeps.running.runner.Runner` in
chunks, each committed in one transaction, so a killed sweep resumes where it stopped.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.datasets import Dataset
from core.qa.protocol import QAModel
from core.sweeps.config import DEFAULT_DB, ProgressFn, SweepConfig, SweepError, SweepRun
from core.sweeps.keys import answers_json, engine_fingerprint
from core.sweeps.running.plan import SweepPlan, plan_sweep, resolve_inputs
from core.sweeps.running.resolve import ResolvedSpec
from core.sweeps.running.runner import ComputeVariants, Predict, Runner, compute_locally, context_tagger, drive, now
from core.sweeps.store import Store, text_hash
from core.types import QAExample

__all__ = ["run_sweep", "execute_plan"]


# (database, sweep name) of every sweep a thread of this process drives now; the store's owner
# columns tell processes apart, this tells threads apart
_DRIVING: set[tuple[str, str]] = set()
_DRIVING_LOCK = threading.Lock()


def _open_store(db: str | Path | Store) -> tuple[Store, bool]:
    return (db, False) if isinstance(db, Store) else (Store(db), True)


def execute_plan(plan: SweepPlan, db: str | Path | Store, run_chunks: Callable[[Runner], bool], *,
                 t0: float, progress: ProgressFn | None = None,
                 on_start: Callable[[SweepRun], None] | None = None,
                 taggers: Mapping[str, Callable[[str], str] | None] | None = None) -> SweepRun:
    """Create or resume the planned sweep in ``db`` and let ``run_chunks(runner)`` do its chunks
    (True when all were done, False when cancelled); records the final status either way."""
    inputs = plan.inputs
    store, owned = _open_store(db)
    driving = (str(Path(store.path).resolve()) if str(store.path) != ":memory:" else f":memory:{id(store)}",
               plan.name)
    with _DRIVING_LOCK:
        if driving in _DRIVING:   # another thread of this process (a second browser session, a tab)
            if owned:
                store.close()
            raise SweepError(f"sweep {plan.name!r} is already running on this server (another browser tab or "
                             "session); follow it on the Sweeps page, or cancel it there and run this again "
                             "to resume")
        _DRIVING.add(driving)
    try:
        sweep_id = _create_or_resume(store, plan.name, plan.cfg_hash, plan.cfg_json, inputs.config.dataset,
                                     inputs.examples, plan.hashes, inputs.specs, inputs.models,
                                     plan.fingerprints, plan.total)
        already = store.done_units(sweep_id)
        run = SweepRun(sweep_id, plan.name, "running", plan.total, already, already)
        runner = Runner(store, sweep_id, inputs.examples, inputs.specs, plan.fingerprints,
                         inputs.config.seed, run, progress, taggers)
        if on_start is not None:
            on_start(run)
        runner.tick()
        try:
            finished = run_chunks(runner)
        except BaseException as e:
            status = "cancelled" if isinstance(e, KeyboardInterrupt) else "failed"
            store.set_status(sweep_id, status, f"{type(e).__name__}: {e}"[:500], now())
            raise
        run.status = "done" if finished else "cancelled"
        store.set_status(sweep_id, run.status, None, now())
        run.done_units = store.done_units(sweep_id)
        run.elapsed_s = time.perf_counter() - t0
        return run
    finally:
        with _DRIVING_LOCK:
            _DRIVING.discard(driving)
        if owned:
            store.close()


def run_sweep(config: SweepConfig, engines: Mapping[str, QAModel], db: str | Path | Store = DEFAULT_DB, *,
              dataset: Dataset | None = None, data_dir: str | Path | None = None,
              progress: ProgressFn | None = None, cancel: threading.Event | None = None,
              chunk_size: int = 256, catalogue: Callable[[str], Any] | None = None,
              on_start: Callable[[SweepRun], None] | None = None) -> SweepRun:
    """Run (or resume, or finish) a sweep; every result lands in the database ``db``.

    ``engines``: {model name: QAModel (core.qa.protocol)} for every name in ``config.models``. ``dataset``: an already
    loaded data set (else :func:`load_dataset` resolves ``config.dataset``). ``progress(done,
    total)`` is called after each committed chunk, counting result rows (clean + perturbed, all
    models); ``cancel`` is checked between chunks: when set the sweep stops with status
    'cancelled' and a later call resumes it. ``catalogue``: id -> Perturbation (default: the
    perturbation registry). ``on_start(run)`` is called once, before the first chunk, with the
    sweep's resolved name and totals (a caller that left the name to the default learns it).

    The sweep is identified by ``config.name`` (default: ``<dataset>-<config hash>``): the same
    configuration resumes; a different configuration under an existing name is an error.
    """
    t0 = time.perf_counter()
    if chunk_size < 1:
        raise SweepError(f"chunk_size must be at least 1, got {chunk_size}")
    if config.repeats < 1:
        raise SweepError(f"repeats must be at least 1, got {config.repeats}")
    models = list(dict.fromkeys(config.models))
    if not models:
        raise SweepError("no models given")
    absent = [m for m in models if m not in engines]
    if absent:
        raise SweepError(f"no engine for model(s) {absent}; engines given: {sorted(engines)}")
    engines = {m: engines[m] for m in models}
    inputs = resolve_inputs(config, dataset=dataset, data_dir=data_dir, catalogue=catalogue)
    plan = plan_sweep(inputs, {m: engine_fingerprint(engines[m]) for m in models})

    def serve(request: ComputeVariants | Predict) -> list:
        if isinstance(request, Predict):
            return engines[request.model].predict(request.questions, request.contexts, n_best=1,
                                                  skip_invalid=True)
        return [compute_locally(u, config.seed) for u in request.units]

    def run_chunks(runner: Runner) -> bool:
        for steps in runner.chunks(chunk_size):
            if cancel is not None and cancel.is_set():
                steps.close()
                return False
            drive(steps, serve)
        return True

    return execute_plan(plan, db, run_chunks, t0=t0, progress=progress, on_start=on_start,
                        taggers={m: context_tagger(engines[m]) for m in models})


def config_differences(stored_json: str, new_json: str) -> list[str]:
    """What differs between a stored sweep's configuration and a new one, in words.

    >>> old = '{"seed": 1, "models": [["m", "fp-1"]], "specs": [["TUQ", "{}", 1, ""]]}'
    >>> config_differences(old, '{"seed": 2, "models": [["m", "fp-2"]], "specs": [["TUQ", "{}", 1, ""]]}')
    ... # doctest: +NORMALIZE_WHITESPACE
    ['differ: seed (stored 1, now 2)', 'model m answers differently than when the sweep was made (the weights,
    or the engine settings that change answers: max answer length, window, backend)']
    """
    try:
        old, new = json.loads(stored_json), json.loads(new_json)
    except (TypeError, ValueError):
        return ["data, sample, seed, repeats, perturbations or model weights differ"]
    out = []
    plain = [k for k in sorted(set(old) | set(new)) if k not in ("models", "specs") and old.get(k) != new.get(k)]
    if plain:
        out.append("differ: " + ", ".join(
            f"{k} (stored {old.get(k)}, now {new.get(k)})" if k in ("sample", "seed", "repeats", "n_examples",
                                                                  "dataset", "pair_by", "on_ambiguous", "lang")
            else k for k in plain))
    if old.get("specs") != new.get("specs"):
        out.append("the perturbations differ")
    old_models, new_models = dict(map(tuple, old.get("models", []))), dict(map(tuple, new.get("models", [])))
    if list(old_models) != list(new_models):
        out.append(f"the models differ (stored {', '.join(old_models)}; now {', '.join(new_models)})")
    changed = [m for m in new_models if m in old_models and old_models[m] != new_models[m]]
    if changed:
        out.append(f"{'model' if len(changed) == 1 else 'models'} {', '.join(changed)} "
                   f"{'answers' if len(changed) == 1 else 'answer'} differently than when the sweep was made "
                   "(the weights, or the engine settings that change answers: max answer length, window, backend)")
    return out or ["data, sample, seed, repeats, perturbations or model weights differ"]


def _create_or_resume(store: Store, name: str, cfg_hash: str, cfg_json: str, dataset: str,
                      examples: list[QAExample], hashes: list[str], specs: list[ResolvedSpec],
                      models: list[str], fingerprints: dict[str, str], total: int) -> int:
    existing = store.sweep_by_name(name)
    if existing is not None:
        if existing["config_hash"] != cfg_hash:
            raise SweepError(
                f"a sweep named {name!r} already exists with a different configuration ("
                + "; ".join(config_differences(existing["config_json"], cfg_json)) + "); choose another "
                "name, or drop the name to get one derived from the configuration")
        sweep_id = int(existing["id"])
        # checked and claimed in one write transaction, so two starts cannot both pass: two drivers
        # of one sweep would each answer every unit they both planned
        with store.transaction():
            owner = store.running_elsewhere(sweep_id)
            if owner is not None:
                raise SweepError(f"sweep {name!r} is already running ({owner}); wait for it to finish, or stop "
                                 "it (Ctrl-C, or Cancel on the Sweeps page) and run this again to resume")
            store.write_status(sweep_id, "running", None, now())
        return sweep_id
    started = now()
    with store.transaction():
        store.insert_many("contexts", [{"hash": h, "text": t} for h, t in
                                       {text_hash(ex.context): ex.context for ex in examples}.items()])
        store.insert_many("examples", [
            {"hash": h, "id": ex.id, "title": ex.title, "lang": ex.lang, "question": ex.question,
             "context_hash": text_hash(ex.context), "answers_json": answers_json(ex.answers)}
            for ex, h in zip(examples, hashes)])
        sweep_id = store.insert_sweep(name, cfg_hash, cfg_json, dataset, len(examples), total, started)
        store.insert_many("sweep_examples", [{"sweep_id": sweep_id, "example_hash": h, "position": i}
                                             for i, h in enumerate(hashes)])
        store.insert_many("sweep_models", [{"sweep_id": sweep_id, "model": m, "fingerprint": fingerprints[m],
                                            "position": i} for i, m in enumerate(models)])
        store.insert_many("sweep_specs", [
            {"sweep_id": sweep_id, "perturbation": s.id, "params_json": s.params_json, "label": s.label,
             "family": s.family, "field": s.field, "randomised": int(s.randomised), "repeats": s.repeats,
             "source": s.source, "position": i} for i, s in enumerate(specs)])
    return sweep_id
