"""The registry of perturbations, filled by auto-discovery of the catalogue package.

Adding a perturbation = adding one module under ``core/perturb/catalogue/`` that defines a
:class:`~core.perturb.base.Perturbation` subclass and registers an instance at import time::

    from core.perturb.registry import register

    @register
    class MyPerturbation(Perturbation): ...      # a class: it is instantiated with no arguments

    register(MyParametrisedPerturbation("x"))    # or an instance

:func:`load_all` imports every module of ``core.perturb.catalogue`` (found with ``pkgutil``, so no
import list needs editing); :func:`get`, :func:`all_perturbations` and :func:`by_family` call it
first, so callers never see a half-filled registry.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

from core.perturb.base import Perturbation

CATALOGUE_PACKAGE = "core.perturb.catalogue"

_REGISTRY: dict[str, Perturbation] = {}
_loaded = False


def register(p):
    """Register a perturbation instance (or a Perturbation subclass, instantiated with no arguments).

    Returns its argument, so it works as a class decorator. A second perturbation with the same id
    raises ValueError, unless it is an instance of the same class from the same module (a module
    re-import, e.g. after ``importlib.reload``), which replaces the old one.
    """
    instance = p() if isinstance(p, type) else p
    if not isinstance(instance, Perturbation):
        raise TypeError(f"register() expects a Perturbation instance or subclass, got {p!r}")
    instance.check_definition()
    existing = _REGISTRY.get(instance.id)
    if existing is not None and _class_key(existing) != _class_key(instance):
        raise ValueError(
            f"duplicate perturbation id {instance.id!r}: {_class_key(existing)} and {_class_key(instance)}")
    _REGISTRY[instance.id] = instance
    return p


def _class_key(p: Perturbation) -> str:
    return f"{type(p).__module__}.{type(p).__qualname__}"


def load_all() -> None:
    """Import every module of the catalogue package (each registers its perturbations). Idempotent."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # set first: a catalogue module calling get() at import time must not recurse
    package = importlib.import_module(CATALOGUE_PACKAGE)
    try:
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if not info.name.startswith("_"):
                importlib.import_module(f"{CATALOGUE_PACKAGE}.{info.name}")
    except Exception:
        _loaded = False  # let a later call retry (and surface the same error) instead of staying half-loaded
        raise


def get(perturbation_id: str) -> Perturbation:
    """The registered perturbation with this id; KeyError naming the known ids otherwise."""
    load_all()
    try:
        return _REGISTRY[perturbation_id]
    except KeyError:
        raise KeyError(
            f"unknown perturbation id {perturbation_id!r}; known ids: {', '.join(sorted(_REGISTRY))}") from None


def all_perturbations() -> list[Perturbation]:
    """Every registered perturbation, sorted by id."""
    load_all()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def by_family() -> dict[str, list[Perturbation]]:
    """Registered perturbations grouped by family (families sorted, members sorted by id)."""
    groups: dict[str, list[Perturbation]] = defaultdict(list)
    for p in all_perturbations():
        groups[p.family].append(p)
    return dict(sorted(groups.items()))
