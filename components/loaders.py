"""Cached loaders: one copy of each model, dataset and stored sweep's read handle per server process.

The models live in the process's engine cache (core.qa.engine_cache), bounded by the model memory
budget (QAX_MODEL_MEMORY_MB), not in a Streamlit cache: a Streamlit cache keeps whatever it holds
for good, and a page waiting for a model shows the load's progress instead of a frozen spinner.
"""
from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from components.text import md_escape
from core import datasets
from core.datasets.natural import NATURAL_PREFIX, natural_dataset
from core.qa import registry, warm
from core.qa.engine import EngineSettings

if TYPE_CHECKING:   # imported when first used: the analysis modules are not every page's
    from core.sweeps.analysis.stored import StoredSweep

# How often a page waiting for a model redraws its progress line.
POLL_SECONDS = 0.5


def engine(name: str, threads: int = 0, max_answer_tokens: int = 30, backend: str = "default"):
    """The engine of registered model ``name`` from the engine cache: at once when it is loaded;
    else loaded (or the load under way awaited, e.g. the warm start's) while the page shows a
    progress line. The cache's key holds the registry's source and the weights' fingerprint, so
    a folder models.toml names anew loads instead of the cached old one answering under its
    name; and the backend, so a torch engine never answers for an ONNX one."""
    settings = EngineSettings(threads=threads or None, max_answer_tokens=max_answer_tokens, backend=backend)
    cache = registry.engines()
    found = cache.peek(name, settings)
    if found is not None:
        return found
    if not _in_a_page():   # a background sweep's thread: nothing to draw on
        return cache.get(name, settings)
    return _load_with_progress(cache, name, settings)


def _in_a_page() -> bool:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx(suppress_warning=True) is not None


def _load_with_progress(cache, name: str, settings: EngineSettings):
    """``cache.get`` on a helper thread while this page redraws one line: what the load is doing
    and for how long (a load the warm start or another visitor began is awaited, not repeated)."""
    line = st.empty()
    # not a ``with`` block: a rerun that interrupts this page must not wait for the load to end
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="qax-load")
    future = pool.submit(cache.get, name, settings)
    pool.shutdown(wait=False)
    t0 = time.monotonic()
    try:
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                state = cache.is_loading(name)
                text = state.line() if state else f"Loading {name}: {time.monotonic() - t0:.0f} s"
                line.caption(f"⏳ {md_escape(text)}")
    finally:
        line.empty()


def engine_for_state(name: str):
    return engine_like_state(name, st.session_state.get("backend", "default"))


def engine_like_state(name: str, backend: str):
    """The engine of ``name`` with the sidebar's settings but ``backend``."""
    s = st.session_state
    return engine(name, int(s.get("threads", 0)), int(s.get("max_answer_tokens", 30)), backend)


def engine_loader_like_state():
    """``(name, backend) -> engine`` with the sidebar's settings as they are now: read here, in the
    page's thread, so that a background sweep can load an engine without the session (the resume
    step of core.sweeps.running.lifecycle.launch)."""
    s = st.session_state
    threads, cap = int(s.get("threads", 0)), int(s.get("max_answer_tokens", 30))
    return lambda name, backend: engine(name, threads, cap, backend)


def start_warm_start() -> None:
    """Start loading the first screen's models in the background, once per server process (a
    server started with ``./run.sh app`` began at start-up, components/server.py); nothing under
    AppTest (no server runtime) or with ``QAX_WARM_START=0``."""
    import os

    from streamlit import runtime

    # AppTest puts a mock in the runtime's place: only a real server warms up
    if runtime.exists() and type(runtime.get_instance()) is runtime.Runtime \
            and os.environ.get("QAX_WARM_START", "1") != "0":
        warm.start()


def backend_note(eng) -> str:
    """Which backend answered, for a caption under the answers, with the reason when the one
    chosen in the sidebar could not run here, and the answer-length cap (the sidebar's setting)
    the engine answered under (plain text: pass it through md_escape).

    >>> class E: backend_name, backend_message = "onnx-int8", None
    >>> backend_note(E())
    'answered with onnx-int8'
    """
    note = f"answered with {getattr(eng, 'backend_name', 'torch')}"
    message = getattr(eng, "backend_message", None)
    note = f"{note} ({message})" if message else note
    cap = getattr(getattr(eng, "settings", None), "max_answer_tokens", None)
    return f"{note} · answer cap {cap} tokens" if cap else note


def dataset(path: str, data_dir: str, name: str = ""):
    """The data set at ``path``, a file the data directory ``data_dir`` holds: resolved through
    the same confinement as Sweeps (:func:`core.datasets.confined_file`), so a symlink in the data
    directory pointing at a file elsewhere is refused (DatasetError), never read or shown.
    ``name``: the picker's name; a natural set's (``natural:...``) is built from its files."""
    resolved = datasets.confined_file(path, data_dir)
    if name.startswith(NATURAL_PREFIX):
        return _natural(name, str(Path(data_dir).expanduser().resolve()))
    return _dataset(str(resolved), Path(path).name.removesuffix(".json"))


@st.cache_data(show_spinner="Pairing the natural set…", max_entries=4)
def _natural(name: str, data_dir: str):
    return natural_dataset(name, data_dir)


# a few data sets at a time: XQuAD's largest file parses to ~10 MB of objects, an upload-sized one
# to ~200 MB, and every session shares these
@st.cache_data(show_spinner="Reading dataset…", max_entries=8)
def _dataset(resolved: str, name: str):
    return datasets.load_squad(resolved, name=name)


@st.cache_data
def demo(lang: str):
    return datasets.demo_dataset(lang)


@st.cache_data(ttl=30)
def discovered(data_dir: str):
    return datasets.discover_datasets(data_dir) if data_dir else []


def model_entries():
    """(installed entries, all entries, registry error or None)."""
    try:
        entries = registry.load_registry()
    except registry.ModelLoadError as e:
        return [], [], str(e)
    return [m for m in entries if m.is_installed()], entries, None


def multilingual_models() -> list[str]:
    """The installed models registered for more than one language, for the views that compare
    languages (a registry error leaves none)."""
    installed, _, _ = model_entries()
    return [m.name for m in installed if len(m.languages) > 1]


@st.cache_resource(show_spinner="Reading the sweep…", max_entries=16)
def stored_sweep(db: str, sweep: int | str, version: str) -> StoredSweep:
    """The read handle of ``sweep`` in the database ``db``, shared by every view and session while
    the sweep's ``version`` (:func:`core.sweeps.analysis.aggregates.version_of`) holds: a sweep that
    grew gets a new handle, never the old numbers."""
    from core.sweeps.analysis.stored import StoredSweep

    return StoredSweep(db, sweep)
