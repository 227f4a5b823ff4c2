"""Sweep reports: a stored sweep as one self-contained HTML file and Markdown beside it
(``python -m core.sweeps --show NAME --report OUT.html``; the Heatmaps page's Report buttons).

``content`` collects what Heatmaps shows for the sweep from core.sweeps' public read functions,
``html`` and ``markdown`` render it; ``document``: :func:`build` returns both texts, :func:`write` writes them
atomically (core.io.outputs), the Markdown at ``OUT`` with the suffix ``.md``.
"""
from core.reports.document import build, markdown_path, write

__all__ = ["build", "write", "markdown_path"]
