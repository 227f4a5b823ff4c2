"""Heatmaps' "LLM answers" tab: for a sweep's generative readers, how their answers were found in
the passage on the clean questions and under each perturbation (core.sweeps.analysis.alignment),
with its CSV. Shown only for sweeps with such a reader."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.export import csv_download, file_stem
from core.sweeps.analysis.stored import StoredSweep


def generative_models(models: Sequence[str]) -> list[str]:
    """The models of ``models`` that models.toml declares generative (an unknown name is not)."""
    from core.qa import registry

    out = []
    for name in models:
        try:
            if registry.get_entry(name).kind == "generative":
                out.append(name)
        except (registry.ModelLoadError, ValueError, OSError):   # not in models.toml, or it is unreadable
            continue
    return out


def alignment_section(stored: StoredSweep, models: Sequence[str], stem: str) -> None:
    st.subheader("Where the LLM's answers came from")
    st.caption("Each answer of a generative reader is looked for in the passage: **exact** (found after SQuAD "
               "normalisation), **approximate** (the most similar run of words, above the reader's threshold), "
               "**not in the passage** (scored as free text) or **no answer**. A rise in *not in the passage* under "
               "a perturbation means the reader stopped copying and started writing.")
    df = pd.DataFrame(stored.alignment_rates(list(models)))
    st.dataframe(df, hide_index=True, key="hm_align")
    csv_download(df, file_stem("llm-alignment", stem), "hm_align_csv")
