"""Heatmaps' "F1 against measured noise" section: the noise-level curves of core.sweeps.analysis.curves.

One line per model over the noise bins (mean F1, the bootstrap band as error bars), its 90 %-of-
clean level dotted, its break point marked; the figure (HTML / PNG) and the rows (CSV) export.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.export import csv_download, figure_downloads, file_stem
from components.highlight import color_for
from core.sweeps.analysis import curves as nc
from core.sweeps.analysis.stored import StoredSweep

LABELS = {"cer": "CER (%)", "wer": "WER (%)", "bleu": "BLEU (100 = unchanged)"}


def bin_label(lo: float, hi: float) -> str:
    """A bin's axis label.

    >>> bin_label(0, 2.5), bin_label(40, float("inf")), bin_label(100, 80)
    ('0–2.5', '≥ 40', '100–80')
    """
    return f"≥ {lo:g}" if hi == float("inf") else f"{lo:g}–{hi:g}"


def curve_figure(c: nc.Curves) -> go.Figure:
    """The curves of ``c`` as a plotly figure (model names are data: plotly escapes trace names).

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
        fig.add_scatter(x=x, y=[b.f1 for b in bins], mode="lines+markers", name=model, line=dict(color=colour),
                        error_y=dict(type="data", symmetric=False, array=[b.high - b.f1 for b in bins],
                                     arrayminus=[b.f1 - b.low for b in bins]),
                        customdata=[b.n for b in bins], hovertemplate="%{x}: F1 %{y:.1f} (n=%{customdata})")
        if model in c.clean and x:
            fig.add_scatter(x=x, y=[nc.BREAK_FRACTION * c.clean[model]] * len(x), mode="lines",
                            name=f"{model}: 90% of clean", line=dict(color=colour, dash="dot", width=1))
        bp = c.breaks.get(model)
        hit = [b for b in bins if b.lo == bp]
        if hit:
            fig.add_scatter(x=[bin_label(hit[0].lo, hit[0].hi)], y=[hit[0].f1], mode="markers",
                            name=f"{model}: break point", marker=dict(symbol="x", size=14, color=colour))
    fig.update_layout(title=f"F1 against measured question noise ({LABELS[c.measure]})",
                      xaxis_title=LABELS[c.measure], yaxis_title="F1 (%)", height=420)
    fig.update_xaxes(type="category")
    return fig


def noise_curve_section(sweep: StoredSweep, stem: str) -> None:
    st.subheader("F1 against measured noise")
    st.caption("Each question variant placed at its measured noise against the original question (NoiseQA's "
               "Table 3 form: CER / WER lower-cased without punctuation, sentence BLEU), binned; per model the "
               "mean F1 of each bin with a 95% bootstrap band (seeded), and its break point: the first bin, as "
               "noise grows, whose F1 is below 90% of clean F1. Context perturbations are left out.")
    c1, c2 = st.columns([3, 1])
    measure = c1.radio("Noise", list(nc.MEASURES), format_func=lambda m: m.upper(), horizontal=True,
                       key="hm_curve_measure")
    seed = int(c2.number_input("Bootstrap seed", min_value=0, value=0, step=1, key="hm_curve_seed"))
    with st.spinner("Measuring every variant's noise (bootstrap bands)…"):
        c = sweep.curves(measure, seed)
    if not any(b.n for b in c.bins):
        st.info("No scored question variants in this sweep yet.")
        return
    fig = curve_figure(c)
    st.plotly_chart(fig, key="hm_curve_fig")
    unit = "BLEU" if measure == "bleu" else f"{measure.upper()} %"
    st.dataframe(pd.DataFrame([{"model": m, "clean F1": round(c.clean[m], 1) if m in c.clean else None,
                                "break point": "none" if bp is None else f"{unit} {bp:g}"}
                               for m, bp in c.breaks.items()]), hide_index=True, key="hm_curve_breaks")
    # the figure's two downloads get the page's width (inside half of it they are cut off at 800 px)
    figure_downloads(fig, file_stem("noise_curve", measure, stem), "hm_curve_dl")
    csv_download(pd.DataFrame(c.rows()), file_stem("noise_curve", measure, stem), "hm_curve_csv")
