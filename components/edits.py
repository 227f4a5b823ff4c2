"""Render a variant's edits as HTML: deletions struck through in red, insertions in green.

Every piece of text goes through ``components.text.html_text`` (neither HTML nor Markdown).
Offsets of the edits refer to the original text (as in
``core.perturb.base.Edit``); a replacement shows the old text deleted, then the new inserted.
No streamlit import, so it is unit-tested like core code.
"""
from __future__ import annotations

from collections.abc import Sequence

from components.text import html_text
from core.explore.variants import edit_segments
from core.perturb.base import Edit

DEL_STYLE = "background:#f8d0d0;color:#8b0000;text-decoration:line-through;"
INS_STYLE = "background:#cdeccd;color:#0b5d0b;text-decoration:none;"
# A space alone inside a deletion/insertion is invisible; show spaces there as an open box.
VISIBLE_SPACE = "␣"


def _show(text: str) -> str:
    return html_text(text.replace(" ", VISIBLE_SPACE))


def edits_html(original: str, edits: Sequence[Edit], window: int | None = None) -> str:
    """HTML of ``original`` with ``edits`` shown as ``<del>``/``<ins>``; ``window`` keeps only that
    many characters around the edits (see :func:`core.explore.variants.edit_segments`).

    >>> edits_html("a <b> c", [Edit(2, 5, "<i>", "x"), Edit(7, 7, " d", "y")])  # doctest: +NORMALIZE_WHITESPACE
    '<div class="qax-edits">a <del style="background:#f8d0d0;color:#8b0000;text-decoration:line-through;"
    title="x">&#60;b&#62;</del><ins style="background:#cdeccd;color:#0b5d0b;text-decoration:none;"
    title="x">&#60;i&#62;</ins> c<ins style="background:#cdeccd;color:#0b5d0b;text-decoration:none;"
    title="y">␣d</ins></div>'
    """
    out = []
    for seg in edit_segments(original, edits, window):
        if seg[0] == "gap":
            out.append("…")
        elif seg[0] == "text":
            out.append(html_text(seg[1]))
        else:
            _, old, new, kind = seg
            title = html_text(" ".join(kind.split()))
            if old:
                out.append(f'<del style="{DEL_STYLE}" title="{title}">{_show(old)}</del>')
            if new:
                out.append(f'<ins style="{INS_STYLE}" title="{title}">{_show(new)}</ins>')
    return f'<div class="qax-edits">{"".join(out)}</div>'
