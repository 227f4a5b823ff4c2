"""Translate or answer in the language? (core.models.routes): F1 per route and language with
bootstrap intervals, the paired differences, from results stored by the CLI or run here on a few
questions of one language. Every table as CSV, the figure as HTML/PNG."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.cancellable import progress_with_cancel, say_if_cancelled
from components.export import csv_download, figure_downloads, file_stem
from components.frame import run_output
from components.text import md_escape
from core.models import routes

XQUAD_SOURCES = ("ar", "de", "el", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")


def results_dir() -> Path:
    from core.config import cache_dir

    return cache_dir() / "routes"


def stored_results() -> dict[str, list[dict]]:
    """{label: rows} of the comparisons in the cache's routes/ folder (the CLI's --json, or runs
    made on this page), then those shipped in assets/routes/ (measured for the docs, marked
    "bundled"); unreadable files are left out."""
    from core.config import repo_root

    out = {}
    for folder, mark in ((results_dir(), ""), (repo_root() / "assets" / "routes", " (bundled)")):
        for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                rows = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(rows, list) and rows and all(isinstance(r, dict) and "routes" in r for r in rows):
                out.setdefault(f.name + mark, rows)
    return out


def route_table(rows: list[dict]) -> pd.DataFrame:
    """One row per language, for reading: each route's F1 with its interval, and the paired
    differences; "—" where a route did not run (the CSV keeps the numbers, routes.csv_rows)."""
    out = []
    for r in rows:
        line = {"language": r["lang"], "questions": r["n"]}
        for route in routes.ROUTES:
            v = r["routes"].get(route)
            line[routes.ROUTE_LABELS[route]] = f"{v['f1']:.1f} ({v['ci95'][0]:.1f}–{v['ci95'][1]:.1f})" if v else "—"
        found = {(d["a"], d["b"]): d for d in r["differences"]}
        for a, b in routes.PAIRS:
            d = found.get((a, b))
            line[f"{b} − {a}"] = (f"{d['difference']:+.1f} ({d['ci95'][0]:+.1f} to {d['ci95'][1]:+.1f})"
                                  if d else "—")
        line["note"] = r.get("translate_missing", "")
        out.append(line)
    return pd.DataFrame(out)


def route_figure(rows: list[dict]) -> go.Figure:
    fig = go.Figure()
    for route in routes.ROUTES:
        have = [r for r in rows if route in r["routes"]]
        if not have:
            continue
        f1 = [r["routes"][route]["f1"] for r in have]
        fig.add_bar(name=routes.ROUTE_LABELS[route], x=[r["lang"] for r in have], y=f1,
                    error_y={"type": "data", "symmetric": False,
                             "array": [r["routes"][route]["ci95"][1] - v for r, v in zip(have, f1)],
                             "arrayminus": [v - r["routes"][route]["ci95"][0] for r, v in zip(have, f1)]})
    fig.update_layout(barmode="group", yaxis_title="F1 (95% bootstrap interval)", xaxis_title="source language",
                      legend={"orientation": "h", "y": -0.25}, margin={"t": 30}, height=420)
    return fig


def render(models: list[str]) -> None:
    st.caption("NoiseQA's machine-translation interface, asked the other way: on XQuAD's parallel questions, "
               "does a question fare better (a) machine-translated to English, (b) asked as it is against the "
               "English passage, or (c) asked against the passage in its own language? Routes (b) and (c) need "
               "a multilingual model; (a) needs an offline translator for the pair (Apertium here has es→en "
               "only). Each F1 has a 95% bootstrap interval, each difference a paired-bootstrap one. "
               "Store full runs with `python -m core.models.routes --json .cache/routes/NAME.json`.")
    stored = stored_results()
    with st.form("routes_run", enter_to_submit=False):   # Enter in the count box is not a start
        cols = st.columns(3)
        model = cols[0].selectbox("Multilingual model", models, key="routes_model")
        lang = cols[1].selectbox("Source language", XQUAD_SOURCES, key="routes_lang")
        n = cols[2].number_input("Questions", min_value=10, max_value=1190, value=30, step=10, key="routes_n")
        go_run = st.form_submit_button("Compare the three routes")
    working = run_output()   # the bar and Cancel, the model's load
    say_if_cancelled("routes", working, "the comparison stopped at the question it was on, and nothing of it "
                                        "was stored.")
    if go_run and model:
        with working.container():
            _run_here(model, lang, int(n))
        working.empty()
        stored = stored_results()
    if not stored:
        st.info("No route comparison is stored yet: run one above, or with the command line.")
        return
    name = st.selectbox("Stored comparison", list(stored), key="routes_file")
    rows = stored[name]
    models_used = sorted({r.get("model", "?") for r in rows})
    st.caption(md_escape(f"Model {', '.join(models_used)}; route (a)'s English model "
                         f"{', '.join(sorted({r.get('english_model', '?') for r in rows}))}."))
    table = route_table(rows)
    st.dataframe(table, hide_index=True, width="stretch")
    csv_download(pd.DataFrame(routes.csv_rows(rows)), file_stem("routes", Path(name).stem), "routes_csv")
    fig = route_figure(rows)
    st.plotly_chart(fig, width="stretch")
    figure_downloads(fig, file_stem("routes", Path(name).stem), "routes_fig")


def _run_here(model: str, lang: str, n: int) -> None:
    from components import loaders
    from core.translate.translators import default_translator

    what = f"{model} on {n} questions in {lang}: three routes"
    with progress_with_cancel("routes", what) as bar:
        try:
            engine = loaders.engine(model)
            row = routes.run_language(lang, engine, engine, default_translator(), first=n,
                                      progress=lambda done, total: bar(done / total, f"{what} ({done}/{total})"))
        except (ValueError, OSError) as e:
            st.error(md_escape(f"The comparison could not run: {e}"))
            return
    row |= {"model": model, "english_model": model}
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{file_stem(model, lang, n)}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps([row], indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target)
    st.session_state["routes_file"] = target.name
