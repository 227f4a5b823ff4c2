"""Warm start: the models a first visitor will ask, loaded in the background when the server starts.

The app's first screen is the English demo set's first item on Ask, with the models the pickers
tick for its language (core.qa.registry.models_for_language), answering with the sidebar's default
settings. :func:`start` loads exactly those engines (the same cache keys: EngineSettings() with
backend "default") through the process's engine cache on a daemon thread, so the first Answer
finds them loaded. It stays within the model memory budget: a model whose card's measured size
would pass the budget with those already loaded is left for its first asker, so warm start never
makes one model push out another. A page whose model is still loading shows the cache's progress
line (core.qa.engine_cache.Loading.line) and waits for that load rather than starting a second one.

Once those engines are loaded, the warm start also imports transformers' question-answering
classes for their architectures. An engine answering from its graph holds no torch model, so
the first attribution builds one, and transformers imports a model class only when it is first
asked for: about 3 s of the 5 s a quiet first MiniLM attribution took here (the weights
themselves load in 0.3 s). The classes are code, not weights: no model is held twice.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from core.qa.engine import EngineSettings

__all__ = ["WarmStart", "start", "current", "rest", "default_names", "import_model_classes", "DEFAULT_LANG"]

log = logging.getLogger(__name__)

# The language of the app's first screen: the bundled demo set in English (components/pickers.py)
DEFAULT_LANG = "en"


def default_names(lang: str = DEFAULT_LANG) -> list[str]:
    """The models the pickers tick for an item in ``lang`` (none when the registry cannot be read)."""
    from core.qa import registry

    try:
        installed = registry.installed_models()
    except registry.ModelLoadError:
        return []
    return registry.models_for_language(lang, installed) if installed else []


@dataclass
class WarmStart:
    """One warm start: what it loads, what it loaded, skipped and failed, and when."""

    names: list[str]
    settings: EngineSettings = field(default_factory=EngineSettings)
    loaded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)   # name -> why (over the budget)
    failed: dict[str, str] = field(default_factory=dict)    # name -> the error
    started: float = 0.0
    finished: float | None = None
    classes_imported: list[str] = field(default_factory=list)   # model types whose torch class is imported
    thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.finished is None and self.thread is not None

    def run(self, cache=None) -> None:
        """Load :attr:`names` one after another through ``cache`` (default: the process's)."""
        from core.qa import engine_cache, registry

        cache = cache or registry.engines()
        self.started = time.monotonic()
        try:
            for name in self.names:
                try:
                    entry = registry.get_entry(name)
                    backend = entry.default_backend() if self.settings.backend == "default" else self.settings.backend
                    need = engine_cache.card_mb(entry, backend) or 0.0
                    room = cache.budget_mb() - cache.total_mb()
                    if cache.peek(name, self.settings, count=False) is None and need > room:
                        self.skipped[name] = (f"its measured {need:,.0f} MB would pass the model memory "
                                              f"budget ({room:,.0f} MB left of {cache.budget_mb():,.0f})")
                        continue
                    cache.get(name, self.settings)
                    self.loaded.append(name)
                    if cache.total_mb() >= cache.budget_mb():
                        self.skipped.update({n: "the model memory budget is full" for n in self.names
                                             if n not in self.loaded and n not in self.failed})
                        break
                except Exception as e:  # a model that cannot load is its asker's error to see
                    self.failed[name] = f"{type(e).__name__}: {e}"
                    log.warning("warm start: %s did not load (%s)", name, self.failed[name])
        finally:
            self.finished = time.monotonic()
            log.info("warm start: loaded %s in %.1f s; skipped %s; failed %s", self.loaded,
                     self.finished - self.started, sorted(self.skipped), sorted(self.failed))
        # after the loads, not counted in them: nobody waits for this but a later attribution
        engines = [cache.peek(name, self.settings, count=False) for name in self.loaded]
        self.classes_imported = import_model_classes(getattr(e, "model_type", "") for e in engines if e)
        if self.classes_imported:
            from core import memory

            memory.freeze()   # the classes' objects too (core.memory: the collector's pauses)

    def summary(self) -> str:
        """One line: what the warm start did (or is doing)."""
        if self.finished is None:
            return f"warm start loading {', '.join(self.names)}: {len(self.loaded)} of {len(self.names)} loaded"
        seconds = self.finished - self.started
        line = f"warm start loaded {len(self.loaded)} of {len(self.names)} models in {seconds:.0f} s"
        if self.skipped:
            line += f"; left for their first asker: {', '.join(self.skipped)}"
        if self.failed:
            line += f"; failed: {', '.join(self.failed)}"
        return line


def import_model_classes(model_types) -> list[str]:
    """Import transformers' question-answering model class of each of ``model_types`` (config
    ``model_type`` strings, e.g. "bert"); the types imported. A type transformers does not know,
    or one whose import fails, is skipped: its first attribution imports it (and says why if it
    cannot)."""
    done: list[str] = []
    wanted = sorted({t for t in model_types if t})
    if not wanted:
        return done
    from transformers import AutoModelForQuestionAnswering
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    for model_type in wanted:
        try:
            AutoModelForQuestionAnswering._model_mapping[CONFIG_MAPPING[model_type]]   # the lazy import
        except Exception as e:  # a class left unimported is only slower later
            log.info("warm start: the %s model class was not imported (%s: %s)", model_type, type(e).__name__, e)
            continue
        done.append(model_type)
    return done


_current: WarmStart | None = None
_lock = threading.Lock()


def current() -> WarmStart | None:
    """The process's warm start, once :func:`start` ran."""
    return _current


def start(names: list[str] | None = None, cache=None) -> WarmStart:
    """Start the process's warm start once (later calls return the same one): ``names`` (default:
    :func:`default_names`) loaded on a daemon thread."""
    global _current
    with _lock:
        if _current is None:
            warm = WarmStart(list(default_names() if names is None else names))
            warm.thread = threading.Thread(target=warm.run, args=(cache,), name="qax-warm-start", daemon=True)
            _current = warm
            warm.thread.start()
        return _current


def rest(cache=None, collect: bool = True) -> list[str]:
    """Back to what the server held once warm, when no browser is left (components/session_memory):
    the engines the warm start loaded stay, every other one is let go of, and so are torch weights
    an attribution brought back; the names let go of. Without a warm start (a command line, a
    server started without one) nothing stays; while one is loading, nothing is let go of.
    ``collect``: as EngineCache.rest's."""
    from core.qa import registry

    warming = current()
    if warming is not None and warming.finished is None:
        return []
    gone = (cache or registry.engines()).rest(warming.loaded if warming is not None else [], collect)
    if gone:
        log.info("no browser left: let go of %s", ", ".join(gone))
    return gone
