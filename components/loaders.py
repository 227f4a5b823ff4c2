"""Cached loaders: one copy of each model, dataset and stored sweep's read handle per server process."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from core import datasets
from core.datasets.natural import NATURAL_PREFIX, natural_dataset
from core.qa import registry
from core.qa.engine import EngineSettings

if TYPE_CHECKING:   # imported when first used: the analysis modules are not every page's
    from core.sweeps.analysis.stored import StoredSweep


@st.cache_resource(show_spinner="Loading model…")
def engine(name: str, threads: int = 0, max_answer_tokens: int = 30, source: str = "", backend: str = "default"):
    """The engine of registered model ``name``. ``source`` (the registry file and where it loads
    the model from) is part of the cache key only: after models.toml names another folder for
    ``name``, the new model loads instead of the cached old one answering under its name.
    ``backend`` is part of the key too: a torch engine never answers for an ONNX one."""
    return registry.load_engine(
        name, EngineSettings(threads=threads or None, max_answer_tokens=max_answer_tokens, backend=backend)
    )


def _source(name: str) -> str:
    try:
        entries = registry.load_registry()
    except registry.ModelLoadError:
        return ""
    found = [m for m in entries if m.name == name]
    return f"{registry.registry_path()}::{found[0].source}" if found else ""


def engine_for_state(name: str):
    return engine_like_state(name, st.session_state.get("backend", "default"))


def engine_like_state(name: str, backend: str):
    """The engine of ``name`` with the sidebar's settings but ``backend``."""
    s = st.session_state
    return engine(name, int(s.get("threads", 0)), int(s.get("max_answer_tokens", 30)), _source(name), backend)


def engine_loader_like_state():
    """``(name, backend) -> engine`` with the sidebar's settings as they are now: read here, in the
    page's thread, so that a background sweep can load an engine without the session (the resume
    step of core.sweeps.running.lifecycle.launch)."""
    s = st.session_state
    threads, cap = int(s.get("threads", 0)), int(s.get("max_answer_tokens", 30))
    return lambda name, backend: engine(name, threads, cap, _source(name), backend)


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


@st.cache_data(show_spinner="Pairing the natural set…")
def _natural(name: str, data_dir: str):
    return natural_dataset(name, data_dir)


@st.cache_data(show_spinner="Reading dataset…")
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
