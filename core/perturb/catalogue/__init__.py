"""The catalogue: one module per group of perturbations, each registering itself on import.

To add a perturbation, add a module here (any name not starting with "_") that defines a
``Perturbation`` subclass and registers it with ``core.perturb.registry.register``; it is then
found by ``registry.load_all()`` (pkgutil auto-discovery) with no other change.
"""
