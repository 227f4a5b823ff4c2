"""Sweeps on a Ray cluster: the same sweep as core.sweeps, its work spread over Ray workers.

``python -m core.sweeps ... --backend ray [--address ADDRESS] [--workers N]`` (or
:func:`run_sweep_ray`). Without an address a local Ray starts in this process with the machine's
CPUs; with one (``ray start --head`` printed it, or ``auto``) the sweep joins that cluster.

What runs where
  * The driver (this process) plans exactly as the local backend does (core.sweeps's
    ``resolve_inputs``, ``plan_sweep``, ``execute_plan`` and the chunk steps of ``Runner``): the
    same units, RNG per unit, cache keys and rows. It skips every unit already in the store,
    looks up both caches, and is the only process that writes the SQLite store: each chunk's
    variants, predictions and results in one transaction as its answers arrive. A killed driver
    loses at most its chunks in flight; the same command resumes.
  * Perturbations run as Ray tasks (:func:`_perturb`), a chunk's units split into
    TASKS_PER_WORKER tasks per worker, so that a worker done early takes the next task and slow
    units (TTS -> ASR, MT) end together on every worker; a sweep smaller than
    CHUNKS_PER_WORKER x workers chunks is cut into that many (Runner.chunks' ``min_chunks``), so
    one chunk's answers overlap the next chunk's perturbations. A task resolves each spec
    again from the registry and refuses to run when its resolved parameters or variant keys
    differ from the driver's (a node with other code).
    ``file:`` specs are a lookup in a file only the driver reads, so the driver does them.
  * Models run in actors (:class:`ModelActor`): one per model per worker, each loading its model
    once. A worker is a lane of work: its actors answer the Predict requests sent to it, and
    ``workers`` also bounds the perturbation tasks running at once (each asks for the cluster's
    CPUs divided by the workers). Actors ask for no CPU (they are placed by node affinity,
    worker i on the i-th CPU slot of the cluster, so two workers on a 2-CPU node share it and a
    second node gets its share), and for a share of the GPUs when the cluster has any (the
    engine then runs on CUDA with its GPU batch size). Every actor reports its model
    fingerprint; one that differs from the others (other weights on its node) stops the sweep.
    Resuming a stored sweep, each actor answers with the engine backend the sweep was made with
    (``stored``, core.sweeps.running.backends), as the local backend does.
  * A dead actor (killed, its node lost) is replaced on the same node by a new one, which must
    report the same fingerprint, and its request is sent again; Ray itself retries tasks whose
    worker died. Several chunks are in flight at once (2 per worker) so workers do not wait for
    the driver's writes.

What a node needs: the project at the same path as on the driver (the driver puts its checkout
on every worker's PYTHONPATH), the same virtual environment (Ray, torch, the models' packages),
the same ``models.toml`` and model folders and the perturbations' resources (voices, spaCy
models). The QAX_* and HF_* environment variables of the driver are passed to every worker
(QAX_MODELS_TOML, QAX_CACHE_DIR, ...). See docs/RAY.md.
"""
from __future__ import annotations

import gc
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.datasets import Dataset
from core.perturb.spec import PerturbationSpec
from core.sweeps.config import ProgressFn, SweepConfig, SweepError, SweepRun
from core.sweeps.running.plan import plan_sweep, resolve_inputs
from core.sweeps.running.ray_cluster import connect, disconnect
from core.sweeps.running.resolve import resolve_spec
from core.sweeps.running.run import execute_plan
from core.sweeps.running.runner import ComputeVariants, Predict, Runner, Unit, compute_locally
from core.sweeps.store import Store

__all__ = ["WorkerState", "run_sweep_ray", "ModelActor"]

CHUNKS_PER_WORKER = 2                 # chunks in flight per worker
TASKS_PER_WORKER = 2                  # perturbation tasks a chunk's units are split into, per worker

WorkersFn = Callable[[list["WorkerState"]], None]


@dataclass
class WorkerState:
    """One worker as the driver sees it (the Sweeps page shows these)."""

    index: int
    node: str = ""             # host name (and Ray node id prefix) its actors run on
    state: str = "starting"    # starting | idle | busy | restarting | stopped
    calls: int = 0             # Predict requests (pieces) it answered
    predictions: int = 0       # (question, context) pairs it answered
    restarts: int = 0          # actors replaced after dying
    actors: dict[str, str] = field(default_factory=dict)   # model -> actor name (ray.get_actor)
    in_flight: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------------ remote code


# Specs resolved in a worker process, by (id, params, repeats): resolving loads resources once.
_resolved: dict[tuple, Any] = {}


def _perturb(spec_table: Sequence[tuple[PerturbationSpec, int, str]], items: Sequence[tuple], seed: int) -> list:
    """Body of the perturbation task: each item (spec index, example, example hash, repeat,
    variant key) -> its Outcome, computed with the unit's own RNG exactly as the driver would."""
    from core.perturb import registry

    out = []
    for index, example, ex_hash, repeat, key in items:
        spec, repeats, params_json = spec_table[index]
        cache_key = (spec.id, spec.params, repeats)
        if cache_key not in _resolved:
            _resolved[cache_key] = resolve_spec(spec, repeats, registry.get, None)
        resolved = _resolved[cache_key]
        unit = Unit(resolved, repeat, example, ex_hash, resolved.variant_key(ex_hash, seed, repeat))
        if resolved.params_json != params_json or unit.variant_key != key:
            raise SweepError(f"worker {socket.gethostname()} resolves {spec} differently from the driver "
                             f"(parameters {resolved.params_json} against {params_json}): its code or "
                             "resources differ; install the same project version on every node")
        out.append(compute_locally(unit, seed))
    return out


def _warm(spec_table: Sequence[tuple[PerturbationSpec, int, str]]) -> str:
    """Import the perturbation code and resolve the sweep's specs in a task worker process before
    the sweep starts (Ray reuses its task workers), so the sweep's own time is the steady state."""
    from core.perturb import registry

    for spec, repeats, _ in spec_table:
        key = (spec.id, spec.params, repeats)
        if key not in _resolved:
            _resolved[key] = resolve_spec(spec, repeats, registry.get, None)
    return socket.gethostname()


@dataclass(frozen=True)
class LongContextTagger:
    """QAEngine.long_context_tag for the driver, from what an actor reported: a context of at
    least ``long_from`` characters is read with the long window shape, ``tag``."""

    long_from: int | None
    tag: str

    def __call__(self, context: str) -> str:
        return self.tag if self.long_from is not None and self.tag and len(context) >= self.long_from else ""


class ModelActor:
    """One model loaded once in a Ray worker process; answers Predict requests."""

    def __init__(self, model: str, settings: dict[str, Any], threads: int, stored: str | None = None,
                 sharers: int = 1):
        """``stored``: the fingerprint a resumed sweep stored for this model; the engine then
        answers with the backend that gives it (core.sweeps.running.backends), whatever ``settings`` say.
        ``sharers``: how many actors send this model's requests (one per worker). A generative
        reader behind a server is one server for all of them: each actor keeps its share of the
        requests models.toml allows in flight (``max_concurrent // sharers``, at least one), so the
        workers together stay near that budget instead of multiplying it."""
        import copy
        import dataclasses

        from core.qa.engine import EngineSettings
        from core.qa.registry import load_engine
        from core.sweeps.keys import engine_fingerprint
        from core.sweeps.running.backends import engines_as_stored

        s = EngineSettings(**settings)
        s.threads = threads
        engine = load_engine(model, s)
        engines, switched = engines_as_stored(
            {model: engine}, {model: stored} if stored else {},
            lambda m, backend: load_engine(m, dataclasses.replace(s, backend=backend)))
        self.engine, self.switched = engines[model], switched.get(model)
        self.fingerprint = engine_fingerprint(self.engine)
        runtime = getattr(self.engine, "runtime", None)
        if runtime is not None and getattr(runtime, "shared", False):
            # copies: the loaded engine is the process's cached one, which others may hold whole
            runtime = copy.copy(runtime)
            runtime.concurrency = max(1, runtime.concurrency // max(1, sharers))
            self.engine = copy.copy(self.engine)
            self.engine.runtime = runtime

    def info(self) -> dict[str, Any]:
        import ray

        e = self.engine
        long_shape = getattr(e, "_window_shape", None)
        return {"fingerprint": self.fingerprint, "switched": self.switched,
                "host": socket.gethostname(), "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(), "device": str(e.device),
                # what the driver needs to key long contexts as QAEngine.long_context_tag does
                "long_from": getattr(e.settings, "long_context_chars", None),
                "long_tag": "long={}:{}".format(*long_shape(long=True)) if callable(long_shape) else ""}

    def predict(self, questions: list[str], contexts: list[str]) -> list:
        return self.engine.predict(questions, contexts, n_best=1, skip_invalid=True)


# ----------------------------------------------------------------------------------------- driver


@dataclass
class _Request:
    """A chunk's request in flight: its pieces (futures) and their answers."""

    steps: Any
    kind: str                      # variants | predict
    n_pieces: int
    answers: dict[int, list] = field(default_factory=dict)
    local: list = field(default_factory=list)   # variants: (position, outcome) computed here
    positions: list[list[int]] = field(default_factory=list)   # variants: unit positions per piece
    size: int = 0


class _Driver:
    """Serves the chunk steps of core.sweeps's Runner on Ray (see the module doc)."""

    def __init__(self, ray, runner: Runner, models: list[str], settings: dict[str, Any], workers: int,
                 seed: int, on_workers: WorkersFn | None, stored: Mapping[str, str] | None = None):
        self.ray, self.runner, self.models, self.settings = ray, runner, models, settings
        self.stored = dict(stored or {})   # a resumed sweep's {model: fingerprint}
        self.switched: dict[str, str] = {}   # model -> the backend its actors switched to
        self.workers, self.seed, self.on_workers = workers, seed, on_workers
        self.tag = uuid.uuid4().hex[:8]
        self.states = [WorkerState(i) for i in range(workers)]
        self.actors: list[dict[str, Any]] = [{} for _ in range(workers)]
        self.futures: dict[Any, tuple[_Request, int, Any]] = {}   # future -> (request, piece, resubmit)
        self._plan_resources()

    # ---------------------------------------------------------------------------- placement

    def _plan_resources(self) -> None:
        ray = self.ray
        nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: n["NodeID"])
        slots = [n for n in nodes for _ in range(max(1, int(n["Resources"].get("CPU", 0))))]
        if not slots:
            raise SweepError("the Ray cluster has no live node")
        self.node_of = [slots[i % len(slots)] for i in range(self.workers)]
        self.threads = []
        for node in self.node_of:
            sharing = sum(1 for n in self.node_of if n["NodeID"] == node["NodeID"])
            self.threads.append(max(1, int(node["Resources"].get("CPU", 1)) // sharing))
        total = ray.cluster_resources()
        gpus = float(total.get("GPU", 0))
        self.gpus_per_actor = gpus / (self.workers * len(self.models)) if gpus else 0.0
        most = max(float(n["Resources"].get("CPU", 0)) for n in nodes)
        self.task_cpus = max(0.01, min(most, float(total.get("CPU", 1)) / self.workers))

    def _new_actor(self, w: int, model: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        name = f"qax-{self.tag}-w{w}-{model}-{self.states[w].restarts}"
        if self.states[w].restarts:   # a replacement: its node may be the one that was lost
            alive = {n["NodeID"]: n for n in self.ray.nodes() if n.get("Alive")}
            if self.node_of[w]["NodeID"] not in alive and alive:
                self.node_of[w] = sorted(alive.values(), key=lambda n: n["NodeID"])[w % len(alive)]
        # hard affinity: a soft one let Ray put every 0-CPU actor on the first node
        actor = self.ray.remote(ModelActor).options(
            name=name, num_cpus=0, num_gpus=self.gpus_per_actor, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(self.node_of[w]["NodeID"], soft=False),
        ).remote(model, self.settings, self.threads[w], self.stored.get(model), self.workers)
        self.states[w].actors[model] = name
        return actor

    def start(self, specs: list) -> dict[str, str]:
        """Start every actor (and warm the task workers) and wait for them; returns the models'
        fingerprints."""
        self.spec_table = self.ray.put([(PerturbationSpec.make(s.id, s.params), s.repeats, s.params_json)
                                        for s in specs if not s.key_salt])
        self.spec_index = {(s.id, s.params_json): i for i, s in enumerate(s for s in specs if not s.key_salt)}
        pending = {}
        for w in range(self.workers):
            for m in self.models:
                self.actors[w][m] = self._new_actor(w, m)
                pending[(w, m)] = self.actors[w][m].info.remote()
        warm = self.ray.remote(_warm).options(num_cpus=self.task_cpus)
        warming = [warm.remote(self.spec_table) for _ in range(self.workers)]
        self._report()
        infos = {k: self._get(f) for k, f in pending.items()}
        for f in warming:
            self._get(f)
        fingerprints: dict[str, str] = {}
        self.taggers: dict[str, LongContextTagger] = {}
        for (w, m), info in sorted(infos.items()):
            fp = fingerprints.setdefault(m, info["fingerprint"])
            tagger = self.taggers.setdefault(m, LongContextTagger(info["long_from"], info["long_tag"]))
            if info["fingerprint"] != fp or LongContextTagger(info["long_from"], info["long_tag"]) != tagger:
                raise SweepError(f"model {m!r} on {info['host']} has other weights or settings than on the "
                                 f"other workers (fingerprint {info['fingerprint']} against {fp}): every "
                                 "node needs the same models.toml and model folders")
            if info["switched"]:
                self.switched[m] = info["switched"]
            self.states[w].node = f"{info['host']} ({info['node_id'][:8]}, {info['device']})"
            self.states[w].state = "idle"
        self._report()
        return fingerprints

    def _get(self, future):
        try:
            return self.ray.get(future)
        except self.ray.exceptions.RayTaskError as e:
            raise e.as_instanceof_cause() from None
        except self.ray.exceptions.RayActorError as e:
            raise SweepError(f"a model actor died while loading its model: {e}") from None

    def stop(self) -> None:
        """Kill the actors and let go of every Ray handle and object ref the driver holds, so
        none is left to be freed after a shutdown (run_sweep_ray's ``shutdown``)."""
        for w, actors in enumerate(self.actors):
            for actor in actors.values():
                self.ray.kill(actor)
            actors.clear()
            self.states[w].state = "stopped"
            self.states[w].in_flight = 0
        self.futures.clear()
        self.spec_table = None
        self._report()

    def _report(self) -> None:
        if self.on_workers is not None:
            self.on_workers([WorkerState(**s.as_dict()) for s in self.states])

    # ------------------------------------------------------------------------------ serving

    def _least_loaded(self) -> int:
        return min(range(self.workers), key=lambda w: (self.states[w].in_flight, w))

    def _submit_predict(self, request: _Request, piece: int, model: str, questions, contexts, w: int | None = None):
        w = self._least_loaded() if w is None else w
        actor = self.actors[w][model]
        future = actor.predict.remote(questions, contexts)
        self.futures[future] = (request, piece, ("predict", w, model, questions, contexts, actor))
        self.states[w].in_flight += 1
        self.states[w].state = "busy"

    def _submit_variants(self, request: _Request, piece: int, items: list[tuple]):
        task = self.ray.remote(_perturb).options(num_cpus=self.task_cpus, max_retries=3)
        future = task.remote(self.spec_table, items, self.seed)
        self.futures[future] = (request, piece, ("variants", items))

    def dispatch(self, steps, request) -> _Request:
        """Send a chunk's request to the cluster (a request of no piece was answered here)."""
        if isinstance(request, Predict):
            n = len(request.questions)
            pieces = max(1, min(self.workers, n // 16 or 1))
            size = math.ceil(n / pieces)
            r = _Request(steps, "predict", pieces, size=n)
            for p in range(pieces):
                sl = slice(p * size, (p + 1) * size)
                self._submit_predict(r, p, request.model, request.questions[sl], request.contexts[sl])
            return r
        assert isinstance(request, ComputeVariants)
        remote, local = [], []
        for i, u in enumerate(request.units):
            (local if u.spec.key_salt else remote).append(i)   # file specs: the driver reads the file
        r = _Request(steps, "variants", 0, size=len(request.units))
        r.local = [(i, compute_locally(request.units[i], self.seed)) for i in local]
        if remote:
            # several small tasks per worker: a worker that finishes early takes the next one, so
            # slow units (TTS -> ASR, MT) end at about the same time on every worker
            pieces = min(self.workers * TASKS_PER_WORKER, len(remote))
            size = math.ceil(len(remote) / pieces)
            r.positions = [remote[p * size:(p + 1) * size] for p in range(pieces)]
            r.positions = [pos for pos in r.positions if pos]
            r.n_pieces = len(r.positions)
            for p, pos in enumerate(r.positions):
                items = [(self.spec_index[(request.units[i].spec.id, request.units[i].spec.params_json)],
                          request.units[i].example, request.units[i].ex_hash, request.units[i].repeat,
                          request.units[i].variant_key) for i in pos]
                self._submit_variants(r, p, items)
        return r

    def answer_of(self, r: _Request) -> list:
        if r.kind == "predict":
            return [pred for p in range(r.n_pieces) for pred in r.answers[p]]
        out: list = [None] * r.size
        for i, outcome in r.local:
            out[i] = outcome
        for p, pos in enumerate(r.positions):
            for i, outcome in zip(pos, r.answers[p]):
                out[i] = outcome
        return out

    def _replace(self, w: int, model: str) -> None:
        """A dead actor: a new one on the same node, which must load the same model."""
        state = self.states[w]
        state.restarts += 1
        state.state = "restarting"
        self._report()
        try:
            self.ray.kill(self.actors[w][model])
        except Exception:  # already gone
            pass
        actor = self._new_actor(w, model)
        info = self._get(actor.info.remote())
        if info["fingerprint"] != self.runner.fingerprints[model]:
            raise SweepError(f"the replacement actor for {model!r} on {info['host']} has other weights "
                             f"(fingerprint {info['fingerprint']} against {self.runner.fingerprints[model]})")
        self.actors[w][model] = actor
        state.state = "busy"

    def collect(self, timeout: float) -> list[_Request]:
        """Wait for answers; returns the requests now complete."""
        ready, _ = self.ray.wait(list(self.futures), num_returns=1, timeout=timeout)
        if ready:   # everything else already finished too, without waiting
            ready, _ = self.ray.wait(list(self.futures), num_returns=len(self.futures), timeout=0)
        complete = []
        for future in ready:
            request, piece, how = self.futures.pop(future)
            if how[0] == "predict":
                _, w, model, questions, contexts, actor = how
                self.states[w].in_flight -= 1
                try:
                    answer = self.ray.get(future)
                except self.ray.exceptions.RayActorError:
                    # the actor died (ray.kill, its process or node lost): replace it, send again;
                    # its other batches in flight fail too, and go to the replacement already made
                    if self.actors[w][model] is actor:
                        self._replace(w, model)
                    self._submit_predict(request, piece, model, questions, contexts, w)
                    continue
                except self.ray.exceptions.RayTaskError as e:
                    raise e.as_instanceof_cause() from None
                self.states[w].calls += 1
                self.states[w].predictions += len(questions)
                if self.states[w].in_flight == 0:
                    self.states[w].state = "idle"
            else:
                try:
                    answer = self.ray.get(future)
                except self.ray.exceptions.RayTaskError as e:
                    raise e.as_instanceof_cause() from None
            request.answers[piece] = answer
            if len(request.answers) == request.n_pieces:
                complete.append(request)
        if ready:
            self._report()
        return complete

    def run(self, chunk_size: int, cancel: threading.Event | None) -> bool:
        """Drive every chunk of the sweep, several at once; True when all are done."""
        chunks = self.runner.chunks(chunk_size, min_chunks=CHUNKS_PER_WORKER * self.workers)
        in_flight = 0
        exhausted = cancelled = False

        def advance(steps, value, first: bool) -> None:
            """Step a chunk on until it waits for the cluster, or ends."""
            nonlocal in_flight
            while True:
                try:
                    request = next(steps) if first else steps.send(value)
                except StopIteration:
                    in_flight -= 1
                    return
                first = False
                r = self.dispatch(steps, request)
                if r.n_pieces:
                    return
                value = self.answer_of(r)   # answered here (file specs only)

        while True:
            while not exhausted and not cancelled and in_flight < CHUNKS_PER_WORKER * self.workers:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                steps = next(chunks, None)
                if steps is None:
                    exhausted = True
                    break
                in_flight += 1
                advance(steps, None, True)
            if in_flight == 0:
                return not cancelled
            for request in self.collect(timeout=0.5):
                advance(request.steps, self.answer_of(request), False)


def run_sweep_ray(config: SweepConfig, db: str | Path | Store, *, settings: Any = None,
                  address: str | None = None, workers: int | None = None, num_cpus: int | None = None,
                  dataset: Dataset | None = None, data_dir: str | Path | None = None,
                  progress: ProgressFn | None = None, cancel: threading.Event | None = None,
                  chunk_size: int = 256, on_start: Callable[[SweepRun], None] | None = None,
                  on_workers: WorkersFn | None = None, stored: Mapping[str, str] | None = None,
                  on_switched: Callable[[dict[str, str]], None] | None = None, shutdown: bool = False,
                  outlive_cluster: bool = False) -> SweepRun:
    """Run (or resume) a sweep on Ray; the same rows as core.sweeps.running.run.run_sweep.

    Models are loaded by name from the model registry (models.toml) in the actors, with engine
    ``settings`` (an EngineSettings; threads are set per actor). ``address``: the cluster to join
    (default: a local Ray with ``num_cpus``, or the one already initialised in this process).
    ``workers``: lanes of work (default: the cluster's GPUs when it has any, else its CPUs).
    ``on_workers(states)`` gets every worker's :class:`WorkerState` when one changes.
    ``stored``: a resumed sweep's {model: fingerprint} (core.sweeps.running.backends.stored_fingerprints):
    each model's actors then answer with the backend the sweep was made with, and
    ``on_switched({model: backend})`` is told which models switched (before the first chunk).
    ``shutdown``: disconnect from Ray at the end (the CLI does; the app keeps its local Ray).
    ``outlive_cluster``: see :func:`connect` (the app's SweepJob sets it; the CLI exits as Ray does).
    Everything else as :func:`core.sweeps.running.run.run_sweep`.
    """
    from core.qa.engine import EngineSettings

    t0 = time.perf_counter()
    if chunk_size < 1:
        raise SweepError(f"chunk_size must be at least 1, got {chunk_size}")
    if workers is not None and workers < 1:
        raise SweepError(f"workers must be at least 1, got {workers}")
    inputs = resolve_inputs(config, dataset=dataset, data_dir=data_dir)   # bad input fails before Ray starts
    s = settings if settings is not None else EngineSettings()
    settings_dict = {k: v for k, v in vars(s).items() if k != "threads"}
    ray = connect(address, num_cpus=num_cpus, outlive_cluster=outlive_cluster)
    try:
        total = ray.cluster_resources()
        n = workers or int(total.get("GPU", 0)) or max(1, int(total.get("CPU", 1)))
        driver = _Driver(ray, None, inputs.models, settings_dict, n, config.seed, on_workers, stored)
        try:
            fingerprints = driver.start(inputs.specs)
            if driver.switched and on_switched is not None:
                on_switched(dict(driver.switched))
            plan = plan_sweep(inputs, fingerprints)

            def run_chunks(runner: Runner) -> bool:
                driver.runner = runner
                return driver.run(chunk_size, cancel)

            return execute_plan(plan, db, run_chunks, t0=t0, progress=progress, on_start=on_start,
                                taggers=driver.taggers)
        finally:
            driver.stop()
    finally:
        if shutdown:
            gc.collect()
            disconnect()
