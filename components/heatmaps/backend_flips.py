"""Heatmaps' "Backend flips" section: answers that differ between this sweep and another one run
with another engine backend (core.sweeps.analysis.backend_axis), per model and perturbation, with CSV."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from components.export import csv_download, file_stem
from components.loaders import stored_sweep
from components.text import md_escape
from core.sweeps.analysis import aggregates
from core.sweeps.analysis.stored import StoredSweep


def _others(sweep: StoredSweep, sweeps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The sweeps to pair with ``sweep``: the others in its database on the same data set (a
    sweep of other questions shares no row with it)."""
    return [s for s in sweeps if s["id"] != sweep.id and s["dataset"] == sweep.info["dataset"]]


def backend_flips_apply(sweep: StoredSweep, sweeps: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the view has anything to pair ``sweep`` with (the bundled demo sweep, alone in its
    store, has not: its view was an empty tab)."""
    return bool(_others(sweep, sweeps))


def backend_flips_section(sweep: StoredSweep, sweeps: Sequence[Mapping[str, Any]], stem: str) -> None:
    """``sweeps``: the database's sweeps (core.sweeps.analysis.stored.list_sweeps rows) to compare with."""
    others = _others(sweep, sweeps)
    if not others:
        st.info("Backend flips compare this sweep with another sweep of the same data set in this database, run "
                "with another engine backend; this database holds none.")
        return
    with st.expander("Backend flips: this sweep against another backend's", expanded=True):
        st.caption("Run the same data, perturbations and seed with another engine backend (`python -m "
                   "core.sweeps ... --engine-backend torch`, or the model's default) and compare: a row flips "
                   "when the two answers differ after EM normalisation. CER columns: the mean question noise "
                   "of flipped and kept rows; flips at the same noise as kept rows point at precision, not noise.")
        by_id = {s["id"]: s for s in others}
        other = st.selectbox("Other sweep", list(by_id), format_func=lambda i: by_id[i]["name"],
                             key="hm_backend_other")
        try:
            with st.spinner("Pairing the two sweeps' answers…"):
                rows = sweep.backend_flips(stored_sweep(str(sweep.db), other, aggregates.version_of(by_id[other])))
        except ValueError as e:
            st.info(md_escape(e))
            return
        df = pd.DataFrame(rows)
        st.dataframe(df, hide_index=True, key="hm_backend_table")
        csv_download(df, file_stem("backend_flips", stem, by_id[other]["name"]), "hm_backend_csv")
