"""Heatmaps' tables under the figure: each model's penalty total and its clean scores, one above
the other (side by side, each was 226 px wide at 800 px and cut its last columns), with their CSVs."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from components.export import csv_download, file_stem
from components.narrow import fitted
from core.sweeps.analysis import tables as views

PENALTY_LABELS = {"penalty total (F1)": "penalty F1", "penalty total (EM)": "penalty EM", "cells scored": "cells"}


def penalty_and_clean_tables(cells: Sequence, clean: Mapping[str, Mapping], models: Sequence[str],
                             stem: str) -> None:
    """The penalty totals (their clean scores are in the table under them, and in their CSV) and the
    clean scores of every model of the sweep."""
    penalty_df = pd.DataFrame(views.penalty_summary(cells, clean, models))
    st.markdown("**Penalty total per model** (sum of the cells' penalties; lower = more robust)")
    st.dataframe(penalty_df.round(2), hide_index=True, key="hm_penalties", width="stretch",
                 column_config=fitted(penalty_df.columns, {"model": 160, "penalty total (F1)": 95,
                                                           "penalty total (EM)": 95, "cells scored": 70},
                                      labels=PENALTY_LABELS, hidden=["clean EM", "clean F1"]))
    csv_download(penalty_df, file_stem("penalties", stem), "hm_penalties_csv")
    clean_df = pd.DataFrame(views.clean_rows(clean))
    st.markdown("**Clean scores** (all examples of the sweep)")
    st.dataframe(clean_df, hide_index=True, key="hm_clean", width="stretch",
                 column_config=fitted(clean_df.columns, {"model": 160, "clean EM": 85, "clean F1": 85, "N": 70}))
    csv_download(clean_df, file_stem("clean", stem), "hm_clean_csv")
