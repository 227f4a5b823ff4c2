"""Heatmaps' "LLM answers" tab: for a sweep's generative readers, how their answers were found in
the passage on the clean questions and under each perturbation (core.sweeps.analysis.alignment),
with its CSV. Shown only for sweeps with such a reader."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.export import csv_download, file_stem
from core.sweeps.analysis.alignment import CAPTION
from core.sweeps.analysis.stored import StoredSweep


def alignment_section(stored: StoredSweep, models: Sequence[str], stem: str) -> None:
    st.subheader("Where the LLM's answers came from")
    st.caption(CAPTION)
    df = pd.DataFrame(stored.alignment_rates(list(models)))
    st.dataframe(df, hide_index=True, key="hm_align")
    csv_download(df, file_stem("llm-alignment", stem), "hm_align_csv")
