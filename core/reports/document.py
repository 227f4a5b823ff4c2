"""A sweep's report as its two texts (:func:`build`: HTML and Markdown) and as files
(:func:`write`: the HTML at ``OUT``, the Markdown beside it, each replaced whole or not at all)."""
from __future__ import annotations

from pathlib import Path

from core.io.outputs import write_text_atomic
from core.reports.content import ProgressFn, collect
from core.reports.html import render_html
from core.reports.markdown import render_markdown
from core.sweeps.analysis.stored import StoredSweep

__all__ = ["build", "write", "markdown_path"]


def markdown_path(out: str | Path) -> Path:
    """Where the Markdown goes beside the HTML report ``out``.

    >>> str(markdown_path("runs/r.html")), str(markdown_path("r")), str(markdown_path("a.b.htm"))
    ('runs/r.md', 'r.md', 'a.b.md')
    """
    return Path(out).with_suffix(".md")


def build(db: str | Path, sweep: int | str, metric: str = "f1", seed: int = 0, progress: ProgressFn | None = None,
          command: str = "", stored: StoredSweep | None = None, shown_db: str | None = None) -> tuple[str, str]:
    """(HTML, Markdown) of the report on ``sweep`` in ``db``; ``command``: the one that made it;
    ``stored``: that sweep's read handle when the caller has one (its cached views are reused);
    ``shown_db``: the database as the report names it (:func:`collect`)."""
    rep = collect(db, sweep, metric=metric, seed=seed, progress=progress, stored=stored, shown_db=shown_db)
    return render_html(rep, command), render_markdown(rep, command)


def write(db: str | Path, sweep: int | str, out: str | Path, metric: str = "f1", seed: int = 0,
          progress: ProgressFn | None = None, command: str = "") -> tuple[Path, Path]:
    """Write the HTML report to ``out`` and the Markdown beside it; returns both paths. Nothing is
    written when collecting fails; each file is replaced whole or not at all."""
    html_text, md_text = build(db, sweep, metric, seed, progress, command)
    md = markdown_path(out)
    write_text_atomic(out, html_text)
    write_text_atomic(md, md_text)
    return Path(out), md
