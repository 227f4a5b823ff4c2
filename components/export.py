"""Download buttons for tables (CSV) and figures (self-contained HTML, and PNG where it can be made).

Figures are exported through deferred downloads: the file is only built when its button is
clicked (Streamlit calls the function then, on a thread of its own), so a page with many
figures does not render a 4 MB HTML file or start a browser on every rerun.

HTML: ``fig.to_html(include_plotlyjs=True)``, with plotly.js inlined, so the file opens offline.
PNG: Plotly's ``fig.to_image`` through kaleido (>= 1.0), which drives a headless Chromium found
on the PATH or named by the ``BROWSER_PATH`` environment variable (Debian: /usr/bin/chromium).
When either is missing, :func:`png_problem` says which, and the page offers HTML and CSV only.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.io.csv_export import csv_bytes

__all__ = ["figure_html", "figure_png", "png_problem", "download", "csv_download", "json_download",
           "figure_downloads", "file_stem"]

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def file_stem(*parts: object) -> str:
    """A safe file name from parts: ``file_stem("heatmap", "demo.en-1a2b")`` -> "heatmap_demo.en-1a2b"."""
    joined = "_".join(str(p) for p in parts if str(p))
    return re.sub(r"[^A-Za-z0-9._-]+", "-", joined).strip("-") or "export"


def figure_html(fig: go.Figure) -> str:
    return fig.to_html(include_plotlyjs=True, full_html=True)


@functools.lru_cache(maxsize=1)
def png_problem() -> str | None:
    """None when PNG export works here, else why not (checked once per process)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "PNG export needs the kaleido package (pip install kaleido)"
    browser = os.environ.get("BROWSER_PATH") or next(filter(None, map(shutil.which, _BROWSERS)), None)
    if not browser or not os.path.exists(browser):
        return "PNG export needs Chromium (set BROWSER_PATH or install chromium)"
    return None


def figure_png(fig: go.Figure, scale: float = 2.0) -> bytes:
    """The figure as PNG at its own layout size (``scale`` 2: sharp on high-DPI screens)."""
    problem = png_problem()
    if problem:
        raise RuntimeError(problem)
    return fig.to_image(format="png", scale=scale)


def download(label: str, data, file_name: str, mime: str, key: str | None = None, where=None) -> None:
    """The app's one download button, in ``where`` (a column or container; the page by default).
    ``data`` is bytes, text, or a function that makes them when the button is clicked.

    It never reruns its page (``on_click="ignore"``): a rerun that makes the file anew drops the
    one the browser is about to fetch, and a visitor's answers would be redrawn for nothing."""
    (st if where is None else where).download_button(label, data, file_name, mime, key=key, on_click="ignore")


def csv_download(df: pd.DataFrame, stem: str, key: str, label: str = "CSV", where=None) -> None:
    """A CSV download of ``df`` (UTF-8, no index, spreadsheet formulas neutralised: core.io.csv_export)."""
    download(f"⬇ {label}", csv_bytes(df), f"{stem}.csv", "text/csv", key, where)


def json_download(data, stem: str, key: str, label: str = "JSON", where=None) -> None:
    """A JSON download of ``data`` (UTF-8, non-ASCII kept as written, one space of indent)."""
    download(f"⬇ {label}", json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8"), f"{stem}.json",
             "application/json", key, where)


def figure_downloads(fig: go.Figure, stem: str, key: str) -> None:
    """HTML and (when possible) PNG downloads of ``fig``, side by side, built on click."""
    c1, c2 = st.columns(2)
    with c1:
        download("⬇ HTML (interactive)", lambda: figure_html(fig), f"{stem}.html", "text/html", f"{key}_html")
    with c2:
        problem = png_problem()
        if problem:
            st.caption(problem)
        else:
            download("⬇ PNG", lambda: figure_png(fig), f"{stem}.png", "image/png", f"{key}_png")
