"""The noise-level curves of :mod:`core.sweeps.analysis.curves` as a plotly figure (no streamlit import):
one line per model over the noise bins (mean F1, the bootstrap band as error bars), its 90 %-of-
clean level dotted, its break point marked. Drawn by Heatmaps (components/heatmaps/noise_curves.py) and the
sweep reports (core/reports/).
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from core.render.highlight import color_for
from core.sweeps.analysis import curves as nc

__all__ = ["LABELS", "bin_label", "curve_figure"]

LABELS = {"cer": "CER (%)", "wer": "WER (%)", "bleu": "BLEU (100 = unchanged)"}


def bin_label(lo: float, hi: float) -> str:
    """A bin's axis label.

    >>> bin_label(0, 2.5), bin_label(40, float("inf")), bin_label(100, 80)
    ('0–2.5', '≥ 40', '100–80')
    """
    return f"≥ {lo:g}" if hi == float("inf") else f"{lo:g}–{hi:g}"


def curve_figure(c: nc.Curves) -> go.Figure:
    """The curves of ``c`` as a plotly figure. Model names are HTML-escaped: plotly reads a trace name
    as its pseudo-HTML, so ``<a href=...>`` in one was drawn as a live link in the legend.

    >>> from core.sweeps.analysis.curves import CurveBin, Curves
    >>> c = Curves("cer", [CurveBin("m", 0, 5, 2, 80.0, 70.0, 90.0), CurveBin("m", 5, 10, 1, 40.0, 40.0, 40.0)],
    ...            {"m": 80.0}, {"m": 5})
    >>> fig = curve_figure(c)
    >>> [t.name for t in fig.data]
    ['m', 'm: 90% of clean', 'm: break point']
    >>> list(fig.data[0].x), list(fig.data[0].error_y.array), list(fig.data[2].x)
    (['0–5', '5–10'], [10.0, 0.0], ['5–10'])
    """
    fig = go.Figure()
    models = list(dict.fromkeys(b.model for b in c.bins))
    for k, model in enumerate(models):
        bins = [b for b in c.bins if b.model == model and b.f1 is not None]
        x = [bin_label(b.lo, b.hi) for b in bins]
        colour = color_for(k)
        name = html.escape(model)
        fig.add_scatter(x=x, y=[b.f1 for b in bins], mode="lines+markers", name=name, line=dict(color=colour),
                        error_y=dict(type="data", symmetric=False, array=[b.high - b.f1 for b in bins],
                                     arrayminus=[b.f1 - b.low for b in bins]),
                        customdata=[b.n for b in bins], hovertemplate="%{x}: F1 %{y:.1f} (n=%{customdata})")
        if model in c.clean and x:
            fig.add_scatter(x=x, y=[nc.BREAK_FRACTION * c.clean[model]] * len(x), mode="lines",
                            name=f"{name}: 90% of clean", line=dict(color=colour, dash="dot", width=1))
        bp = c.breaks.get(model)
        hit = [b for b in bins if b.lo == bp]
        if hit:
            fig.add_scatter(x=[bin_label(hit[0].lo, hit[0].hi)], y=[hit[0].f1], mode="markers",
                            name=f"{name}: break point", marker=dict(symbol="x", size=14, color=colour))
    fig.update_layout(title=f"F1 against measured question noise ({LABELS[c.measure]})",
                      xaxis_title=LABELS[c.measure], yaxis_title="F1 (%)", height=420)
    fig.update_xaxes(type="category")
    return fig
