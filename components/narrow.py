"""Column settings that keep a table's key columns in view in a window 800 px wide.

Beside Streamlit's sidebar such a window leaves a page about 470 px wide, and a dataframe sizes each
column to its longest text: a table of many columns showed its first two or three and cut the rest
(issue 53: Behaviour tests' failure rates, every model of Variants but the first, the clean scores
on Heatmaps). :func:`fitted` gives the key columns minimum widths that add up to what fits there
(:data:`NARROW_TABLE_PX`), short labels where a name is long, and pins the columns that name a row.
Drawn with ``width="stretch"``, Streamlit's grid grows every column that is not pinned to fill a
wider page (``grow`` in its column settings), so a 1400 px window loses nothing.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import streamlit as st

__all__ = ["NARROW_TABLE_PX", "fitted", "key_first", "wrapped_sizes"]

# The room for a table's columns in a window 800 px wide: the grid is 466 px there (measured in
# Chromium), less its borders and, on a selectable table, the row-marker column.
NARROW_TABLE_PX = 430

# Streamlit's grid draws text at about 7 px a character on 18 px lines, inside 16 px of padding; a
# cell wraps its text only within the fixed row height it is given (it cannot grow a row).
_CHAR_PX, _LINE_PX, _PAD_PX, _HEADER_PX = 6.9, 18, 16, 36


def key_first(columns: Iterable[str], keys: Iterable[str]) -> list[str]:
    """``columns`` with ``keys`` (those present) first, in their order, then the others as they were.

    >>> key_first(["model", "test", "type", "failure rate %"], ["model", "test", "failure rate %"])
    ['model', 'test', 'failure rate %', 'type']
    """
    columns = list(columns)
    first = [k for k in keys if k in columns]
    return first + [c for c in columns if c not in first]


def fitted(columns: Iterable[str], widths: Mapping[str, int], *, labels: Mapping[str, str] | None = None,
           pinned: Iterable[str] = (), hidden: Iterable[str] = ()) -> dict:
    """A ``column_config`` for ``st.dataframe``: each column in ``widths`` at least that many pixels
    wide, shown under ``labels``' name for it; ``pinned`` ones stay in view when the table scrolls
    sideways; ``hidden`` ones are left out of the view (a CSV of the frame keeps them). The widths of
    the columns in view should add up to at most :data:`NARROW_TABLE_PX`."""
    labels, pinned, hidden = dict(labels or {}), set(pinned), set(hidden)
    config: dict = {}
    for col in columns:
        if col in hidden:
            config[col] = None
        elif col in widths or col in labels or col in pinned:
            config[col] = st.column_config.Column(labels.get(col), width=widths.get(col),
                                                  pinned=True if col in pinned else None)
    return config


def wrapped_sizes(rows: Iterable[Mapping[str, object]], widths: Mapping[str, int], *, min_row: int = 35,
                  max_row: int = 220, max_height: int = 2400) -> tuple[int, int]:
    """(row height, table height) in pixels for ``st.dataframe`` so the longest text in the
    ``widths`` columns is read whole at those (minimum, 800 px window) widths and every row is in
    view without scrolling inside the table, up to ``max_height`` (then it scrolls).

    >>> wrapped_sizes([{"v": "x" * 10}], {"v": 118})
    (35, 73)
    >>> wrapped_sizes([{"v": "word " * 20}, {"v": "TUQ"}], {"v": 118})
    (160, 358)
    """
    rows = list(rows)
    lines = 1
    for row in rows:
        for col, px in widths.items():
            per_line = max(1, int(0.95 * (px - _PAD_PX) / _CHAR_PX))   # 0.95: lines break between words
            text = str(row.get(col) or "")
            lines = max(lines, sum(-(-max(len(part), 1) // per_line) for part in text.split("\n")))
    row_px = min(max_row, max(min_row, _PAD_PX + _LINE_PX * lines))
    return row_px, min(max_height, _HEADER_PX + 2 + row_px * len(rows))
