"""Heatmaps: browse a stored sweep: model x perturbation heatmap with drill-down, NoiseQA and
DuReader views, the German paper's penalty table; every table as CSV, every figure as HTML/PNG.

Numbers come from core.sweeps.report (cells, drill-down, DPR, traps, penalty table) and
core.sweeps.tables (NoiseQA layouts); the figures from components.heatmap / components.sweep_figures.
The heatmap is drawn with square scatter markers because Streamlit reports clicks on scatter
points but not on heatmap cells: clicking a cell selects it, and a select box does the same
without a mouse.
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components import error_views, persist
from components.choice import keep_valid
from components.export import csv_download, figure_downloads, file_stem
from components.frame import page_frame
from components.heatmap import METRICS, VALUES, format_value, heatmap_figure
from components.highlight import Mark, color_for, highlight_html, legend_html
from components.sweep_db import db_path_input, md_escape, stored_sweeps_or_stop
from components.sweep_figures import breakdown_figure, bucket_figure
from components.text import html_text
from core.sweeps import aggregates as aggregates
from core.sweeps import drill as sweep_drill
from core.sweeps import report as report
from core.sweeps import tables as views

page_frame()
st.title("Heatmaps")
st.caption("How much each model's score moves under each perturbation of a stored sweep, coloured by the "
           "German paper's bands with its robustness penalty (lower = more robust). Click a cell (or pick "
           "it below) to see its examples. Run sweeps on the **Sweeps** page or with `python -m core.sweeps`.")


db_path = db_path_input("hm")
sweeps = stored_sweeps_or_stop(
    db_path, f"No sweep database at {db_path}. Run a sweep first (Sweeps page, or "
             "`python -m core.sweeps --dataset ... --perturbations ... --models ...`).")

by_id = {s["id"]: s for s in sweeps}
newest_first = list(reversed(list(by_id)))
persist.keep("hm_sweep", newest_first)
persist.keep_all(["hm_metric", "hm_value"])
keep_valid("hm_sweep", newest_first)
sweep_id = st.selectbox("Sweep", newest_first, key="hm_sweep",
                        format_func=lambda i: f"{by_id[i]['name']} · {by_id[i]['dataset']}")
sweep = by_id[sweep_id]
stem = file_stem(sweep["name"])
version = (sweep["updated_at"], sweep["done_units"])  # cache key: changes whenever rows are added
st.caption(md_escape(
    f"{sweep['dataset']} · {sweep['n_examples']} examples · models {', '.join(sweep['models'])} · "
    f"{len(sweep['perturbations'])} perturbation specs · repeats {sweep['config'].get('repeats')} · "
    f"seed {sweep['config'].get('seed')} · {sweep['done_units']:,}/{sweep['total_units']:,} result rows · "
    f"status {sweep['status']} · updated {sweep['updated_at']}"))
file_sources = [f"{sp['label']}: {sp['source']}" for sp in report.sweep_specs(db_path, sweep_id)
                if sp["perturbation"].startswith("file:")]
if file_sources:   # how each challenge file was paired with the data set (rule and counts)
    st.caption(md_escape("Challenge files: " + " · ".join(file_sources)))
if sweep["done_units"] < sweep["total_units"]:
    st.warning("This sweep is incomplete: the numbers cover the rows stored so far (resume it on the Sweeps "
               "page, or reload this page while it runs).")


# The slow aggregates come from the sweep's database when they were stored as it finished
# (core.sweeps.aggregates), else they are computed here.
def stored_version(version) -> str:
    return aggregates.version_of({"updated_at": version[0], "done_units": version[1]})



@st.cache_data(show_spinner=False, max_entries=16)
def load_cells(db: str, sid: int, version) -> list:
    return aggregates.cells(db, sid, stored_version(version))


@st.cache_data(show_spinner=False, max_entries=64)
def load_across(db: str, sid: int, version, perturbation: str, params_json: str, example_hash: str, repeat: int):
    return sweep_drill.example_across_models(db, sid, perturbation, params_json, example_hash, repeat)


@st.cache_data(show_spinner="Finding trap sentences…", max_entries=16)
def load_traps(db: str, sid: int, version, perturbation: str | None, params_json: str | None) -> dict:
    if perturbation is None:
        return aggregates.clean_traps(db, sid, stored_version(version))
    return report.f1_by_trap_similarity(db, sid, perturbation=perturbation, params=params_json)


cells = load_cells(str(db_path), sweep_id, version)
if not cells:
    st.info("This sweep has no cells.")
    st.stop()

# ------------------------------------------------------------------------------------- clean scores

clean = report.clean_scores(db_path, sweep_id)
clean_df = pd.DataFrame([{"model": m, "clean EM": round(s["em"], 2), "clean F1": round(s["f1"], 2), "N": s["n"]}
                         for m, s in clean.items()])

# -------------------------------------------------------------------------------------------- heatmap

st.subheader("Model × perturbation")
c1, c2 = st.columns(2)
metric = c1.radio("Metric", list(METRICS), format_func=METRICS.get, horizontal=True, key="hm_metric")
value = c2.radio("Cells show", list(VALUES), format_func=VALUES.get, horizontal=True, key="hm_value",
                 help="The colour is always the band of the % change of the metric (SEEDS.md §4), and each "
                      "cell's second line its penalty.")
totals = report.penalty_totals(cells, metric)


def clicked_cells() -> list[int]:
    """Indices of the cells selected by a click on the chart (its state, read before it is redrawn,
    so the outline and the select box below follow the click in the same rerun)."""
    state = st.session_state.get("hm_chart") or {}
    selection = state.get("selection") if hasattr(state, "get") else None
    points = (selection or {}).get("points") or []
    return [int(p["customdata"][0]) for p in points if p.get("customdata")]


clicked = clicked_cells()
if st.session_state.get("hm_cell_of") != sweep_id:  # another sweep: its first cell
    st.session_state["hm_cell_of"] = sweep_id
    st.session_state["hm_cell"] = 0
keep_valid("hm_cell", list(range(len(cells))))
if clicked and clicked != st.session_state.get("hm_last_click"):
    st.session_state["hm_cell"] = clicked[0]
st.session_state["hm_last_click"] = clicked
fig, plotted = heatmap_figure(cells, metric, value, totals=totals, models=sweep["models"],
                              highlight=st.session_state.get("hm_cell", 0))
st.plotly_chart(fig, on_select="rerun", selection_mode="points", key="hm_chart", width="content",
                theme=None, config={"displayModeBar": False})
st.caption("Columns are grouped by family (names above the plot). The y labels carry each model's penalty total "
           "(Σ). Hover a cell for clean and perturbed scores and N; click it for its examples.")
figure_downloads(fig, file_stem("heatmap", stem, metric, value), "hm_fig")

penalty_df = pd.DataFrame([
    {"model": m, "penalty total (F1)": report.penalty_totals(cells, "f1").get(m, 0),
     "penalty total (EM)": report.penalty_totals(cells, "em").get(m, 0),
     "clean EM": clean.get(m, {}).get("em"), "clean F1": clean.get(m, {}).get("f1"),
     "cells scored": sum(1 for c in cells if c.model == m and c.n)} for m in sweep["models"]])
c1, c2 = st.columns(2)
with c1:
    st.markdown("**Penalty total per model** (sum of the cells' penalties; lower = more robust)")
    st.dataframe(penalty_df.round(2), hide_index=True, key="hm_penalties")
    csv_download(penalty_df, file_stem("penalties", stem), "hm_penalties_csv")
with c2:
    st.markdown("**Clean scores** (all examples of the sweep)")
    st.dataframe(clean_df, hide_index=True, key="hm_clean")
    csv_download(clean_df, file_stem("clean", stem), "hm_clean_csv")
cells_df = pd.DataFrame(views.cell_rows(cells, sweep["models"]))
with st.expander("All cells as a table"):
    st.dataframe(cells_df, hide_index=True, key="hm_cells")
csv_download(cells_df, file_stem("cells", stem), "hm_cells_csv", "CSV of all cells")

# ------------------------------------------------------------------------------------ model vs model

@st.cache_data(show_spinner="Resampling examples (paired bootstrap)…", max_entries=16)
def load_differences(db: str, sid: int, version, model_a: str, model_b: str) -> list:
    return aggregates.model_differences(db, sid, stored_version(version), model_a, model_b)


if len(sweep["models"]) >= 2:
    st.subheader("Model vs model: which differences are real?")
    st.caption("B − A in F1 points on the examples both models were scored on, with a 95% paired-bootstrap "
               "interval over those examples (2,000 resamples, seed 0). **Significant** = the interval excludes 0. "
               "It says how much the choice of questions alone could move the difference, not how much "
               "retraining with another seed would.")
    c1, c2 = st.columns(2)
    model_a = c1.selectbox("Model A", sweep["models"], index=0, key="hm_diff_a")
    model_b = c2.selectbox("Model B", [m for m in sweep["models"] if m != model_a], index=0, key="hm_diff_b")
    diff_df = pd.DataFrame(load_differences(str(db_path), sweep_id, version, model_a, model_b))
    st.dataframe(diff_df.drop(columns=["perturbation", "params_json"]), hide_index=True, key="hm_diff")
    d1, d2, _ = st.columns([1, 1, 6])
    with d1:
        csv_download(diff_df, file_stem("model-differences", stem, model_a, model_b), "hm_diff_csv")
    d2.download_button("⬇ JSON", diff_df.to_json(orient="records", indent=1),
                       file_name=f"{file_stem('model-differences', stem, model_a, model_b)}.json",
                       mime="application/json", key="hm_diff_json")

# ---------------------------------------------------------------------------------------- drill-down

st.subheader("A cell's examples")


def cell_label(i: int) -> str:
    c = plotted[i]  # no metric-dependent numbers: the label must not change when the metric does
    return f"{c.model} · {c.label} · N={c.n}"


i = st.selectbox("Cell", list(range(len(plotted))), key="hm_cell", format_func=cell_label)
cell = plotted[i]
rows = report.cell_examples(db_path, sweep_id, cell.model, cell.perturbation, cell.params_json)
pen = getattr(cell, f"{metric}_penalty")
st.caption(md_escape(
    f"{cell.model} under {cell.label} ({cell.family}, changes the {cell.field}): {METRICS[metric]} "
    f"{format_value(getattr(cell, f'clean_{metric}'), 'score')} clean -> "
    f"{format_value(getattr(cell, metric), 'score')} perturbed "
    f"({format_value(getattr(cell, f'{metric}_pct'))} %, band {getattr(cell, f'{metric}_band') or '-'}, "
    f"penalty {'-' if pen is None else pen}). {len(rows)} scored rows over "
    f"{cell.n} examples and {cell.n_repeats} repeat(s), {cell.n_not_applicable} rows where it did not apply. "
    "Sorted by F1 loss (clean F1 − perturbed F1), largest first."))
if not rows:
    st.info("The perturbation applied to no example of this sweep for this model: nothing to show.")
else:
    ex_df = pd.DataFrame([{
        "example": r["example_id"], "repeat": r["repeat"], "original question": r["original_question"],
        "perturbed question": r["variant_question"], "gold": " | ".join(r["golds"]),
        "clean answer": r["clean_answer"], "perturbed answer": r["answer"],
        "clean F1": round(100 * r["clean_f1"], 1), "perturbed F1": round(100 * r["f1"], 1),
        "F1 loss": round(100 * r["f1_loss"], 1),
        "context perturbed": r["perturbed_context"] is not None} for r in rows])
    st.dataframe(ex_df, hide_index=True, key="hm_examples", width="stretch")
    csv_download(ex_df, file_stem("examples", stem, cell.model, cell.label), "hm_examples_csv")
    if st.session_state.get("hm_example_of") != (sweep_id, i):  # another cell: start at its largest loss
        st.session_state["hm_example_of"] = (sweep_id, i)
        st.session_state["hm_example"] = 0
    keep_valid("hm_example", list(range(len(rows))))
    k = st.selectbox("Example in detail", list(range(len(rows))), key="hm_example",
                     format_func=lambda j: f"{j + 1}. {rows[j]['example_id']} r{rows[j]['repeat']} · "
                                           f"F1 loss {100 * rows[j]['f1_loss']:.0f}")
    r = rows[k]
    st.markdown(f"**Original question:** {md_escape(r['original_question'])}")
    st.markdown(f"**Perturbed question:** {md_escape(r['variant_question'])}")
    # Every model of the sweep on this example, side by side (the cell is one model's).
    across = load_across(str(db_path), sweep_id, version, cell.perturbation, cell.params_json,
                         r["example_hash"], r["repeat"])
    colour_of = {o["model"]: color_for(j) for j, o in enumerate(across)}

    def f1_text(x) -> str:
        return "–" if x is None else f"{100 * x:.0f}"

    for col, o in zip(st.columns(len(across)), across):
        with col:
            chosen = " (this cell)" if o["model"] == cell.model else ""
            st.markdown(f'<div style="border-left:6px solid {colour_of[o["model"]]};padding-left:.5rem">'
                        f"<b>{html_text(o['model'])}</b>{html_text(chosen)}</div>", unsafe_allow_html=True)
            st.text(f"clean: {o['clean_answer'] or '∅'}  (F1 {f1_text(o['clean_f1'])})")
            st.text(f"perturbed: {o['answer'] or '∅'}  (F1 {f1_text(o['f1'])})"
                    if o["status"] == "ok" else f"perturbed: {o['status'] or 'not stored'}")
    show = st.radio("Marked in the context", ["perturbed answers", "clean answers"], horizontal=True,
                    key="hm_show_answers")

    def gold_spans(context: str, golds: list[str], starts: list[int] | None = None) -> list[tuple[int, int]]:
        if starts is not None and len(starts) == len(golds):
            return [(s, s + len(g)) for g, s in zip(golds, starts)]
        found = [(context.find(g), len(g)) for g in golds if g and context.find(g) >= 0]
        return [(s, s + n) for s, n in found]

    def marks(start, end, label, colour) -> list[Mark]:
        return [Mark(label, start, end, colour)] if start is not None and end is not None and end > start else []

    st.markdown(legend_html([(o["model"], colour_of[o["model"]]) for o in across]), unsafe_allow_html=True)
    if show == "clean answers" or r["perturbed_context"] is None:
        prefix = "clean" if show == "clean answers" else "span"
        all_marks = [m for o in across for m in marks(o[f"{prefix}_start"], o[f"{prefix}_end"], o["model"],
                                                         colour_of[o["model"]])]
        golds = (gold_spans(r["context"], r["golds"]) if show == "clean answers" else
                 gold_spans(r["context"], r["perturbed_golds"] or r["golds"], r["perturbed_gold_starts"] or None))
        st.markdown(highlight_html(r["context"], all_marks, golds), unsafe_allow_html=True)
    else:
        st.markdown("Perturbed context, perturbed answers:")
        all_marks = [m for o in across for m in marks(o["span_start"], o["span_end"], o["model"], colour_of[o["model"]])]
        st.markdown(highlight_html(r["perturbed_context"], all_marks,
                                   gold_spans(r["perturbed_context"], r["perturbed_golds"],
                                              r["perturbed_gold_starts"])), unsafe_allow_html=True)

# ------------------------------------------------------------------------------- German paper's table

st.subheader("Penalty by number of perturbed words / characters")
# The parameter with more distinct values first (the one core.sweeps.report.penalty_table picks).
distinct = {p: len({c.params[p] for c in cells if p in c.params}) for p in ("n_chars", "n_words")}
params_present = sorted((p for p, k in distinct.items() if k), key=lambda p: -distinct[p])
if not params_present:
    st.info("This sweep has no perturbation with an n_words or n_chars parameter (the German paper's "
            "character- and word-level perturbations, e.g. DCRQ with n_chars 1..4).")
else:
    keep_valid("hm_n_param", params_present)
    param = st.radio("n counts", params_present, horizontal=True, key="hm_n_param") \
        if len(params_present) > 1 else params_present[0]
    ptable = report.penalty_table(db_path, sweep_id, param=param, metric=metric)
    pen_df = pd.DataFrame(views.penalty_rows(ptable))
    st.caption(f"Sum of the {METRICS[metric]} penalties of each model's cells whose spec has {param} = n "
               f"(specs per n: {', '.join(f'{n}: {k}' for n, k in ptable['cells'].items())}).")
    st.dataframe(pen_df, hide_index=True, key="hm_penalty_n")
    csv_download(pen_df, file_stem("penalty-by-n", stem, param, metric), "hm_penalty_n_csv")

# --------------------------------------------------------------------------------------------- NoiseQA

st.subheader("NoiseQA: interface noise")
@st.cache_data(show_spinner="Measuring CER / WER / BLEU of the noisy questions…", max_entries=16)
def load_noise_rates(db: str, sid: int, version) -> dict:
    return aggregates.noise_rates(db, sid, stored_version(version))


noise_rates = load_noise_rates(str(db_path), sweep_id, version)
noise_rows = views.noiseqa_table(cells, noise_rates)
if not noise_rows:
    st.info("This sweep has no interface-noise perturbation (keyboard, ASR or MT family: keyboard_Q, misspell_Q, "
            "typo_Q, asr_Q, backtranslate_Q, or a NoiseQA challenge file).")
else:
    st.markdown("**Clean vs noisy EM / F1** (Table 4 layout; clean = the same questions without noise), with "
                "each noisy set's CER / WER / BLEU against the original questions: Table 3 as the paper computes "
                "it (CER and WER lower-cased without punctuation, BLEU uncased as written) and the raw CER / WER "
                "(case and punctuation counted)")
    noise_df = pd.DataFrame(noise_rows)
    st.dataframe(noise_df, hide_index=True, key="hm_noiseqa")
    csv_download(noise_df, file_stem("noiseqa-table4", stem), "hm_noiseqa_csv")

    asr_rows = views.asr_breakdown(cells, noise_rates)
    if not asr_rows:
        st.info("This sweep has no ASR perturbation (asr_Q or an ASR challenge file): no per-voice plot.")
    else:
        asr_fig = breakdown_figure(asr_rows, "voice", METRICS[metric], facet="engine",
                                   title=f"ASR noise: {METRICS[metric]} per voice and ASR engine")
        st.plotly_chart(asr_fig, key="hm_asr_fig")
        asr_df = pd.DataFrame(asr_rows)
        csv_download(asr_df, file_stem("asr", stem), "hm_asr_csv")
        figure_downloads(asr_fig, file_stem("asr", stem, metric), "hm_asr")

    mt_rows = views.mt_breakdown(db_path, sweep_id, cells)
    if not mt_rows:
        st.info("This sweep has no machine-translation perturbation (backtranslate_Q or a translation challenge "
                "file): no per-source-language plot.")
    else:
        mt_fig = breakdown_figure(mt_rows, "source language", METRICS[metric],
                                  title=f"MT noise: {METRICS[metric]} per language translated into English")
        st.plotly_chart(mt_fig, key="hm_mt_fig")
        mt_df = pd.DataFrame(mt_rows)
        csv_download(mt_df, file_stem("mt", stem), "hm_mt_csv")
        figure_downloads(mt_fig, file_stem("mt", stem, metric), "hm_mt")

# ------------------------------------------------------------------------------------------- DuReader

st.subheader("DuReader-robust: over-sensitivity and over-stability")
specs = report.sweep_specs(db_path, sweep_id)
families = list(dict.fromkeys(s["family"] for s in specs))
keep_valid("hm_dpr_families", families)
dpr_families = st.multiselect(
    "Perturbation families counted as paraphrases for DPR", families,
    default=[f for f in families if f == "paraphrase"], key="hm_dpr_families",
    help="DPR = share of (original, perturbed) question pairs whose predictions differ. The paper uses "
         "paraphrases; other question perturbations can be counted the same way.")
if not dpr_families:
    st.info("No family chosen" + ("" if "paraphrase" in families else
                                  " (this sweep has no paraphrase-family perturbation)") + ": no DPR.")
else:
    dpr_rows = report.dpr_table(db_path, sweep_id, families=dpr_families)
    if not dpr_rows:
        st.info("No scored pair in the chosen families.")
    else:
        label_of = {(s["perturbation"], s["params_json"]): s["label"] for s in specs}
        dpr_df = pd.DataFrame([{"model": d["model"],
                                "perturbation": label_of.get((d["perturbation"], d["params_json"]), d["perturbation"]),
                                "N pairs": d["n"], "DPR %": round(d["dpr"], 2)} for d in dpr_rows])
        st.markdown("**DPR per model** (“(all)” pools the model's pairs)")
        st.dataframe(dpr_df, hide_index=True, key="hm_dpr")
        csv_download(dpr_df, file_stem("dpr", stem), "hm_dpr_csv")
        sim = report.dpr_by_similarity(db_path, sweep_id, families=dpr_families)
        sim_fig = bucket_figure(sim, "DPR (%)", "similarity of perturbed to original question (token F1)",
                                title="DPR against question similarity")
        st.plotly_chart(sim_fig, key="hm_dpr_fig")
        sim_df = pd.DataFrame([{"model": m, "bucket": b["label"], "N": b["n"],
                                "DPR %": None if b["mean"] is None else round(b["mean"], 2)}
                               for m, bs in sim.items() for b in bs])
        csv_download(sim_df, file_stem("dpr-by-similarity", stem), "hm_dpr_sim_csv")
        figure_downloads(sim_fig, file_stem("dpr-by-similarity", stem), "hm_dpr_sim")

trap_sources = {"clean": "clean questions"} | {
    json.dumps([s["perturbation"], s["params_json"]]): s["label"] for s in specs}
keep_valid("hm_trap_source", list(trap_sources))
trap_key = st.selectbox("F1 against question-trap similarity, for", list(trap_sources), key="hm_trap_source",
                        format_func=trap_sources.get,
                        help="A trap = a context sentence with an entity of the answer's type that is not the "
                             "answer; similarity = token F1 between the trap sentence and the question.")
pert, pj = (None, None) if trap_key == "clean" else json.loads(trap_key)
traps = load_traps(str(db_path), sweep_id, version, pert, pj)
st.caption(f"{traps['with_trap']} examples have a trap sentence, {traps['without_trap']} none (only those with "
           f"one are plotted); trap found by: {', '.join(f'{k} {v}' for k, v in traps['methods'].items()) or '-'}.")
if traps["buckets"]:
    trap_fig = bucket_figure(traps["buckets"], "F1 (%)", "similarity of trap sentence to question (token F1)",
                             title=f"F1 against question-trap similarity ({trap_sources[trap_key]})")
    st.plotly_chart(trap_fig, key="hm_trap_fig")
    trap_df = pd.DataFrame([{"model": m, "bucket": b["label"], "N": b["n"],
                             "F1 %": None if b["mean"] is None else round(b["mean"], 2)}
                            for m, bs in traps["buckets"].items() for b in bs])
    csv_download(trap_df, file_stem("f1-by-trap-similarity", stem), "hm_trap_csv")
    figure_downloads(trap_fig, file_stem("f1-by-trap-similarity", stem), "hm_trap")

# ------------------------------------------------------------------------------------ error analysis
# NoiseQA's repair table, slices, confidence and abstention (components.error_views).
error_views.repair_section(db_path, sweep_id, version, stem)
error_views.slices_section(db_path, sweep_id, version, stem, sweep["models"])
error_views.calibration_section(db_path, sweep_id, version, stem)
