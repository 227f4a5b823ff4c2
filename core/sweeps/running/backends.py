"""Which engine backend a stored sweep was made with, so that resuming it answers the same way.

A sweep's configuration stores each model's fingerprint, and a non-torch backend is part of it
(QAEngine.fingerprint), so a sweep made with torch and resumed with ONNX would be another
configuration (under its name: refused). Since the default backend became the model card's choice
(core.qa.registry.ModelEntry.default_backend), a sweep stored before, or with another sidebar
setting, is resumed with the backend whose fingerprint equals the stored one: the Sweeps page's
Resume and ``python -m core.sweeps --name NAME`` (without ``--engine-backend``) both do this.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from core.qa.backends.selection import BACKENDS
from core.qa.protocol import QAModel, fingerprint_of


def stored_fingerprints(db: str | Path, name: str) -> dict[str, str]:
    """{model: fingerprint} of the sweep ``name`` stored in ``db``; {} when there is none."""
    from core.sweeps.store import Store

    if not Path(db).is_file():
        return {}
    store = Store(db, readonly=True)
    try:
        row = store.sweep_by_name(name)
    finally:
        store.close()
    if row is None:
        return {}
    return {m: fp for m, fp in json.loads(row["config_json"]).get("models", [])}


def backend_for(engine: QAModel, fingerprint: str) -> str | None:
    """The backend with which ``engine``'s model has ``fingerprint``: its own first, then each
    backend; None when none does (other weights or settings) or the engine cannot say.

    >>> class Engine:
    ...     backend_name = "onnx"
    ...     def fingerprint(self): return "fp-onnx"
    ...     def fingerprint_with(self, backend): return f"fp-{backend}"
    >>> backend_for(Engine(), "fp-onnx"), backend_for(Engine(), "fp-torch"), backend_for(Engine(), "other")
    ('onnx', 'torch', None)
    """
    if fingerprint_of(engine) == fingerprint:
        return getattr(engine, "backend_name", None)
    with_backend = getattr(engine, "fingerprint_with", None)
    if not callable(with_backend):
        return None
    return next((b for b in BACKENDS if with_backend(b) == fingerprint), None)


def engines_as_stored(engines: Mapping[str, QAModel], stored: Mapping[str, str],
                      load: Callable[[str, str], QAModel]) -> tuple[dict[str, QAModel], dict[str, str]]:
    """(engines, {model: backend switched to}): each engine whose fingerprint differs from the
    stored sweep's is replaced by ``load(model, backend)`` for the backend that gives the stored
    fingerprint. An engine no backend matches stays (the sweep then names the difference)."""
    out, switched = dict(engines), {}
    for model, engine in engines.items():
        want = stored.get(model)
        if want is None or fingerprint_of(engine) == want:
            continue
        backend = backend_for(engine, want)
        if backend is not None:
            out[model] = load(model, backend)
            switched[model] = backend
    return out, switched
