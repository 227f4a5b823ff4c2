"""The QA engines loaded in this process, within one memory budget (``QAX_MODEL_MEMORY_MB``).

Every engine the app or a command line answers with comes from here (core.qa.registry.load_engine,
components/loaders.py): one copy of each model, whatever the sessions' settings, and at most
the budget of them together.

* **One copy.** An engine is kept per model and backend; other settings (answer cap, threads,
  window shape) are views over it (QAEngine.with_settings) that share its weights and forward
  pass. An engine answering with an ONNX or OpenVINO graph lets go of its torch weights once the
  graph is made (QAEngine.release_torch); a view that reads them (attribution) loads them again.
* **Measured cost.** An engine's cost is what its model card measured it to hold on the backend
  that answers (benchmarks/model_memory.py --card: RSS with it loaded and answering, minus RSS
  once it was dropped, in a fresh process). Without such a figure, it is the growth of the
  process's resident memory (RSS) across its load (loads run one at a time), after its
  temporaries are collected and given back to the system (core.memory.trim); never less than the
  bytes its torch tensors and opened graph files hold (a load that reuses freed heap pages shows
  a smaller growth than it occupies). A process's first load also grows by the libraries'
  one-off globals, so that figure errs on the large side.
* **Least recently used out.** A model card that measured the model's resident size on this
  backend (benchmarks/model_memory.py --card) says before the load how much room to make; without
  one, room is made right after. The engines used least recently go first; the one just loaded
  stays even when it alone is over the budget. An engine let go of leaves this cache and every
  view of it; an answer running on it finishes, and its memory goes when that answer lets go.
* **One load per model.** A second caller asking for a model being loaded waits for that load
  (and a page can show its progress: :meth:`EngineCache.loading`).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core import memory
from core.budgets import MODEL_MEMORY_MB
from core.qa.engine import EngineSettings

__all__ = ["EngineCache", "Loaded", "Loading", "card_mb", "rss_mb", "counted_mb"]

MB = 1024 * 1024


def rss_mb() -> float:
    """This process's resident memory now, in MB (psutil)."""
    import psutil

    return psutil.Process().memory_info().rss / MB


def counted_mb(engine) -> float:
    """The bytes ``engine`` is known to hold, in MB: its torch tensors while it holds them, and
    each opened ONNX session's graph file (a session holds its initializers in memory). A floor
    of its resident cost, not the cost itself (tokenizer, arenas and compiled kernels are not in it)."""
    total = 0
    for part in ("torch_bytes", "graph_bytes"):
        count = getattr(engine, part, None)
        total += count() if callable(count) else 0
    return total / MB


def card_mb(entry, backend: str) -> float | None:
    """The resident MB the model card of ``entry`` measured on ``backend`` (benchmarks/
    model_memory.py --card), else None."""
    try:
        card = entry.model_card() or {}
    except (OSError, ValueError):
        return None
    measured = ((card.get("memory") or {}).get("backends") or {}).get(backend) if isinstance(card, dict) else None
    mb = measured.get("resident_mb") if isinstance(measured, dict) else None
    return float(mb) if isinstance(mb, (int, float)) and mb > 0 else None


def settings_key(settings: EngineSettings) -> tuple:
    return tuple(sorted(vars(settings).items()))


@dataclass
class Loaded:
    """One engine in the cache: its model, the backend that answers, what it cost."""

    name: str
    backend: str        # the backend that answers
    mb: float           # resident cost, measured at load
    measured_by: str    # "its card", else "RSS growth" or "tensor bytes" (the floor, when larger)
    seconds: float      # how long the load took
    engine: object
    views: dict = field(default_factory=dict)   # settings key -> view (QAEngine.with_settings)
    last_used: float = 0.0
    uses: int = 0
    grew_mb: float = 0.0   # the RSS growth across its load, whatever ``mb`` was taken from

    def mb_now(self) -> float:
        """The cost now: with the torch weights again when a view brought them back after the
        load let go of them (an attribution)."""
        back = getattr(self.engine, "torch_reloads", 0) and getattr(self.engine, "holds_torch", False)
        return self.mb + (self.engine.torch_bytes() / MB if back else 0.0)


@dataclass
class Loading:
    """A load under way: which model, since when, and what it is doing now."""

    name: str
    backend: str
    started: float
    stage: str = "waiting for another load"
    expected_mb: float | None = None

    def line(self, now: float | None = None) -> str:
        """One line for a page: "Loading NAME (backend): stage, N s"."""
        seconds = (now or time.monotonic()) - self.started
        size = f", about {self.expected_mb:,.0f} MB" if self.expected_mb else ""
        return f"Loading {self.name} ({self.backend}{size}): {self.stage}, {seconds:.0f} s"


class EngineCache:
    """The engines of one process. ``budget_mb``: the budget now (default: QAX_MODEL_MEMORY_MB,
    read at every load); ``entry_for``: ``(name, models.toml path or None) -> entry`` and ``build``:
    ``(entry, settings, stage) -> engine``, the registry's (core.qa.registry.get_entry and
    build_engine: the registry owns the process's one cache, so this module never imports it);
    ``measure``: the process's RSS in MB (default :func:`rss_mb`)."""

    def __init__(self, budget_mb: Callable[[], float] | None = None, *, entry_for: Callable, build: Callable,
                 measure: Callable[[], float] = rss_mb):
        self._budget = budget_mb or MODEL_MEMORY_MB.value
        self._entry_for = entry_for
        self._build = build
        self._measure = measure
        self._loaded: OrderedDict[tuple, Loaded] = OrderedDict()   # least recently used first
        self._lock = threading.Lock()          # the dicts below
        self._load_lock = threading.Lock()     # one load at a time: an RSS growth is one model's
        self._name_locks: dict[str, threading.Lock] = {}
        self._loading: dict[str, Loading] = {}
        self.hits = self.misses = self.evictions = 0
        self.evicted: list[str] = []   # names let go of, in order (the Models page, tests)

    # ------------------------------------------------------------------------------ reading

    def budget_mb(self) -> float:
        return float(self._budget())

    def total_mb(self) -> float:
        with self._lock:
            return sum(e.mb_now() for e in self._loaded.values())

    def loaded(self) -> list[Loaded]:
        """The engines held, least recently used first."""
        with self._lock:
            return list(self._loaded.values())

    def loading(self) -> list[Loading]:
        """The loads under way or waiting, oldest first."""
        with self._lock:
            return sorted(self._loading.values(), key=lambda s: s.started)

    def is_loading(self, name: str) -> Loading | None:
        with self._lock:
            return self._loading.get(name)

    # ------------------------------------------------------------------------------ getting

    def peek(self, name: str, settings: EngineSettings | None = None, path: Path | None = None,
             count: bool = True):
        """The engine for ``name`` with ``settings`` when it is loaded, else None; ``count``: as a
        use (a hit, and the most recently used), not for a look that answers nothing."""
        entry = self._entry_for(name, path)
        s = settings or EngineSettings()
        key = self._key(entry, s)
        if not count:
            with self._lock:
                held = self._loaded.get(key)
            return None if held is None else held.views.get(settings_key(s), held.engine)
        return self._hit(key, s)

    def get(self, name: str, settings: EngineSettings | None = None, path: Path | None = None):
        """The engine of registered model ``name`` with ``settings``: from the cache, or loaded
        (making room first); waits for a load of the same model under way."""
        entry = self._entry_for(name, path)
        s = settings or EngineSettings()
        key = self._key(entry, s)
        found = self._hit(key, s)
        if found is not None:
            return found
        with self._name_lock(entry.name):
            found = self._hit(key, s)
            if found is not None:
                return found
            engine = self._load(entry, s, key)
        found = self._hit(key, s, count=False)
        return found if found is not None else engine   # let go of at once only under a tiny budget

    def _key(self, entry, s: EngineSettings) -> tuple:
        return (entry.name, entry.source, entry.fingerprint(), s.backend)

    def _hit(self, key: tuple, s: EngineSettings, count: bool = True):
        with self._lock:
            held = self._loaded.get(key)
            if held is None:
                return None
            self._loaded.move_to_end(key)
            held.last_used = time.time()
            if count:
                held.uses, self.hits = held.uses + 1, self.hits + 1
            want = settings_key(s)
            view = held.views.get(want)
            if view is None:   # an engine that cannot take other settings answers with its own
                make_view = getattr(held.engine, "with_settings", None)
                view = held.views[want] = make_view(s) if callable(make_view) else held.engine
            return view

    def _name_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._name_locks.setdefault(name, threading.Lock())

    def _load(self, entry, s: EngineSettings, key: tuple):
        backend = entry.default_backend() if s.backend == "default" else s.backend
        expected = card_mb(entry, backend)
        state = Loading(entry.name, backend, time.monotonic(), expected_mb=expected)
        with self._lock:
            self._loading[entry.name] = state
            self.misses += 1
        try:
            if expected:
                self._make_room(expected)
            with self._load_lock:
                state.started = time.monotonic()
                state.stage = "reading the weights"
                memory.trim()
                before, t0 = self._measure(), time.perf_counter()
                engine = self._build(entry, s, stage=lambda text: setattr(state, "stage", text))
                state.stage = "letting go of the torch copy"
                release = getattr(engine, "release_torch", None)
                if callable(release):
                    release()
                memory.trim()
                grew, counted = self._measure() - before, counted_mb(engine)
                seconds = time.perf_counter() - t0
        finally:
            with self._lock:
                self._loading.pop(entry.name, None)
        answering = getattr(engine, "backend_name", backend)
        carded = card_mb(entry, answering)
        if carded:   # what it holds after answering, measured alone: the first load's growth also
            mb, how = carded, "its card"   # holds the libraries' one-off globals (170-210 MB)
        else:
            mb, how = max(grew, counted), ("RSS growth" if grew >= counted else "tensor bytes")
        held = Loaded(entry.name, answering, mb, how, seconds, engine, {settings_key(s): engine}, time.time(), 1,
                      grew_mb=grew)
        with self._lock:
            self._loaded[key] = held
        self._make_room(0.0, keep=key)
        memory.freeze()   # its objects out of every later full collection (core.memory); trim() collected
        return engine

    # ------------------------------------------------------------------------------ letting go

    def _make_room(self, need_mb: float, keep: tuple | None = None) -> list[str]:
        """Let go of the least recently used engines (never ``keep``) until ``need_mb`` more fits
        the budget: first the torch weights a view brought back, then whole engines."""
        budget, victims = self.budget_mb(), []
        with self._lock:
            total = sum(e.mb_now() for e in self._loaded.values())
            for key, held in list(self._loaded.items()):
                if total + need_mb <= budget:
                    break
                if key != keep and held.mb_now() > held.mb and held.engine.release_torch():
                    # the weights a view brought back go first: they load again when asked
                    total = sum(e.mb_now() for e in self._loaded.values())
            for key, held in list(self._loaded.items()):
                if total + need_mb <= budget:
                    break
                if key == keep:
                    continue
                victims.append(self._loaded.pop(key))
                total -= held.mb_now()
                self.evictions += 1
                self.evicted.append(held.name)
        names = [v.name for v in victims]
        if victims:
            victims.clear()   # the last references this cache held
            memory.trim(thaw=True)   # thawed first: what the engines held in cycles is freed
        return names

    def evict(self, name: str) -> bool:
        """Let go of every engine of ``name`` (the Models page's button); True when one was held."""
        with self._lock:
            keys = [k for k, v in self._loaded.items() if v.name == name]
            gone = [self._loaded.pop(k) for k in keys]
        if gone:
            gone.clear()
            memory.trim(thaw=True)
        return bool(keys)

    def rest(self, keep, collect: bool = True) -> list[str]:
        """Go back to what an idle server holds (components/session_memory, once no browser is
        left): every engine whose model is not in ``keep`` let go of, and the torch weights a
        view brought back to a kept one (an attribution) let go of again; the names let go of.
        ``collect`` False: the caller runs the thawing trim that frees them (one, not two)."""
        keep = set(keep)
        with self._lock:
            keys = [k for k, v in self._loaded.items() if v.name not in keep]
            gone = [self._loaded.pop(k) for k in keys]
            kept = list(self._loaded.values())
        released = [h for h in kept if h.mb_now() > h.mb and h.engine.release_torch()]
        names = [g.name for g in gone]
        gone.clear()
        if collect and (names or released):
            memory.trim(thaw=True)
        return names

    def clear(self) -> None:
        """Let go of every engine (tests; a server reconfigured)."""
        with self._lock:
            self._loaded.clear()
        memory.trim(thaw=True)
