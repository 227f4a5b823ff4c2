"""Heatmaps' drill-down: a cell's examples (largest F1 loss first), and one of them answered by
every model of the sweep side by side, the spans marked in the clean or the perturbed context.

Numbers and spans come from the sweep's read handle (core.sweeps.analysis.stored.StoredSweep:
``cell_examples``, ``example_across_models``) and core.sweeps.analysis.drill's row helpers; the
cards, the legend and the marked context from components.answers.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.answers import card_header, legend, spans_in_context
from components.attribution import why_changed_expander
from components.choice import keep_valid
from components.export import csv_download, file_stem
from components.loaders import engine_for_state
from components.text import md_escape
from core.metrics import predictions_differ
from core.render.heatmap import METRICS, format_value
from core.render.highlight import color_for
from core.sweeps.analysis import drill
from core.sweeps.analysis.stored import StoredSweep


def _f1_text(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}"


def cell_examples(sweep: StoredSweep, plotted: list, metric: str, stem: str) -> None:
    """The "A cell's examples" section for the cells drawn on the heatmap (``plotted``); an empty
    cell of an incomplete sweep may just not be run yet, and says so."""
    st.subheader("A cell's examples")

    def cell_label(i: int) -> str:
        c = plotted[i]  # no metric-dependent numbers: the label must not change when the metric does
        return f"{c.model} · {c.label} · N={c.n}"

    i = st.selectbox("Cell", list(range(len(plotted))), key="hm_cell", format_func=cell_label)
    cell = plotted[i]
    rows = sweep.cell_examples(cell.model, cell.perturbation, cell.params_json)
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
        if sweep.complete or cell.n_not_applicable:
            st.info("The perturbation applied to no example of this sweep for this model: nothing to show.")
        else:
            st.info("This cell's rows are not stored yet: the sweep stopped before them (resume it on the "
                    "Sweeps page).")
        return
    ex_df = pd.DataFrame(drill.example_rows(rows))
    st.dataframe(ex_df, hide_index=True, key="hm_examples", width="stretch")
    csv_download(ex_df, file_stem("examples", stem, cell.model, cell.label), "hm_examples_csv")
    if st.session_state.get("hm_example_of") != (sweep.id, i):  # another cell: start at its largest loss
        st.session_state["hm_example_of"] = (sweep.id, i)
        st.session_state["hm_example"] = 0
    keep_valid("hm_example", list(range(len(rows))))
    k = st.selectbox("Example in detail", list(range(len(rows))), key="hm_example",
                     format_func=lambda j: f"{j + 1}. {rows[j]['example_id']} r{rows[j]['repeat']} · "
                                           f"F1 loss {100 * rows[j]['f1_loss']:.0f}")
    example_in_detail(sweep, cell.model, cell.perturbation, cell.params_json, rows[k], "hm")


def example_in_detail(sweep: StoredSweep, model: str, perturbation: str, params_json: str,
                      r: dict, key: str, mark: str = "this cell") -> None:
    """One row of ``sweep.cell_examples`` (``model``'s, under the spec): both questions, every model
    of the sweep's clean and perturbed answer side by side, the spans marked in the context, and
    "why did it change?"; ``key`` prefixes the widgets' keys (the drill-down's, the rows table's) and
    ``mark`` names ``model``'s card ("this cell", "this row")."""
    st.markdown(f"**Original question:** {md_escape(r['original_question'])}")
    st.markdown(f"**Perturbed question:** {md_escape(r['variant_question'])}")
    # Every model of the sweep on this example, side by side (the cell is one model's).
    across = sweep.example_across_models(perturbation, params_json, r["example_hash"], r["repeat"])
    for j, (col, o) in enumerate(zip(st.columns(len(across)), across)):
        with col:
            chosen = f" ({mark})" if o["model"] == model else ""
            st.markdown(card_header(o["model"], color_for(j), chosen), unsafe_allow_html=True)
            st.text(f"clean: {o['clean_answer'] or '∅'}  (F1 {_f1_text(o['clean_f1'])})")
            st.text(f"perturbed: {o['answer'] or '∅'}  (F1 {_f1_text(o['f1'])})"
                    if o["status"] == "ok" else f"perturbed: {o['status'] or 'not stored'}")
    show = st.radio("Marked in the context", ["perturbed answers", "clean answers"], horizontal=True,
                    key=f"{key}_show_answers")
    clean = show == "clean answers"
    context, gold, perturbed = drill.shown_context(r, clean)
    models = [o["model"] for o in across]
    legend(models, with_gold=True)
    if perturbed:
        st.markdown("Perturbed context, perturbed answers:")
    spans_in_context(context, drill.answer_spans(across, clean), gold, models, show_legend=False)
    # "Why did it change?" for this cell's model when its answer changed (edits diffed from the texts).
    if r.get("status", "ok") == "ok" and predictions_differ(r["clean_answer"] or "", r["answer"] or "",
                                                            r.get("lang") or "en"):
        field = "context" if r["perturbed_context"] else "question"
        why_changed_expander(key, [model], r["original_question"], r["context"], r["variant_question"],
                             r["perturbed_context"] or r["context"], None, field, engine_for_state)
