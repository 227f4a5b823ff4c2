"""Heatmaps' "Rows" tab: a sweep's answers as one linked table (LIT's data table).

Filters (model, perturbation, slice, changed?, F1 and noise ranges, text), sorting and paging run
in core (core.sweeps.analysis.rows) on the whole table; only the page goes to the browser. Selecting a row
(its left edge in the table, or the "Row in detail" select box) shows it as the heatmap
drill-down does (components.heatmaps.cell_drill) with buttons that open it on Ask or Variants
(components.open_item, as Gallery's do); two rows can be pinned and compared side by side.
"""
from __future__ import annotations

import json
import math
import zlib

import pandas as pd
import streamlit as st

from components import persist
from components.edits import edits_html
from components.export import csv_download, file_stem
from components.heatmaps.cell_drill import example_in_detail
from components.narrow import key_first
from components.open_item import open_on
from components.text import html_text, md_escape
from core.explore.gallery import Finding
from core.perturb.base import diff_edits
from core.render.highlight import Mark, color_for, highlight_html
from core.render.words import count
from core.sweeps.analysis import drill
from core.sweeps.analysis import rows as rt
from core.sweeps.analysis.slices import SLICES
from core.sweeps.analysis.stored import StoredSweep

__all__ = ["rows_section", "pinned_html", "MAX_PINNED"]

MAX_PINNED = 2
MAX_TABLES = 4   # sweeps' tables kept in memory at once
PAGE_SIZES = (25, 50, 100, 200)
CHANGED = {"any": None, "changed": True, "unchanged": False}
SORTABLE = [c for c in rt.COLUMNS if c not in ("question", "perturbed question")]
_NUMBER = st.column_config.NumberColumn(format="%.1f")
FIRST_COLUMNS = ["model", "perturbation", "F1", "answer", "perturbed question", "clean answer"]


@st.cache_resource
def _shelf() -> dict:
    """(db, sweep id, version) -> the sweep's table, shared by the sessions of this server (a cache
    of our own rather than st.cache_resource's, which cannot draw a progress bar while it runs)."""
    return {}


def load_rows(stored: StoredSweep) -> pd.DataFrame:
    """The sweep's table, read once per (sweep, version) with a progress bar, then kept (the last
    few only) and never changed: filters make new frames."""
    shelf, key = _shelf(), (str(stored.db), stored.id, stored.version)
    if key not in shelf:
        bar = st.progress(0.0, text="Reading the rows…")
        table = stored.rows(lambda f, what: bar.progress(min(1.0, f), text=f"Reading the rows: {what}…"))
        bar.empty()
        shelf[key] = table
        while len(shelf) > MAX_TABLES:
            shelf.pop(next(iter(shelf)))
    return shelf[key]


def _find(table: pd.DataFrame, key: tuple):
    """The table's row with :func:`core.sweeps.analysis.rows.row_key` ``key``, or None."""
    hit = table[(table["model"] == key[0]) & (table["perturbation id"] == key[1]) & (table["params_json"] == key[2])
                & (table["example_hash"] == key[3]) & (table["repeat"] == key[4])]
    return None if hit.empty else hit.iloc[0]


def _label(row) -> str:
    return f"{row['example']} · {row['model']} · {row['perturbation']} · r{row['repeat']}"


def _filters(table: pd.DataFrame) -> rt.RowFilter:
    """The filter widgets; their values as a RowFilter."""
    # wrapping rows of fixed-width widgets: side by side where they fit, under each other at 800 px
    bar = st.container(horizontal=True, wrap=True)
    models = list(dict.fromkeys(table["model"]))
    perts = list(dict.fromkeys(table["perturbation"]))
    persist.keep("rows_models", models)
    persist.keep("rows_perts", perts)
    persist.keep_all(["rows_changed", "rows_slice", "rows_text", "rows_f1", "rows_noise", "rows_desc", "rows_page"])
    picked_models = bar.multiselect("Model", models, key="rows_models", placeholder="all models", width=220)
    picked_perts = bar.multiselect("Perturbation", perts, key="rows_perts", placeholder="all perturbations",
                                   width=220)
    changed = bar.radio("Answer", list(CHANGED), horizontal=True, key="rows_changed", width="content",
                        help="Changed: the answer differs from the same model's clean answer to the same question "
                             "(after SQuAD's EM normalisation, as DPR counts it).")
    bar = st.container(horizontal=True, wrap=True)
    slice_name = bar.selectbox("Slice", [None, *rt.SLICE_COLUMNS], key="rows_slice", width=220,
                               format_func=lambda s: "none" if s is None else SLICES[s],
                               help="The slices of the Slices tab (core.sweeps.analysis.slices): keep the rows of some "
                                    "groups.")
    groups_in = list(dict.fromkeys(table[rt.SLICE_COLUMNS[slice_name]])) if slice_name else []
    persist.keep("rows_groups", groups_in)
    groups = bar.multiselect("Groups", groups_in, key="rows_groups", disabled=slice_name is None, width=220,
                             placeholder="all groups" if slice_name else "choose a slice first")
    text = bar.text_input("Search the rows", key="rows_text", placeholder="questions, answers, id", width=220)
    bar = st.container(horizontal=True, wrap=True)
    if st.session_state.get("rows_f1") is None:
        st.session_state["rows_f1"] = (0.0, 100.0)
    f1 = bar.slider("F1 (%)", 0.0, 100.0, step=1.0, key="rows_f1", format="%.0f", width=220)
    noise = bar.radio("Noise", list(rt.NOISE_COLUMNS), key="rows_noise", format_func=str.upper, width="content",
                      help="The perturbed question's CER or WER against the original, in percent, lower-cased and "
                           "without punctuation (NoiseQA's Table 3 form, as the noise curves measure it).")
    top = float(max(100.0, math.ceil(table[rt.NOISE_COLUMNS[noise]].max() if len(table) else 0.0)))
    persist.keep("rows_noise_range")
    lo, hi = st.session_state.get("rows_noise_range", (0.0, top))
    st.session_state["rows_noise_range"] = (min(max(lo, 0.0), top), min(max(hi, 0.0), top))
    noise_range = bar.slider(f"{noise.upper()} (%)", 0.0, top, step=0.5, key="rows_noise_range", format="%.1f",
                             width=220)
    return rt.RowFilter(models=tuple(picked_models), perturbations=tuple(picked_perts), slice_name=slice_name,
                        groups=tuple(groups), changed=CHANGED[changed],
                        f1=None if f1 == (0.0, 100.0) else f1, noise=noise,
                        noise_range=None if noise_range == (0.0, top) else noise_range, text=text)


def _page(shown: pd.DataFrame, n_all: int, stem: str) -> pd.DataFrame:
    """Sorting and paging widgets, the counts and the CSV of the filtered rows; the page's rows."""
    bar = st.container(horizontal=True, wrap=True, vertical_alignment="bottom")
    persist.keep("rows_sort", [None, *SORTABLE])
    persist.keep("rows_size", PAGE_SIZES, default=50)
    by = bar.selectbox("Sort by", [None, *SORTABLE], key="rows_sort", width=240,
                       format_func=lambda c: "the sweep's order" if c is None else c)
    descending = bar.toggle("Descending", key="rows_desc")
    size = bar.selectbox("Rows per page", PAGE_SIZES, key="rows_size", width=130)
    shown = rt.sort_rows(shown, by, descending)
    pages = max(1, -(-len(shown) // size))
    if st.session_state.get("rows_page", 1) > pages:
        st.session_state["rows_page"] = pages
    page = bar.number_input("Page", 1, pages, key="rows_page", width=150)
    rows, _ = rt.page_of(shown, page, size)
    first = (page - 1) * size + 1 if len(shown) else 0
    st.caption(md_escape(f"Rows {first:,}–{first + len(rows) - 1 if len(rows) else 0:,} of {count(len(shown), 'row')} "
                         f"that pass the filters ({n_all:,} scored answers in the sweep), page {page} of {pages}."))
    csv_download(shown[rt.COLUMNS], file_stem("rows", stem), "rows_csv", f"CSV of the {len(shown):,} filtered rows")
    return rows


def _finding(row, detail: dict, dataset: str, page: str) -> Finding:
    """The row as Gallery's item: Ask gets the perturbed question (in the perturbed context, pasted,
    when the perturbation changed it); Variants the original question on the data set's item."""
    changed_context = detail["perturbed_context"] is not None
    ask = page == "ask"
    return Finding("row", _label(row), "" if ask and changed_context else dataset, row["example"], detail["lang"],
                   detail["perturbed_context"] if ask and changed_context else detail["context"],
                   detail["variant_question"] if ask else detail["original_question"], detail["original_question"],
                   tuple((detail["perturbed_golds"] or detail["golds"]) if ask else detail["golds"]),
                   perturbation=row["perturbation id"])


def pinned_html(rows: list, details: list[dict]) -> str:
    """The pinned rows as cards side by side, each: its question with the perturbation's edits
    marked, its answer (and the clean one), F1, EM, noise, and its span in the context it was asked
    in, gold underlined. The cards wrap under each other where the page is narrow. All text escaped."""
    cards = []
    for k, (row, d) in enumerate(zip(rows, details)):
        context, gold, perturbed = drill.shown_context(d, clean=False)
        marks = ([Mark(row["model"], int(row["span start"]), int(row["span end"]), color_for(k))]
                 if not pd.isna(row["span start"]) and row["span end"] > row["span start"] else [])
        question = d["original_question"]
        edits = diff_edits(question, d["variant_question"] or "", "perturbation")
        cards.append(
            f'<div class="qax-pinned-card" style="flex:1 1 380px;min-width:0;border:1px solid #ccc;'
            f'border-left:6px solid {color_for(k)};border-radius:.4rem;padding:.6rem .8rem">'
            f"<div><b>{k + 1}. {html_text(_label(row))}</b></div>"
            f"<div>Question (clean → perturbed):</div>{edits_html(question, edits)}"
            f"<div>Answer: <b>{html_text(row['answer'] or '∅')}</b> · clean: {html_text(row['clean answer'] or '∅')}"
            f" · {'changed' if row['changed'] else 'unchanged'}</div>"
            f"<div>F1 {row['F1']:.1f} · EM {row['EM']:.0f} · CER {row['CER %']:.1f} % · WER {row['WER %']:.1f} %</div>"
            f"<div>{'Perturbed context' if perturbed else 'Context'}, the answer marked, gold underlined:</div>"
            f"{highlight_html(context, marks, gold)}</div>")
    return f'<div class="qax-pinned" style="display:flex;flex-wrap:wrap;gap:1rem">{"".join(cards)}</div>'


def _detail(stored: StoredSweep, table: pd.DataFrame, key: tuple) -> None:
    """The selected row: open / pin buttons, then the drill-down."""
    sweep_id, sweep = stored.id, stored.info
    row = _find(table, key)
    detail = stored.row_detail(key)
    if row is None or detail is None:
        st.info("That row is no longer in this sweep.")
        return
    st.subheader(f"Row: {md_escape(_label(row))}")
    pinned = st.session_state.setdefault("rows_pinned", [])
    here = [p for p in pinned if p[0] == sweep_id]
    buttons = st.container(horizontal=True)   # buttons as wide as their labels
    if buttons.button("Open in Ask", key="rows_open_ask"):
        open_on("ask", _finding(row, detail, sweep["dataset"], "ask"))
    if buttons.button("Open in Variants", key="rows_open_variants"):
        open_on("variants", _finding(row, detail, sweep["dataset"], "variants"))
    full = len(here) >= MAX_PINNED
    if buttons.button("Pin", key="rows_pin", disabled=(sweep_id, key) in pinned or full,
                      help=f"Keep up to {MAX_PINNED} rows to compare them side by side"
                           + (" (unpin one first)" if full else "")):
        pinned.append((sweep_id, key))
        st.rerun()
    example_in_detail(stored, key[0], key[1], key[2], detail, "rows", mark="this row")


def _pinned(stored: StoredSweep, table: pd.DataFrame) -> None:
    """The pinned rows of this sweep side by side, each with Unpin."""
    sweep_id = stored.id
    pinned = st.session_state.setdefault("rows_pinned", [])
    here = [p[1] for p in pinned if p[0] == sweep_id]
    if not here:
        st.caption(f"Pin up to {MAX_PINNED} rows (select one, then Pin) to see them side by side.")
        return
    st.subheader("Pinned rows")
    found = [(key, _find(table, key), stored.row_detail(key)) for key in here]
    found = [(key, row, d) for key, row, d in found if row is not None and d is not None]
    if len(found) < MAX_PINNED:
        st.caption("Pin one more row to compare the two side by side.")
    st.markdown(pinned_html([row for _, row, _ in found], [d for _, _, d in found]), unsafe_allow_html=True)
    unpins = st.container(horizontal=True)
    for k, (key, row, _) in enumerate(found):
        if unpins.button(f"Unpin {k + 1}", key=f"rows_unpin_{k}", help=md_escape(_label(row))):
            pinned.remove((sweep_id, key))
            st.rerun()


def rows_section(stored: StoredSweep, stem: str) -> None:
    """The "Rows" tab of the sweep ``stored``."""
    sweep_id = stored.id
    st.subheader("Every answer of the sweep")
    st.caption("One row per scored perturbed answer (rows where the perturbation did not apply hold none). "
               "Filter and sort here; select a row at its left edge, or pick it below, to see it in detail, "
               "open it on Ask or Variants, or pin it.")
    table = load_rows(stored)
    if table.empty:
        st.info("This sweep has no scored perturbed answer yet.")
        return
    shown = rt.filter_rows(table, _filters(table))
    rows = _page(shown, len(table), stem)
    digest = json.dumps([sorted(map(str, st.session_state.get(k) or [])) if isinstance(st.session_state.get(k), list)
                         else str(st.session_state.get(k)) for k in ("rows_models", "rows_perts", "rows_slice",
                         "rows_groups", "rows_changed", "rows_text", "rows_f1", "rows_noise", "rows_noise_range",
                         "rows_sort", "rows_desc", "rows_size", "rows_page")])
    event = st.dataframe(rows[rt.COLUMNS], key=f"rows_table_{sweep_id}_{zlib.crc32(digest.encode())}", hide_index=True,
                         on_select="rerun", selection_mode="single-row", width="stretch",
                         # what a row is about first: at 800 px the grid shows about four columns
                         column_order=key_first(rt.COLUMNS, FIRST_COLUMNS),
                         column_config={c: _NUMBER for c in ("F1", "EM", "clean F1", "CER %", "WER %")})
    keys = [rt.row_key(r) for _, r in rows.iterrows()]
    picked = list(event.selection.rows) if event is not None else []
    if picked and picked[0] < len(keys) and picked != st.session_state.get("rows_last_pick"):
        st.session_state["rows_pick"] = keys[picked[0]]
    st.session_state["rows_last_pick"] = picked
    labels = {k: _label(r) for k, (_, r) in zip(keys, rows.iterrows())}
    persist.keep("rows_pick", [None, *keys])
    key = st.selectbox("Row in detail", [None, *keys], key="rows_pick",
                       format_func=lambda k: "none (select a row above)" if k is None else labels[k])
    _pinned(stored, table)
    if key is not None:
        _detail(stored, table, key)
