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

__all__ = ["NARROW_TABLE_PX", "fitted", "key_first"]

# The room for a table's columns in a window 800 px wide: the grid is 466 px there (measured in
# Chromium), less its borders and, on a selectable table, the row-marker column.
NARROW_TABLE_PX = 430


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
