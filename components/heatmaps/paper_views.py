"""Heatmaps' views from the papers, each a section of the page over a stored sweep:

* :func:`penalty_by_n_section` - the German paper's penalty table by the number of perturbed
  characters or words;
* :func:`noiseqa_section` - NoiseQA's interface noise: clean vs noisy EM/F1 (Table 4) with each
  noisy set's CER/WER/BLEU (Table 3), then per ASR voice/engine and per MT source language;
* :func:`dureader_section` - DuReader-robust's over-sensitivity (DPR per model and against question
  similarity) and over-stability (F1 against question-trap similarity).

The numbers come from the sweep's read handle (core.sweeps.analysis.stored.StoredSweep) and the
tables built from them (core.sweeps.analysis.tables); every table has its CSV and every figure its
HTML/PNG export.
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components.choice import keep_valid
from components.export import csv_download, figure_downloads, file_stem
from components.text import md_escape
from core.render.heatmap import METRICS
from core.render.sweep_figures import breakdown_figure, bucket_figure
from core.sweeps.analysis import tables as views
from core.sweeps.analysis.stored import StoredSweep


def penalty_by_n_section(sweep: StoredSweep, metric: str, stem: str) -> None:
    """The German paper's table: each model's penalty summed over the specs with n = 1, 2, ..."""
    st.subheader("Penalty by number of perturbed words / characters")
    params_present = views.n_parameters(sweep.cells())
    if not params_present:
        st.info("This sweep has no perturbation with an n_words or n_chars parameter (the German paper's "
                "character- and word-level perturbations, e.g. DCRQ with n_chars 1..4).")
    else:
        keep_valid("hm_n_param", params_present)
        param = st.radio("n counts", params_present, horizontal=True, key="hm_n_param") \
            if len(params_present) > 1 else params_present[0]
        ptable = sweep.penalty_table(param=param, metric=metric)
        pen_df = pd.DataFrame(views.penalty_rows(ptable))
        st.caption(f"Sum of the {METRICS[metric]} penalties of each model's cells whose spec has {param} = n "
                   f"({views.specs_per_n(ptable)}).")
        st.dataframe(pen_df, hide_index=True, key="hm_penalty_n")
        csv_download(pen_df, file_stem("penalty-by-n", stem, param, metric), "hm_penalty_n_csv")
        grid = views.n_grid(sweep.cells())
        if grid is not None:
            shared = ", ".join(f"{k}={v}" for k, v in grid.constants.items())
            st.markdown(f"**{METRICS[metric]} % change per perturbation and {md_escape(grid.param)}**"
                        + (f" ({md_escape(shared)} in every row with it)" if shared else "")
                        + ": N is the fewest examples a row's cells were scored on (the V operations apply to "
                          "the questions with a verb), penalty the sum of its cells' penalties.")
            grid_df = pd.DataFrame(views.n_grid_rows(sweep.cells(), metric, sweep.models))
            st.dataframe(grid_df, hide_index=True, key="hm_n_grid")
            csv_download(grid_df, file_stem("change-by-n", stem, grid.param, metric), "hm_n_grid_csv")


def noiseqa_section(sweep: StoredSweep, metric: str, stem: str) -> None:
    """NoiseQA's Tables 3 and 4 and the ASR / MT breakdowns (see module doc)."""
    st.subheader("NoiseQA: interface noise")
    cells = sweep.cells()
    with st.spinner("Measuring CER / WER / BLEU of the noisy questions…"):
        noise_rates = sweep.noise_rates()
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

        mt_rows = sweep.mt_breakdown()
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


def dureader_section(sweep: StoredSweep, stem: str) -> None:
    """DuReader-robust's DPR and trap-similarity views (see module doc)."""
    st.subheader("DuReader-robust: over-sensitivity and over-stability")
    specs = sweep.specs()
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
        dpr_rows = sweep.dpr_table(dpr_families)
        if not dpr_rows:
            st.info("No scored pair in the chosen families.")
        else:
            dpr_df = pd.DataFrame(views.dpr_rows(dpr_rows, specs))
            st.markdown("**DPR per model** (“(all)” pools the model's pairs)")
            st.dataframe(dpr_df, hide_index=True, key="hm_dpr")
            csv_download(dpr_df, file_stem("dpr", stem), "hm_dpr_csv")
            sim = sweep.dpr_by_similarity(dpr_families)
            sim_fig = bucket_figure(sim, "DPR (%)", "similarity of perturbed to original question (token F1)",
                                    title="DPR against question similarity")
            st.plotly_chart(sim_fig, key="hm_dpr_fig")
            sim_df = pd.DataFrame(views.bucket_rows(sim, "DPR %"))
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
    with st.spinner("Finding trap sentences…"):
        traps = sweep.traps(pert, pj)
    st.caption(f"{traps['with_trap']} examples have a trap sentence, {traps['without_trap']} none (only those with "
               f"one are plotted); trap found by: {', '.join(f'{k} {v}' for k, v in traps['methods'].items()) or '-'}.")
    if traps["buckets"]:
        trap_fig = bucket_figure(traps["buckets"], "F1 (%)", "similarity of trap sentence to question (token F1)",
                                 title=f"F1 against question-trap similarity ({trap_sources[trap_key]})")
        st.plotly_chart(trap_fig, key="hm_trap_fig")
        trap_df = pd.DataFrame(views.bucket_rows(traps["buckets"], "F1 %"))
        csv_download(trap_df, file_stem("f1-by-trap-similarity", stem), "hm_trap_csv")
        figure_downloads(trap_fig, file_stem("f1-by-trap-similarity", stem), "hm_trap")
