"""Heatmaps' "F1 against measured noise" section: the noise-level curves of core.sweeps.analysis.curves,
drawn by core.render.curve_figure; the figure (HTML / PNG) and the rows (CSV) export.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.export import csv_download, figure_downloads, file_stem
from core.render.curve_figure import LABELS, bin_label, curve_figure  # noqa: F401 (re-exported)
from core.sweeps.analysis import curves as nc
from core.sweeps.analysis.stored import StoredSweep


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
    if c.unseen:
        what = "case (TUQ, TLQ, …)" if measure == "bleu" else "case or punctuation (TUQ, DPQ, …)"
        st.caption(f"{c.unseen:,} scored variants changed only {what}, which this measure does not count: they "
                   "sit in the first bin, at no noise, and can pull its F1 down.")
    unit = "BLEU" if measure == "bleu" else f"{measure.upper()} %"
    st.dataframe(pd.DataFrame([{"model": m, "clean F1": round(c.clean[m], 1) if m in c.clean else None,
                                "break point (bin)": "none" if bp is None else f"{unit} {c.break_bin(m)}"}
                               for m, bp in c.breaks.items()]), hide_index=True, key="hm_curve_breaks")
    # the figure's two downloads get the page's width (inside half of it they are cut off at 800 px)
    figure_downloads(fig, file_stem("noise_curve", measure, stem), "hm_curve_dl")
    csv_download(pd.DataFrame(c.rows()), file_stem("noise_curve", measure, stem), "hm_curve_csv")
