"""Answer spans in a context: :mod:`core.render.highlight` (the sweep reports mark spans too, and core
imports nothing from components/); re-exported here under its old name for the pages."""
from core.render.highlight import CSS, PALETTE, Mark, color_for, highlight_html, legend_html

__all__ = ["CSS", "PALETTE", "Mark", "color_for", "highlight_html", "legend_html"]
