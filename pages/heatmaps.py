"""Heatmaps: browse a stored sweep: model x perturbation heatmap with drill-down, NoiseQA and
DuReader views, the German paper's penalty table; every table as CSV, every figure as HTML/PNG.

Numbers come from one read handle of the chosen sweep (core.sweeps.analysis.stored.StoredSweep,
cached per database, sweep and version by components.loaders.stored_sweep) and the tables built
from them (core.sweeps.analysis.tables);
the figures from core.render.heatmap; the sections below the heatmap from components.heatmaps.cell_drill
(a cell's examples), components.heatmaps.rows_table (every answer as one table),
components.heatmaps.paper_views (penalty by n, NoiseQA, DuReader-robust) and
components.heatmaps.error_views (repair, slices, calibration).
The heatmap tab itself is components.heatmaps.heatmap_tab.
"""
from __future__ import annotations

import streamlit as st

from components import loaders, permalink, persist
from components.choice import keep_valid
from components.demo_sweep import offer_demo_sweep
from components.export import file_stem
from components.frame import page_frame
from components.heatmaps import error_views, natural_match, paper_views, route_view
from components.heatmaps.backend_flips import backend_flips_apply, backend_flips_section
from components.heatmaps.heatmap_tab import heatmap_tab
from components.heatmaps.llm_alignment import alignment_section
from components.heatmaps.model_differences import model_differences_section
from components.heatmaps.noise_curves import noise_curve_section
from components.heatmaps.report_download import report_downloads
from components.heatmaps.rows_table import rows_section
from components.sweep_db_picker import db_path_input, demo_caption, label, stored_sweeps_or_stop
from components.text import md_escape
from core.config import shown_dataset
from core.explore import demo_sweep
from core.sweeps.analysis import aggregates as aggregates
from core.sweeps.analysis import tables as views
from core.sweeps.analysis.alignment import generative_models
from core.sweeps.analysis.stored import list_sweeps

page_frame()
st.title("Heatmaps")
st.caption("How much each model's score moves under each perturbation of a stored sweep, coloured by the "
           "German paper's bands with its robustness penalty (lower = more robust). Click a cell (or pick "
           "it below) to see its examples. Run sweeps on the **Sweeps** page or with `python -m core.sweeps`.")


link = permalink.opened_heatmaps()   # a link's database, sweep, tab and cell, once (components/permalink.py)
db_choice = db_path_input("hm")   # a fresh clone opens on the bundled demo sweep
db_path = db_choice.path
demo_caption(db_choice)


def _no_sweep(path) -> bool:
    """No sweep to show (a damaged file is not 'empty': stored_sweeps_or_stop says why)."""
    if not path.exists():
        return True
    try:
        return not list_sweeps(path)
    except Exception:
        return False


if _no_sweep(db_path):   # an empty database chosen: a one-click demo sweep into it instead of an empty page
    offer_demo_sweep("hm", db_path, "This sweep database holds no sweep yet: the heatmaps show a stored sweep.")
    st.stop()
sweeps = stored_sweeps_or_stop(
    db_path, f"No sweep database at {md_escape(label(str(db_path)))}. Run a sweep first (Sweeps page, or "
             "`python -m core.sweeps --dataset ... --perturbations ... --models ...`).")

by_id = {s["id"]: s for s in sweeps}
newest_first = demo_sweep.user_first(list(reversed(list(by_id))), by_id)   # the demo after the user's own
link = permalink.apply_sweep(link, sweeps)
persist.keep("hm_sweep", newest_first)
persist.keep_all(["hm_metric", "hm_value", "hm_layout"])
keep_valid("hm_sweep", newest_first)
sweep_id = st.selectbox("Sweep", newest_first, key="hm_sweep",
                        format_func=lambda i: f"{by_id[i]['name']} · {shown_dataset(by_id[i]['dataset'])}")
# One read handle for every view below; a new version (rows added) is a new handle.
stored = loaders.stored_sweep(str(db_path), sweep_id, aggregates.version_of(by_id[sweep_id]))
sweep = stored.info
stem = file_stem(sweep["name"])
st.caption(md_escape(
    f"{shown_dataset(sweep['dataset'])} · {sweep['n_examples']} examples · models {', '.join(sweep['models'])} · "
    f"{len(sweep['perturbations'])} perturbation specs · repeats {sweep['config'].get('repeats')} · "
    f"seed {sweep['config'].get('seed')} · {sweep['done_units']:,}/{sweep['total_units']:,} result rows · "
    f"status {sweep['status']} · updated {sweep['updated_at']}"))
file_sources = [f"{sp['label']}: {sp['source']}" for sp in stored.specs()
                if sp["perturbation"].startswith("file:")]
if file_sources:   # how each challenge file was paired with the data set (rule and counts)
    st.caption(md_escape("Challenge files: " + " · ".join(file_sources)))
if sweep["done_units"] < sweep["total_units"]:
    st.warning("This sweep is incomplete: the numbers cover the rows stored so far (resume it on the Sweeps "
               "page, or reload this page while it runs).")
report_downloads(stored)   # every view below in one file (core.reports)

# The cells come from the sweep's database when they were stored as it finished
# (core.sweeps.analysis.aggregates), else the handle computes them.
cells = stored.cells()
if not cells:
    st.info("This sweep has no cells.")
    st.stop()

clean = stored.clean_scores()


# One tab per view that applies to this sweep (a view with nothing to show is left out); they wrap onto a
# second line in a narrow window (components/frame.py's CSS) instead of running behind an arrow.
has_n = bool(views.n_parameters(cells))
has_noise = any(views.interface_of(c.perturbation, c.family) for c in cells)
has_repair = any("repair_Q" in c.perturbation for c in cells)
tab_names = (["Heatmap", "Rows"] + (["Model vs model"] if len(sweep["models"]) >= 2 else [])
             + (["Penalty by n"] if has_n else []) + (["NoiseQA"] if has_noise else [])
             + ["DuReader-robust"] + (["Repair"] if has_repair else []) + ["Slices & calibration"]
             + ["Noise curves"] + (["Backend flips"] if backend_flips_apply(stored, sweeps) else [])
             + (["LLM answers"] if (readers := generative_models(sweep["models"])) else [])
             + ["Translate or answer?", "Natural against synthetic"])
# on_change="rerun": each tab knows whether it is shown (``.open``), so a costly one can wait until it is
tabs = dict(zip(tab_names, st.tabs(tab_names, key="hm_tabs", on_change="rerun",
                                   default=permalink.tab(link, tab_names))))


def shown(name: str) -> bool:
    """Whether the tab ``name`` is there and open: Streamlit runs the code of a hidden tab too, so
    every tab but the heatmap (the model comparison's bootstrap, the slices, the curves, XQuAD's
    routes) is built only while it is the one shown."""
    return name in tabs and tabs[name].open


with tabs["Heatmap"]:   # the heatmap, its tables and a cell's examples (components.heatmaps.heatmap_tab)
    metric = heatmap_tab(stored, sweep, sweep_id, cells, clean, link, db_choice, stem)

# Every answer as one filterable table, linked to the drill-down, Ask and Variants (components.heatmaps.rows_table).
with tabs["Rows"]:
    if shown("Rows"):   # a large sweep's table takes seconds (slices, noise)
        rows_section(stored, stem)

# ------------------------------------------------------------------------------------ model vs model
if shown("Model vs model"):
    with tabs["Model vs model"]:
        model_differences_section(stored, sweep["models"], stem)

# ------------------------------------------------------------ the papers' views (components.heatmaps.paper_views)

if shown("Penalty by n"):
    with tabs["Penalty by n"]:
        paper_views.penalty_by_n_section(stored, metric, stem)
if shown("NoiseQA"):
    with tabs["NoiseQA"]:
        paper_views.noiseqa_section(stored, metric, stem)
if shown("DuReader-robust"):
    with tabs["DuReader-robust"]:
        paper_views.dureader_section(stored, stem)

# ------------------------------------------------------------------------------------ error analysis
# NoiseQA's repair table, slices, confidence and abstention (components.heatmaps.error_views).
if shown("Repair"):
    with tabs["Repair"]:
        error_views.repair_section(stored, stem)
if shown("Slices & calibration"):
    with tabs["Slices & calibration"]:
        error_views.slices_section(stored, stem)
        error_views.calibration_section(stored, stem)

# F1 against each variant's measured noise, with break points (components.heatmaps.noise_curves).
if shown("Noise curves"):
    with tabs["Noise curves"]:
        noise_curve_section(stored, stem)

# Answers that change between this sweep and one run with another engine backend (components.heatmaps.backend_flips).
if shown("Backend flips"):
    with tabs["Backend flips"]:
        backend_flips_section(stored, sweeps, stem)

# How a generative reader's answers were found in the passage, per spec (components.heatmaps.llm_alignment).
if shown("LLM answers"):
    with tabs["LLM answers"]:
        alignment_section(stored, readers, stem)

# ------------------------------------------------------------- translate or answer in the language?
# Not a view of this sweep: XQuAD's parallel questions by route (components.heatmaps.route_view).
if shown("Translate or answer?"):
    with tabs["Translate or answer?"]:
        route_view.render(loaders.multilingual_models())
# Not a view of this sweep either: real people's noise against synthetic settings (components.heatmaps.natural_match).
if shown("Natural against synthetic"):
    with tabs["Natural against synthetic"]:
        natural_match.render()
