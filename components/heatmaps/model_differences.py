"""Heatmaps' "Model vs model" tab: which differences between two models of a sweep are real (a
paired bootstrap over the examples both were scored on: core.sweeps.analysis.stored), with its
CSV and JSON."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.export import csv_download, download, file_stem
from components.narrow import fitted, key_first
from core.sweeps.analysis.stored import StoredSweep


def model_differences_section(stored: StoredSweep, models: Sequence[str], stem: str) -> None:
    st.subheader("Model vs model: which differences are real?")
    st.caption("B − A in F1 points on the examples both models were scored on, with a 95% paired-bootstrap "
               "interval over those examples (2,000 resamples, seed 0). **Significant** = the interval excludes 0. "
               "It says how much the choice of questions alone could move the difference, not how much "
               "retraining with another seed would.")
    c1, c2 = st.columns(2)
    model_a = c1.selectbox("Model A", list(models), index=0, key="hm_diff_a")
    model_b = c2.selectbox("Model B", [m for m in models if m != model_a], index=0, key="hm_diff_b")
    with st.spinner("Resampling examples (paired bootstrap)…"):
        diff_df = pd.DataFrame(stored.model_differences(model_a, model_b))
    # at 800 px the spec and the difference with its interval first; the two models' F1 scroll in after them
    shown = diff_df.drop(columns=["perturbation", "params_json"])
    shown = shown[key_first(shown.columns, ["spec", "difference", "ci95_low", "ci95_high", "significant"])]
    st.dataframe(shown, hide_index=True, key="hm_diff",
                 column_config=fitted(shown.columns, {"spec": 118, "difference": 70, "ci95_low": 62, "ci95_high": 66,
                                                      "significant": 82},
                                      labels={"ci95_low": "95% low", "ci95_high": "95% high"}, pinned=["spec"]))
    d1, d2, _ = st.columns([1, 1, 2])   # wide enough for "⬇ JSON" at 800 px
    with d1:
        csv_download(diff_df, file_stem("model-differences", stem, model_a, model_b), "hm_diff_csv")
    download("⬇ JSON", diff_df.to_json(orient="records", indent=1),
             f"{file_stem('model-differences', stem, model_a, model_b)}.json", "application/json", "hm_diff_json",
             where=d2)
