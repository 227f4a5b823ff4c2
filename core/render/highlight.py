"""Render a context with several models' answer spans highlighted (HTML, every text escaped).

Each model has its own colour. Where spans overlap, the segment shows diagonal stripes of all
covering colours and its tooltip names every model, so overlaps stay readable. The gold answer
is drawn as a thick underline, independent of the highlight colours.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.render.text import html_text

# Colour-blind-friendly (Okabe-Ito) light tints, one per model, in selection order.
PALETTE = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#CC79A7", "#0072B2", "#D55E00", "#999999"]


def color_for(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Mark:
    label: str  # e.g. the model name
    start: int
    end: int
    color: str


def _attr(text: str) -> str:
    """Text for a title attribute: one line, neither HTML nor Markdown."""
    return html_text(" ".join(text.split()))


def _background(colors: list[str]) -> str:
    if len(colors) == 1:
        return f"background:{colors[0]}80;"
    stops, w = [], 6
    for i, c in enumerate(colors):
        stops.append(f"{c}B0 {i * w}px {(i + 1) * w}px")
    return f"background:repeating-linear-gradient(135deg,{','.join(stops)});"


def highlight_html(context: str, marks: list[Mark], gold: list[tuple[int, int]] | None = None) -> str:
    """HTML of ``context`` with ``marks`` highlighted and ``gold`` spans underlined.

    >>> highlight_html("a <b> c", [Mark("m1", 2, 5, "#E69F00")])  # doctest: +NORMALIZE_WHITESPACE
    '<div class="qax-context">a <mark class="qax-span" style="background:#E69F0080;" title="m1">&#60;b&#62;</mark>
    c</div>'

    A passage or a model name holding Markdown stays text (no image, no link):

    >>> "<img" in highlight_html("![x](http://h/p.png)", [Mark("[m](http://h)", 0, 2, "#E69F00")])
    False
    >>> "](" in highlight_html("![x](http://h/p.png)", [Mark("[m](http://h)", 0, 2, "#E69F00")])
    False

    Gold text that no model predicted is underlined only, with no background:

    >>> tail = highlight_html("in 1889 too", [Mark("m1", 0, 7, "#E69F00")], gold=[(3, 11)]).split("</mark>")[-1]
    >>> tail.startswith('<span class="qax-gold" style="text-decoration:underline;') and "background" not in tail
    True
    >>> tail.endswith('title="gold answer"> too</span></div>')
    True
    """
    gold = gold or []
    n = len(context)
    cuts = {0, n}
    for m in marks:
        cuts.update((max(0, min(n, m.start)), max(0, min(n, m.end))))
    for a, b in gold:
        cuts.update((max(0, min(n, a)), max(0, min(n, b))))
    bounds = sorted(cuts)
    out = []
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        text = html_text(context[a:b])
        covering = [m for m in marks if m.start <= a and b <= m.end]
        in_gold = any(ga <= a and b <= gb for ga, gb in gold)
        style = ""
        title = []
        if covering:
            style += _background([m.color for m in covering])
            title += [m.label for m in covering]
        if in_gold:
            style += "text-decoration:underline;text-decoration-thickness:3px;text-underline-offset:3px;"
            title.append("gold answer")
        if style:
            # gold text no model predicted is a plain <span>: a <mark> without a background of its
            # own takes the browser's default yellow, which reads as one more model's span
            tag, cls = ("mark", "qax-span") if covering else ("span", "qax-gold")
            out.append(
                f'<{tag} class="{cls}" style="{style}" title="{_attr(", ".join(title))}">{text}</{tag}>'
            )
        else:
            out.append(text)
    return f'<div class="qax-context">{"".join(out)}</div>'


def legend_html(items: list[tuple[str, str]], with_gold: bool = True) -> str:
    parts = [
        f'<span style="background:{c}80;padding:1px 6px;border-radius:3px;margin-right:8px">'
        f"{html_text(label)}</span>"
        for label, c in items
    ]
    if with_gold:
        parts.append(
            '<span style="text-decoration:underline;text-decoration-thickness:3px;">gold answer</span>'
        )
    return f'<div class="qax-legend">{"".join(parts)}</div>'


CSS = """
<style>
.qax-context { line-height: 1.9; font-size: 1.02rem; padding: .6rem .8rem; border: 1px solid #ddd;
               border-radius: 6px; max-height: 420px; overflow-y: auto; white-space: pre-wrap; }
.qax-context mark { color: inherit; padding: 1px 0; border-radius: 2px; }
.qax-legend { margin: .3rem 0 .5rem 0; font-size: .9rem; }
</style>
"""
