"""Plotly figures of the Heatmaps page other than the heatmap itself (no streamlit import).

  * :func:`breakdown_figure`: grouped bars of a score per category (ASR voice, MT source
    language), one bar per model, with the clean score of the same questions as a hollow marker,
    optionally one panel per facet value (ASR engine);
  * :func:`bucket_figure`: one line per model over similarity buckets (DPR vs question
    similarity, F1 vs question-trap similarity), each point labelled with its count.

Every name from the store (models, categories, facets, perturbations) is HTML-escaped where plotly
would read it as its pseudo-HTML: a legend entry, an axis category or a hover value holding
``<a href=...>`` was drawn as a live link (hover templates name the trace by ``%{fullData.name}``).
"""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.render.highlight import color_for

__all__ = ["breakdown_figure", "bucket_figure"]


def breakdown_figure(rows: Sequence[Mapping[str, Any]], category: str, metric: str = "F1",
                     facet: str | None = None, title: str = "") -> go.Figure:
    """Bars of ``rows[i][metric]`` (perturbed score) per ``category`` value and model; the clean
    score (``"clean " + metric``) of the same questions as an open diamond; hover shows N.

    ``rows``: dicts with "model", ``category``, ``metric``, "clean <metric>", "N" (and ``facet``).
    """
    if not rows:
        raise ValueError("no rows to plot")
    facets = list(dict.fromkeys(r[facet] for r in rows)) if facet else [None]
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig = make_subplots(rows=1, cols=len(facets), shared_yaxes=True,
                        subplot_titles=[html.escape(f"{facet}: {f}") for f in facets] if facet else None)
    for col, f in enumerate(facets, start=1):
        part = [r for r in rows if facet is None or r[facet] == f]
        for k, model in enumerate(models):
            mine = [r for r in part if r["model"] == model]
            if not mine:
                continue
            cats = [html.escape(str(r[category])) for r in mine]
            fig.add_trace(go.Bar(
                x=cats, y=[r[metric] for r in mine], name=html.escape(model), legendgroup=model,
                showlegend=col == 1, marker_color=color_for(k), offsetgroup=model,
                customdata=[[r[f"clean {metric}"], r["N"], html.escape(r.get("perturbation", ""))] for r in mine],
                hovertemplate=(f"<b>%{{fullData.name}}</b> · %{{x}}<br>{metric} %{{y:.1f}} "
                               "(clean %{customdata[0]:.1f})<br>N = %{customdata[1]}<br>%{customdata[2]}"
                               "<extra></extra>")), row=1, col=col)
            fig.add_trace(go.Scatter(
                x=cats, y=[r[f"clean {metric}"] for r in mine], mode="markers", name=html.escape(f"{model} (clean)"),
                legendgroup=model, showlegend=col == 1, offsetgroup=model,
                marker=dict(symbol="diamond-open", size=11, color=color_for(k), line=dict(width=2)),
                hovertemplate=f"<b>%{{fullData.name}}</b> · %{{x}}<br>clean {metric} %{{y:.1f}}<extra></extra>"),
                row=1, col=col)
    fig.update_layout(barmode="group", scattermode="group", title=title, height=420,
                      legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(title_text=f"{metric} (%)", range=[0, 100], row=1, col=1)
    return fig


def bucket_figure(buckets: Mapping[str, Sequence[Mapping[str, Any]]], y_title: str, x_title: str,
                  title: str = "") -> go.Figure:
    """One line per model: bucket label -> bucket mean (gaps for empty buckets), "n=" over each bucket.

    >>> same = [{"label": "0-0.2", "mean": 100.0, "n": 3}, {"label": "0.2-0.4", "mean": None, "n": 0}]
    >>> fig = bucket_figure({"a": same, "b": same, "c": [{**same[0], "n": 2}, same[1]]}, "F1", "sim")
    >>> [list(t.text) for t in fig.data]
    [['n=3', ''], ['', ''], ['n=2', '']]
    >>> fig.data[0].cliponaxis   # a label over a point at 100 is not cut off
    False
    >>> bucket_figure({"<a href='h'>m</a>": same}, "F1", "sim").data[0].name   # plotly would draw a link
    '&lt;a href=&#x27;h&#x27;&gt;m&lt;/a&gt;'
    """
    if not buckets:
        raise ValueError("no buckets to plot")
    fig = go.Figure()
    # Models scored on the same questions have the same n per bucket: one label per bucket (on the
    # first model's point) instead of a stack of identical, overlapping ones; a model whose n
    # differs there gets its own.
    labelled: set[tuple[str, int]] = set()
    for k, (model, bs) in enumerate(buckets.items()):
        labels = []
        for b in bs:
            new = bool(b["n"]) and (b["label"], b["n"]) not in labelled
            labelled.add((b["label"], b["n"]))
            labels.append(f"n={b['n']}" if new else "")
        fig.add_trace(go.Scatter(
            x=[html.escape(str(b["label"])) for b in bs], y=[b["mean"] for b in bs], mode="lines+markers+text",
            name=html.escape(model),
            text=labels, textposition="top center", cliponaxis=False,
            marker=dict(color=color_for(k), size=9), line=dict(color=color_for(k)),
            customdata=[b["n"] for b in bs],
            hovertemplate="<b>%{fullData.name}</b><br>%{x}: %{y:.1f}<br>n = %{customdata}<extra></extra>"))
    fig.update_layout(title=title, height=400, xaxis_title=x_title, yaxis_title=y_title,
                      yaxis_range=[0, 108], legend=dict(orientation="h", y=-0.25))
    return fig
