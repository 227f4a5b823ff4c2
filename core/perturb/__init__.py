"""Perturbations of QA examples: the interface (base), the registry, NLP backends and the catalogue.

Each perturbation lives in a module of ``core/perturb/catalogue/`` and registers itself there;
``registry.load_all()`` discovers those modules with pkgutil. Use ``registry.get(id)``.
"""
from core.perturb.base import (  # noqa: F401
    Edit,
    NotApplicable,
    Param,
    Perturbation,
    PerturbationError,
    Variant,
    apply_edits,
    diff_edits,
    error_rates,
    make_variant,
    make_variant_from_text,
    splice,
)
