"""Heatmaps sections for error analysis of a stored sweep (each table and figure exportable):

* :func:`repair_section` - NoiseQA's mitigation table (core.sweeps.analysis.repair): per interface and model,
  clean / noisy / noisy + repair per setting, the gain with its 95% paired-bootstrap interval;
* :func:`slices_section` - one slice at a time (core.sweeps.analysis.slices): a table and a heatmap of F1
  per group x spec with N in every cell, and a cell's examples;
* :func:`calibration_section` - answer scores clean vs perturbed, F1 against coverage, and the
  threshold that keeps 90% of clean F1 (core.sweeps.analysis.calibration).
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.export import csv_download, download, figure_downloads, file_stem, json_download
from components.text import md_escape
from core.sweeps.analysis import calibration as calib
from core.sweeps.analysis import repair as repair
from core.sweeps.analysis import slices as slices
from core.sweeps.analysis.stored import StoredSweep


def repair_section(sweep: StoredSweep, stem: str) -> None:
    st.subheader("NoiseQA: question repair")
    with st.spinner("Pairing repaired and noisy questions (bootstrap intervals)…"):
        rows = sweep.repair_table()
    if not rows:
        st.info("This sweep has no repaired spec. Chain repair_Q after a noise to measure NoiseQA's mitigation, "
                "e.g. `keyboard_Q,keyboard_Q+repair_Q:mode=content|entities|all` or "
                "`file:noiseqa/Synthetic/xquad-asr-synthetic+repair_Q:mode=none:spellcheck=true`.")
        return
    st.caption("Each row: one noise, one model (a noise-trained twin is one more model), one repair setting. "
               "Noisy and repaired F1 on the same questions; gain = repaired − noisy with a 95% paired-bootstrap "
               "interval over questions (significant when it excludes 0); 'changed %' = questions the repair "
               "changed.")
    df = pd.DataFrame(rows)
    st.dataframe(df, hide_index=True, key="hm_repair_table")
    wide = df.pivot_table(index=["interface", "kind", "noise", "model"], columns="setting", values="gain",
                          sort=False).reset_index()
    fig = go.Figure()
    for setting in dict.fromkeys(df["setting"]):
        part = df[df["setting"] == setting]
        # store text in plotly labels is escaped: plotly draws "<a href>" in one as a link
        labels = [html.escape(f"{r['noise']} · {r['model']}") for _, r in part.iterrows()]
        fig.add_bar(name=html.escape(setting), x=labels, y=part["gain"],
                    error_y=dict(type="data", symmetric=False, array=part["ci95_high"] - part["gain"],
                                 arrayminus=part["gain"] - part["ci95_low"]))
    fig.update_layout(barmode="group", title="Gain in F1 from repairing the question (95% interval)",
                      yaxis_title="F1 gain (points)", height=460, legend_title="repair")
    st.plotly_chart(fig, key="hm_repair_fig")
    c1, c2 = st.columns(2)
    with c1:
        csv_download(df, file_stem("repair", stem), "hm_repair_csv", "CSV (all rows)")
    with c2:
        csv_download(wide, file_stem("repair-gains", stem), "hm_repair_wide_csv", "CSV (gains, wide)")
    download("⬇ JSON", repair.repair_json(rows), f"{file_stem('repair', stem)}.json", "application/json",
             "hm_repair_json")
    figure_downloads(fig, file_stem("repair", stem), "hm_repair")


def slices_section(sweep: StoredSweep, stem: str) -> None:
    st.subheader("Slices: where do the models lose?")
    name = st.selectbox("Slice by", list(slices.SLICES), format_func=slices.SLICES.get, key="hm_slice")
    with st.spinner("Slicing the sweep…"):
        cells = [c.as_dict() for c in sweep.slice_cells(name)]
    if not cells:
        st.info("No scored rows to slice yet.")
        return
    df = pd.DataFrame(cells)
    model = st.selectbox("Model", list(dict.fromkeys(df["model"])), key="hm_slice_model")
    mine = df[df["model"] == model]
    groups = list(dict.fromkeys(mine["slice group"]))
    every = list(dict.fromkeys(mine["spec"]))
    # Many columns make unreadable cells: by default the clean column and the specs that are not repairs.
    default = [s for s in every if "repair_Q" not in s][:12] or every[:12]
    specs = st.multiselect("Columns", every, default=default, key=f"hm_slice_cols_{name}") or every[:1]
    mine = mine[mine["spec"].isin(specs)]
    z, text = [], []
    for g in groups:
        zr, tr = [], []
        for s in specs:
            row = mine[(mine["slice group"] == g) & (mine["spec"] == s)]
            f1 = row["F1"].iloc[0] if len(row) else None
            n = int(row["N"].iloc[0]) if len(row) else 0
            drop = row["F1 drop"].iloc[0] if len(row) and row["perturbation"].iloc[0] else None
            zr.append(None if f1 is None or pd.isna(f1) else f1)
            # a perturbation's cell may hold fewer questions than the clean column (those it could change):
            # its change is against clean F1 on its own questions, not against the clean column beside it
            change = "" if drop is None or pd.isna(drop) else f" ({-drop:+.1f})"
            tr.append("–" if n == 0 or f1 is None or pd.isna(f1) else f"{f1:.1f}{change}<br>N={n}")
        z.append(zr)
        text.append(tr)
    fig = go.Figure(go.Heatmap(z=z, x=[html.escape(x) for x in specs], y=[html.escape(g) for g in groups], text=text,
                               texttemplate="%{text}", colorscale="RdYlGn",
                               zmin=0, zmax=100, colorbar=dict(title="F1")))
    fig.update_layout(title=html.escape(f"F1 of {model} by {slices.SLICES[name]} (N per cell)"),
                      height=max(320, 60 * len(groups) + 160), yaxis=dict(autorange="reversed"))
    st.plotly_chart(fig, key="hm_slice_fig")
    st.caption("In brackets: the change against clean F1 on the same questions (a perturbation's cell holds only "
               "the questions it could change, so it can hold fewer than the clean column beside it).")
    st.dataframe(mine, hide_index=True, key="hm_slice_table")
    csv_download(df, file_stem("slice", name, stem), "hm_slice_csv", "CSV (every model)")
    figure_downloads(fig, file_stem("slice", name, model, stem), "hm_slice")

    st.markdown("**A slice cell's examples**")
    c1, c2 = st.columns(2)
    group = c1.selectbox("Group", groups, key=f"hm_slice_group_{name}")
    options = [r for _, r in mine[mine["slice group"] == group].iterrows() if r["N"]]
    if not options:
        st.caption("No scored example in this group.")
        return
    pick = c2.selectbox("Column", list(range(len(options))), key=f"hm_slice_col_{name}",
                        format_func=lambda i: f"{options[i]['spec']} (N={options[i]['N']})")
    chosen = options[pick]
    rows = sweep.slice_examples(name, group, model, chosen["perturbation"], chosen["params"])
    shown = []
    for r in rows:
        if chosen["perturbation"] == "":
            shown.append({"id": r["id"], "question": r["question"], "answer": r["answer"],
                          "gold": " | ".join(r["golds"]), "F1 %": round(100 * r["f1"], 1)})
        else:
            shown.append({"id": r["example_id"], "repeat": r["repeat"], "question": r["original_question"],
                          "question as perturbed": r["variant_question"], "clean answer": r["clean_answer"],
                          "answer": r["answer"], "gold": " | ".join(r["golds"]),
                          "clean F1 %": None if r["clean_f1"] is None else round(100 * r["clean_f1"], 1),
                          "F1 %": None if r["f1"] is None else round(100 * r["f1"], 1)})
    sdf = pd.DataFrame(shown)
    st.caption(md_escape(f"{len(shown)} rows, largest F1 loss first."))
    st.dataframe(sdf, hide_index=True, key="hm_slice_examples")
    csv_download(sdf, file_stem("slice-examples", name, group, stem), "hm_slice_examples_csv")


def calibration_section(sweep: StoredSweep, stem: str) -> None:
    st.subheader("Confidence and abstention")
    with st.spinner("Reading answer scores…"):
        rows = sweep.calibration_table()
    if not rows:
        st.info("No scored rows yet.")
        return
    st.caption("Answer score = p(start) × p(end) of the span. If a model abstained below a score threshold, which "
               "threshold keeps 90% of its clean F1 under each perturbation (answered F1 = mean F1 over the "
               "questions it still answers), and how many questions would it still answer?")
    df = pd.DataFrame(rows)
    st.dataframe(df, hide_index=True, key="hm_calib_table")
    csv_download(df, file_stem("abstention", stem), "hm_calib_csv")
    options = [r for r in rows if r["N"]]
    if not options:
        return
    pick = st.selectbox("Distributions and coverage curve for", list(range(len(options))), key="hm_calib_pick",
                        format_func=lambda i: f"{options[i]['model']} · {options[i]['spec']}")
    row = options[pick]
    pts = sweep.score_samples(row["model"], row["perturbation"], row["params"])
    hist = go.Figure()
    for label, key in (("clean", "clean"), ("perturbed", "perturbed")):
        hist.add_histogram(x=[s for s, _ in pts[key]], name=label, xbins=dict(start=0, end=1, size=0.05),
                           opacity=0.6)
    hist.update_layout(barmode="overlay", title=html.escape(f"Answer scores, {row['model']}: clean vs {row['spec']}"),
                       xaxis_title="score", yaxis_title="questions", height=380)
    st.plotly_chart(hist, key="hm_calib_hist")
    curve = go.Figure()
    for label, key in (("clean", "clean"), ("perturbed", "perturbed")):
        pts_curve = calib.coverage_curve(pts[key])
        curve.add_scatter(x=[p["coverage"] for p in pts_curve], y=[p["answered F1"] for p in pts_curve],
                          mode="lines", name=label)
    if row["clean F1"] is not None:
        curve.add_hline(y=0.9 * row["clean F1"], line_dash="dot", annotation_text="90% of clean F1")
    curve.update_layout(title="F1 of the answered questions against coverage (abstaining below a threshold)",
                        xaxis_title="coverage (% answered)", yaxis_title="answered F1 (%)", height=380)
    st.plotly_chart(curve, key="hm_calib_curve")
    # one row per figure: two downloads side by side inside half a page are cut off at 800 px
    st.caption("Score histogram:")
    figure_downloads(hist, file_stem("scores", row["model"], row["spec"], stem), "hm_calib_hist_dl")
    st.caption("Coverage curve:")
    figure_downloads(curve, file_stem("coverage", row["model"], row["spec"], stem), "hm_calib_curve_dl")
    curve_df = pd.DataFrame([{"set": k, **p} for k in ("clean", "perturbed") for p in calib.coverage_curve(pts[k])])
    csv_download(curve_df, file_stem("coverage", row["model"], row["spec"], stem), "hm_calib_curve_csv",
                 "CSV (coverage curves)")
    json_download(pts, file_stem("scores", row["model"], stem), "hm_calib_json", "JSON (scores)")
