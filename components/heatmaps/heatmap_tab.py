"""Heatmaps' first tab: the model x perturbation heatmap of a stored sweep (metric, what the
cells show, layout), a cell chosen by a click on the chart or from the select box below it, the
penalty and clean-score tables, every cell as a table, then the chosen cell's examples and its
copy link. The figure itself is core.render.heatmap's.

The heatmap is drawn with square scatter markers because Streamlit reports clicks on scatter
points but not on heatmap cells: clicking a cell selects it, and a select box does the same
without a mouse.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components import permalink
from components.choice import keep_valid
from components.export import csv_download, figure_downloads, file_stem
from components.heatmaps.cell_drill import cell_examples
from components.heatmaps.summary_tables import penalty_and_clean_tables
from core.metrics import METRICS as METRIC_INFO
from core.render.heatmap import LAYOUT_NOTES, LAYOUTS, METRICS, VALUES, heatmap_figure, layout_for
from core.sweeps.analysis import tables as views
from core.sweeps.analysis.sweep_cells import penalty_totals


def _clicked_cells() -> list[int]:
    """Indices of the cells selected by a click on the chart (its state, read before it is redrawn,
    so the outline and the select box below follow the click in the same rerun)."""
    state = st.session_state.get("hm_chart") or {}
    selection = state.get("selection") if hasattr(state, "get") else None
    points = (selection or {}).get("points") or []
    return [int(p["customdata"][0]) for p in points if p.get("customdata")]


def heatmap_tab(stored, sweep: dict, sweep_id, cells: list, clean, link, db_choice, stem: str) -> str:
    """The heatmap of ``stored`` (the sweep's read handle; ``sweep`` its summary, ``cells`` and
    ``clean`` its cells and clean scores), opened on the cell a permalink ``link`` names; the
    metric chosen (the papers' tabs show it too)."""
    st.subheader("Model × perturbation")
    c1, c2, c3 = st.columns([2, 3, 3])
    metric = c1.radio("Metric", list(METRICS), format_func=METRICS.get, horizontal=True, key="hm_metric",
                      help=" · ".join(f"{METRIC_INFO[m].label}: {METRIC_INFO[m].help}" for m in METRICS))
    value = c2.radio("Cells show", list(VALUES), format_func=VALUES.get, horizontal=True, key="hm_value",
                     help="The colour is always the band of the % change of the metric (SEEDS.md §4), and each "
                          "cell's second line its penalty.")
    n_columns = len(views.columns(cells))
    n_models = len(sweep["models"])
    layout = c3.radio("Layout", list(LAYOUTS), horizontal=True, key="hm_layout",
                      format_func=lambda k: (f"automatic ({LAYOUTS[layout_for(cells, n_models)]})" if k == "auto"
                                             else LAYOUTS[k]),
                      help=f"Automatic: models as rows while the {n_columns} perturbations fit across the page "
                           "(up to 40), else perturbations as rows, down the page; for one model with n = 1, 2, … "
                           "(words or characters perturbed), one row per perturbation with its n across.")
    totals = penalty_totals(cells, metric)

    clicked = _clicked_cells()
    if st.session_state.get("hm_cell_of") != sweep_id:  # another sweep: its first cell
        st.session_state["hm_cell_of"] = sweep_id
        st.session_state["hm_cell"] = 0
    keep_valid("hm_cell", list(range(len(cells))))
    if clicked and clicked != st.session_state.get("hm_last_click"):
        st.session_state["hm_cell"] = clicked[0]
    st.session_state["hm_last_click"] = clicked
    fig, plotted = heatmap_figure(cells, metric, value, totals=totals, models=sweep["models"],
                                  highlight=st.session_state.get("hm_cell", 0), layout=layout)
    st.plotly_chart(fig, on_select="rerun", selection_mode="points", key="hm_chart", width="content",
                    theme=None, config={"displayModeBar": False})
    st.caption(LAYOUT_NOTES[layout_for(cells, n_models, layout)])
    permalink.apply_cell(link, sweep_id, plotted)
    # the exported figure without the outline of the cell this visitor opened
    exported, _ = heatmap_figure(cells, metric, value, totals=totals, models=sweep["models"], layout=layout)
    figure_downloads(exported, file_stem("heatmap", stem, metric, value), "hm_fig")

    penalty_and_clean_tables(cells, clean, sweep["models"], stem)
    cells_df = pd.DataFrame(views.cell_rows(cells, sweep["models"]))
    with st.expander("All cells as a table"):
        st.dataframe(cells_df, hide_index=True, key="hm_cells")
    csv_download(cells_df, file_stem("cells", stem), "hm_cells_csv", "CSV of all cells")

    # ------------------------------------------------------------------------------------ drill-down
    permalink.copy_link(*permalink.heatmap_link(db_choice, sweep, plotted, metric), key="hm_link",
                        label="🔗 Copy link to this cell")
    cell_examples(stored, plotted, metric, stem)
    return metric
