"""The heatmap figure lives in :mod:`core.render.heatmap` (the sweep reports draw it too, and core
imports nothing from components/); re-exported here under its old name for the pages."""
from core.render.heatmap import (  # noqa: F401 (re-exported)
    BAND_COLOURS,
    LAYOUT_NOTES,
    LAYOUTS,
    MAX_ACROSS,
    METRICS,
    NO_SCORE_COLOUR,
    VALUES,
    __all__,
    cell_colour,
    cell_value,
    choose_layout,
    format_value,
    grid_size,
    heatmap_figure,
    layout_for,
)
