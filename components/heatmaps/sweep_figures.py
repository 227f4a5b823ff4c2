"""Heatmaps' other figures: :mod:`core.render.sweep_figures` (the sweep reports draw them too, and core
imports nothing from components/); re-exported here under its old name for the pages."""
from core.render.sweep_figures import __all__, breakdown_figure, bucket_figure  # noqa: F401
