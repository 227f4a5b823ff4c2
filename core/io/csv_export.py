"""CSV for spreadsheets that never runs a visitor's text as a formula.

Every CSV the project writes (the app's downloads, the CLIs' tables) goes through :func:`csv_text`
or :func:`csv_bytes`. A cell is stored text: a question typed on Beat the AI, an answer, a
dataset's title. A spreadsheet would evaluate a cell beginning with ``=``, ``+``, ``-`` or ``@``
(and, in some, a tab or carriage return) as a formula (CSV injection), so such a string cell gets
a leading apostrophe (OWASP's rule), which spreadsheets read as "text" and hide. Numbers stay
numbers: only strings are changed, so a negative F1 difference exported as a float is untouched.

>>> import pandas as pd
>>> df = pd.DataFrame({"q": ["=HYPERLINK(\\"http://x\\")", "-2+3", "@SUM(A1)", "fine"], "d": [-1.5, 2, 3, 5]})
>>> print(csv_text(df), end="")
q,d
"'=HYPERLINK(""http://x"")",-1.5
'-2+3,2.0
'@SUM(A1),3.0
fine,5.0
"""
from __future__ import annotations

import pandas as pd

__all__ = ["safe_cell", "safe_frame", "csv_text", "csv_bytes"]

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """``value`` with a leading ``'`` when it is a string a spreadsheet would run as a formula.

    >>> safe_cell("=1+1"), safe_cell("+49 30"), safe_cell("\\tx"), safe_cell("ok"), safe_cell(-3), safe_cell(None)
    ("'=1+1", "'+49 30", "'\\tx", 'ok', -3, None)
    """
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose string cells (and column names) are :func:`safe_cell`."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def csv_text(df: pd.DataFrame | list[dict], index: bool = False) -> str:
    """``df`` (or a list of row dicts) as CSV text with formulas neutralised."""
    frame = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
    return safe_frame(frame).to_csv(index=index)


def csv_bytes(df: pd.DataFrame | list[dict], index: bool = False) -> bytes:
    """:func:`csv_text` as UTF-8 bytes, for a download button."""
    return csv_text(df, index=index).encode("utf-8")
