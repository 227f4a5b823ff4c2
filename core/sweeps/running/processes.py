"""A local sweep's model answers spread over N worker processes of one thread each.

Why: on the 2-core machine two 1-thread processes answered 155-161 questions/s together against
115-121 for one 2-thread process (issue 47): a forward pass on one thread wastes less on
synchronisation than one split over two, and each process's tokenising and decoding (Python,
one core) runs beside the other's forward pass.

How: :func:`pooled_engines` starts the processes (``spawn``: a forked child of a process whose
OpenMP pool already ran can hang), each loading every model of the sweep by its registry name with
the driver's engine settings, the backend that answers in the driver and one thread
(core.qa.threads: a fixed count), and checks that every worker reports the driver's fingerprint.
It hands core.sweeps.running.run the same models as proxies (:class:`PooledModel`) whose ``predict`` cuts
each batched request into one piece per process (at least ``MIN_PIECE`` questions each) and joins
the answers in order. Everything else, plans, caches, keys, transactions, resume and cancel, is
core.sweeps.running.run's, unchanged, and only the driver writes the store, so the rows are the same as
with one process. A worker whose driver dies (SIGKILL included) exits on its own.

How many: :func:`default_processes` is this machine's stored measurement (:func:`calibrate`,
``python -m core.sweeps.running.processes --calibrate``: the same questions answered with one process of
every thread, then with 2..budget processes of one thread each; the fastest is kept if it beats
one process by at least ``MIN_GAIN``), else 1. ``python -m core.sweeps --processes N`` overrides it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import os
import platform
import sys
import threading
import time
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from core.sweeps.config import SweepError

__all__ = ["MIN_PIECE", "PooledModel", "WorkerPool", "calibrate", "default_processes", "machine_key",
           "poolable", "pooled_engines", "stored_measurement"]

MIN_PIECE = 16        # questions per piece at least: smaller pieces cost more in overhead than they save
MIN_GAIN = 1.05       # N processes are chosen only when at least 5% faster than one
_STORE = "sweep_processes.json"


# ------------------------------------------------------------------------------ worker side

def _watch_parent(parent: int) -> None:
    """Exit when the driver is gone (killed: nobody would read this worker's answers)."""
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def _worker(conn, loads: dict[str, tuple[str, dict]], parent: int) -> None:
    """One worker process: load the models, then answer (model, questions, contexts) requests."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    try:
        from core.qa.engine import EngineSettings
        from core.qa.registry import load_engine
        from core.sweeps.keys import engine_fingerprint

        engines = {m: load_engine(name, EngineSettings(**settings)) for m, (name, settings) in loads.items()}
        conn.send(("ready", {m: engine_fingerprint(e) for m, e in engines.items()}))
    except Exception as e:  # the driver raises it as a SweepError
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        model, questions, contexts = request
        try:
            conn.send(("ok", engines[model].predict(questions, contexts, n_best=1, skip_invalid=True)))
        except Exception as e:
            conn.send(("error", f"{type(e).__name__}: {e}"))


# ------------------------------------------------------------------------------ driver side

_MAIN_SWAP = threading.Lock()


@contextlib.contextmanager
def _without_main_script():
    """While a worker starts, ``__main__`` is an empty module. A spawned child re-runs the parent's
    main script when that module names a file; the worker needs nothing from it (its target lives
    here), and the script may be a Streamlit page (AppTest leaves the page as ``__main__``), which
    must not run again in a worker."""
    with _MAIN_SWAP:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main

class WorkerPool:
    """N worker processes, each with every model loaded; :meth:`predict` shares a request out."""

    def __init__(self, loads: Mapping[str, tuple[str, dict]], processes: int):
        if processes < 1:
            raise SweepError(f"processes must be at least 1, got {processes}")
        ctx = multiprocessing.get_context("spawn")
        self.conns, self.procs = [], []
        for _ in range(processes):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(theirs, dict(loads), os.getpid()), daemon=True,
                            name="qax-sweep-worker")
            with _without_main_script():
                p.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(p)
        self.fingerprints = [self._receive(k) for k in range(processes)]   # they load in parallel
        self.answered = [0] * processes   # questions each process answered

    @property
    def size(self) -> int:
        return len(self.procs)

    def _receive(self, k: int):
        try:
            kind, value = self.conns[k].recv()
        except (EOFError, OSError):
            raise SweepError(f"sweep worker process {k + 1} died (exit code {self.procs[k].exitcode})") from None
        if kind == "error":
            raise SweepError(f"sweep worker process {k + 1}: {value}")
        return value

    def predict(self, model: str, questions: Sequence[str], contexts: Sequence[str]) -> list:
        """Every pair's Prediction, in order: one contiguous piece per process."""
        n = len(questions)
        pieces = max(1, min(self.size, n // MIN_PIECE))
        size = -(-n // pieces)
        cuts = [(p * size, min(n, (p + 1) * size)) for p in range(pieces)]
        for k, (a, b) in enumerate(cuts):
            self.conns[k].send((model, list(questions[a:b]), list(contexts[a:b])))
        out: list = []
        error: SweepError | None = None
        for k in range(len(cuts)):   # every answer is read, even after an error: the pipes stay in step
            try:
                answers = self._receive(k)
                out.extend(answers)
                self.answered[k] += len(answers)
            except SweepError as e:
                error = error or e
        if error is not None:
            raise error
        return out

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
        for conn in self.conns:
            conn.close()


class PooledModel:
    """A driver's engine whose answers come from the pool: the same fingerprint and long-context
    tag (the keys), ``predict`` by the worker processes."""

    def __init__(self, name: str, engine: Any, pool: WorkerPool):
        self.name, self.engine, self.pool = name, engine, pool
        self.languages = getattr(engine, "languages", None)

    def fingerprint(self) -> str:
        from core.sweeps.keys import engine_fingerprint

        return engine_fingerprint(self.engine)

    def long_context_tag(self, context: str) -> str:
        tag_of = getattr(self.engine, "long_context_tag", None)
        return tag_of(context) if callable(tag_of) else ""

    def predict(self, questions, contexts, n_best: int = 1, progress=None, skip_invalid: bool = True) -> list:
        if n_best != 1 or not skip_invalid:
            raise ValueError("a pooled model answers as a sweep asks: n_best=1, skip_invalid=True")
        return self.pool.predict(self.name, questions, contexts)


def worker_settings(engine: Any) -> dict:
    """The settings a worker loads ``engine``'s model with: the driver's, the backend that answers
    in the driver (named, not "default": the same fingerprint), one thread."""
    settings = dataclasses.replace(engine.settings, backend=engine.backend_name, threads=1)
    return dict(vars(settings))


def poolable(engines: Mapping[str, Any]) -> bool:
    """Whether worker processes can load every one of ``engines``: each a QAEngine of a model
    the registry knows by that name (a model typed as a folder or hub id answers here)."""
    from core.qa.engine import QAEngine
    from core.qa.registry import get_entry

    try:
        return all(isinstance(e, QAEngine) and get_entry(m) is not None for m, e in engines.items())
    except Exception:   # the registry does not know it (or cannot be read): answer here
        return False


@contextlib.contextmanager
def pooled_engines(engines: Mapping[str, Any], processes: int) -> Iterator[dict[str, Any]]:
    """``engines`` answered by ``processes`` worker processes (see the module doc), while inside;
    SweepError when a model is no registry model or loads with another fingerprint in a worker."""
    from core.qa.engine import QAEngine
    from core.sweeps.keys import engine_fingerprint

    loads = {}
    for model, engine in engines.items():
        if not isinstance(engine, QAEngine):
            raise SweepError(f"model {model!r} cannot run in worker processes (it is not a registry model's "
                             "engine); run with --processes 1")
        loads[model] = (model, worker_settings(engine))
    pool = WorkerPool(loads, processes)
    try:
        for k, reported in enumerate(pool.fingerprints):
            for model, fp in reported.items():
                if fp != engine_fingerprint(engines[model]):
                    raise SweepError(f"model {model!r} answers differently in worker process {k + 1} "
                                     f"(fingerprint {fp} against {engine_fingerprint(engines[model])})")
        yield {m: PooledModel(m, e, pool) for m, e in engines.items()}
    finally:
        pool.close()


# ------------------------------------------------------------------------ how many processes

def machine_key() -> str:
    """What a measurement holds for: the CPU model and the CPUs this process may use."""
    from core.qa.threads import budget

    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model} x{budget()}"


def _store_path() -> Path:
    from core.config import cache_dir

    return cache_dir() / _STORE


def stored_measurement() -> dict | None:
    """This machine's calibration record, or None."""
    try:
        return json.loads(_store_path().read_text()).get(machine_key())
    except (OSError, ValueError, AttributeError):
        return None


def default_processes() -> int:
    """Worker processes a local sweep uses unless told: this machine's measurement, else 1."""
    record = stored_measurement()
    try:
        return max(1, int(record["processes"])) if record else 1
    except (KeyError, TypeError, ValueError):
        return 1


def calibrate(model: str, questions: Sequence[str], contexts: Sequence[str], most: int | None = None,
              rounds: int = 2) -> dict:
    """Time ``model`` answering the same pairs with 1 process of every thread, then with 2..``most``
    (default: the thread budget) processes of one thread each, ``rounds`` rounds in rotated order;
    stores and returns the record: {"processes": chosen, "questions_per_second": {N: best}, ...}."""
    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine
    from core.qa.threads import budget

    most = most or budget()
    engine = load_engine(model, EngineSettings())
    loads = {model: (model, worker_settings(engine))}
    pools = {n: WorkerPool(loads, n) for n in range(2, most + 1)}
    try:
        def alone() -> float:
            t0 = time.perf_counter()
            engine.predict(questions, contexts, n_best=1, skip_invalid=True)
            return time.perf_counter() - t0

        def pooled(n: int) -> float:
            t0 = time.perf_counter()
            pools[n].predict(model, questions, contexts)
            return time.perf_counter() - t0

        runs = {1: alone, **{n: (lambda n=n: pooled(n)) for n in pools}}
        # warm-up: first-call allocations are no one's speed
        engine.predict(questions[:8], contexts[:8], n_best=1, skip_invalid=True)
        for n in pools:
            pools[n].predict(model, questions[:8 * n], contexts[:8 * n])
        best = {n: float("inf") for n in runs}
        load = os.getloadavg()[0]
        order = list(runs)
        for r in range(rounds):
            for n in order[r % len(order):] + order[: r % len(order)]:
                best[n] = min(best[n], runs[n]())
    finally:
        for pool in pools.values():
            pool.close()
    qps = {n: len(questions) / s for n, s in best.items()}
    fastest = max(qps, key=qps.get)
    chosen = fastest if qps[fastest] >= MIN_GAIN * qps[1] else 1
    record = {"processes": chosen, "questions_per_second": {str(n): round(q, 2) for n, q in qps.items()},
              "model": model, "questions": len(questions), "backend": engine.backend_name,
              "load_average": round(load, 2), "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = _store_path()
    try:
        every = json.loads(path.read_text())
    except (OSError, ValueError):
        every = {}
    every[machine_key()] = record
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(every, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    from core import cli
    from core.budgets import MAX_QUESTIONS

    @cli.command("python -m core.sweeps.running.processes")
    def run(args_list: list[str]) -> int:
        from core.datasets import load_dataset

        ap = cli.ArgumentParser(prog="python -m core.sweeps.running.processes",
                                description="How many worker processes a local sweep uses on this machine.")
        ap.add_argument("--calibrate", action="store_true", help="measure and store the choice for this machine")
        ap.add_argument("--model", default="minilm-squad-v2")
        ap.add_input("--dataset", default="xquad/xquad.en", paths=cli.dataset_files())
        ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=200, help="questions timed")
        args = ap.parse_args(args_list)
        if args.calibrate:
            from core.qa import registry

            registry.get_entry(args.model)
            ex = load_dataset(args.dataset).examples[: args.n]
            if not ex:
                raise SystemExit(f"{args.dataset} has no questions")
            record = calibrate(args.model, [e.question for e in ex], [e.context for e in ex])
            print(json.dumps(record, indent=2))
        print(f"{machine_key()}: {default_processes()} worker process(es) "
              + ("(measured)" if stored_measurement() else "(no measurement stored: the default)"))
        return 0

    return run(argv)


if __name__ == "__main__":
    # Run as a script this file is ``__main__``, whose ``_worker`` a spawned child cannot find
    # (core.sweeps.running.processes is what it imports): call the module's own main.
    from core.sweeps.running import processes

    sys.exit(processes.main())
