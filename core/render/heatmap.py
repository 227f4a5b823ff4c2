"""The model x perturbation heatmap as a Plotly figure of square scatter markers.

Why markers and not ``go.Heatmap``: Streamlit's ``st.plotly_chart(on_select="rerun")`` reports
clicked *points* of scatter traces but nothing for heatmap cells, and the page's drill-down needs
the click. So each cell is one square marker on a numeric grid (x = column, y = model), its size
computed from the grid so the squares tile the plot area; axis ticks carry the labels.

Three layouts: models as rows (the default while the perturbations fit across a page, up to
:data:`MAX_ACROSS` columns); perturbations as rows (``layout="perturbations-as-rows"``: the German
catalogue at n = 1..4 is 140 perturbations, which squeezed into a page's width left neither cells
nor labels readable); and perturbations as rows with n across (``layout="n-across"``: one row per
perturbation and, per model, one column per number of perturbed words or characters, so the
catalogue's 140 specs fold into 44 rows and its n = 1..4 trend reads along a row; ``"auto"`` picks
it beyond :data:`MAX_ACROSS` where the grid's width is within TARGET_PLOT_WIDTH, i.e. for a sweep
of one model). Across, the family names sit above the grid; down, beside it on the right (n across:
in a band above each family's rows, which keeps the figure narrow), and the model names and band
legend go above the grid so that they are on screen where the reading starts.

Cells are coloured by the German paper's bands of the percentage change (SEEDS.md §4,
core.metrics.penalty.BANDS) of the chosen metric, whatever value the cells show (% change, the
perturbed score or the absolute drop): the colour always means the band, so the penalty written
in each cell matches its colour. Columns are grouped by family (core.sweeps.analysis.tables.columns), with
family names above the plot and thin lines between families. Each y label carries the model's
penalty total. Trace 0 holds the cells; point i is ``plotted[i]`` of :func:`heatmap_figure`'s
result, and its customdata starts with i, so a selection maps back to its cell (an optional
outline trace around the chosen cell carries the same customdata).

No streamlit import: unit-tested like core code.
"""
from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from core.metrics import METRICS as ANSWER_METRICS
from core.metrics.penalty import BANDS
from core.sweeps.analysis.sweep_cells import Cell
from core.sweeps.analysis.tables import NGrid, columns, n_grid

__all__ = ["BAND_COLOURS", "NO_SCORE_COLOUR", "title_lines", "VALUES", "METRICS", "LAYOUTS", "MAX_ACROSS", "cell_value",
           "format_value", "cell_colour", "grid_size", "choose_layout", "layout_for", "heatmap_figure", "LAYOUT_NOTES"]

# One colour per band, highest band first (as BANDS): blues for gains, greens for the two
# penalty-0 bands, then yellow -> dark red as the drop (and the penalty) grows.
BAND_COLOURS: dict[str, str] = {
    "> 10": "#2166ac",
    "(2, 10]": "#92c5de",
    "(0, 2]": "#1a9850",
    "(-2, 0]": "#91cf60",
    "(-10, -2]": "#fee08b",
    "(-40, -10]": "#fdae61",
    "(-70, -40]": "#f46d43",
    "[-100, -70]": "#a50026",
}
NO_SCORE_COLOUR = "#d9d9d9"  # the perturbation applied to no example: nothing to compare
assert [b[0] for b in BANDS] == list(BAND_COLOURS), "BAND_COLOURS must follow core.metrics.penalty.BANDS"
# Text on dark cells is white, on light cells black.
_DARK = {"#2166ac", "#1a9850", "#a50026", "#f46d43"}

# the metrics a heatmap can show, labelled as core.metrics declares them
METRICS = {name: ANSWER_METRICS[name].label for name in ("f1", "em")}
VALUES = {"pct": "% change", "score": "perturbed score", "drop": "absolute drop (points)"}

# The grid aims at 300 px: beside Streamlit's sidebar, a window 800 px wide leaves ~470 px for the
# page (measured in Chromium), and the figure must fit there with its model names and margins.
# Up to 7 columns the cells are 40 px or more and show value and penalty; more show the penalty.
MIN_CELL, MAX_CELL, TARGET_PLOT_WIDTH = 18, 64, 300
FULL_TEXT_CELL = 40  # px: narrower cells show their penalty only
LEGEND_ROW_HEIGHT, LEGEND_ENTRY_WIDTH = 22, 118  # px: the band legend, in rows under the plot
# The 14 px title is about 6.6 px a character in Chromium (39 characters measured 258 px); a figure
# narrower than its title (a sweep of one or two perturbations) wraps it, a line more for each.
TITLE_CHAR_PX, TITLE_LINE_PX = 7.0, 18
# Up to 40 columns of MIN_CELL px (720 px) plus model names fit a page beside the sidebar; more are
# drawn down the page. Down, cells are FULL_TEXT_CELL px: as tall as the value and penalty need.
MAX_ACROSS = 40
LAYOUTS = {"auto": "automatic", "models-as-rows": "models as rows",
           "perturbations-as-rows": "perturbations as rows", "n-across": "perturbations as rows, n across"}
N_GAP = 0.5   # cells of space between two models' blocks of n columns
_HOW_TO_READ = "Hover a cell for clean and perturbed scores and N; click it for its examples."
LAYOUT_NOTES = {   # how to read each layout, under the figure
    "models-as-rows": "Columns are grouped by family (names above the plot). The y labels carry each model's "
                      f"penalty total (Σ). {_HOW_TO_READ}",
    "perturbations-as-rows": "Rows are grouped by family (names right of the plot). The model names on top carry "
                             f"each model's penalty total (Σ). {_HOW_TO_READ}",
    "n-across": "One row per perturbation, grouped by family (names above their rows); per model one column per n, "
                "the number of words or characters perturbed ('no n': perturbations without one). Each model's "
                f"name on top carries its penalty total (Σ). {_HOW_TO_READ}",
}


def cell_value(cell: Cell, metric: str = "f1", value: str = "pct") -> float | None:
    """The number a cell shows: % change, the perturbed score, or clean - perturbed (points)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    if value == "pct":
        return getattr(cell, f"{metric}_pct")
    if value == "score":
        return getattr(cell, metric)
    if value == "drop":
        return getattr(cell, f"{metric}_drop")
    raise ValueError(f"value must be one of {list(VALUES)}, got {value!r}")


def format_value(x: float | None, value: str = "pct") -> str:
    """``-25.0`` / ``+inf`` / ``–`` (no score); % changes carry their sign."""
    if x is None:
        return "–"
    if math.isinf(x):
        return "+∞" if x > 0 else "−∞"
    return f"{x:+.1f}" if value == "pct" else f"{x:.1f}"


def cell_colour(cell: Cell, metric: str = "f1") -> str:
    b = getattr(cell, f"{metric}_band")
    return BAND_COLOURS[b] if b is not None else NO_SCORE_COLOUR


def grid_size(n_columns: int) -> int:
    """Pixels per cell: as large as fits TARGET_PLOT_WIDTH, within [MIN_CELL, MAX_CELL]."""
    if n_columns < 1:
        raise ValueError("a heatmap needs at least one column")
    return max(MIN_CELL, min(MAX_CELL, TARGET_PLOT_WIDTH // n_columns))


def choose_layout(n_columns: int, layout: str = "auto", n_grid_width: int | None = None) -> str:
    """The layout a heatmap of ``n_columns`` perturbations is drawn in; ``n_grid_width``: the width
    in px of its n-across grid, None where the specs form no such grid (then "n-across" falls back
    to perturbations as rows).

    >>> choose_layout(11), choose_layout(140), choose_layout(140, "models-as-rows")
    ('models-as-rows', 'perturbations-as-rows', 'models-as-rows')
    >>> choose_layout(140, n_grid_width=200), choose_layout(140, n_grid_width=420), choose_layout(11, "n-across")
    ('n-across', 'perturbations-as-rows', 'perturbations-as-rows')
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {list(LAYOUTS)}, got {layout!r}")
    if layout == "n-across" and n_grid_width is None:
        return "perturbations-as-rows"
    if layout != "auto":
        return layout
    if n_columns <= MAX_ACROSS:
        return "models-as-rows"
    return "n-across" if n_grid_width is not None and n_grid_width <= TARGET_PLOT_WIDTH else "perturbations-as-rows"


def _n_grid_width(grid: NGrid | None, n_models: int) -> int | None:
    """Pixels across an n-across grid of ``n_models`` blocks."""
    if grid is None:
        return None
    return int((n_models * grid.n_columns + (n_models - 1) * N_GAP) * FULL_TEXT_CELL)


def layout_for(cell_list: Sequence[Cell], n_models: int, layout: str = "auto") -> str:
    """The layout :func:`heatmap_figure` draws these cells of ``n_models`` models in."""
    return choose_layout(len(columns(cell_list)), layout, _n_grid_width(n_grid(cell_list), n_models))


def _fmt(x: float | None) -> str:
    return format_value(x, "score")


def _hover(cell: Cell, metric: str) -> str:
    m = METRICS[metric]
    pen = getattr(cell, f"{metric}_penalty")
    lines = [
        f"<b>{html.escape(cell.model)}</b> · {html.escape(cell.label)}",
        f"family: {html.escape(cell.family)} · changes the {html.escape(cell.field)}",
        f"clean {m}: {_fmt(getattr(cell, f'clean_{metric}'))}",
        f"perturbed {m}: {_fmt(getattr(cell, metric))}",
        f"% change: {format_value(getattr(cell, f'{metric}_pct'))} %",
        f"drop: {_fmt(getattr(cell, f'{metric}_drop'))} points",
        f"band {getattr(cell, f'{metric}_band') or '–'} · penalty {'–' if pen is None else f'+{pen}'}",
        f"N = {cell.n} examples · {cell.n_repeats} repeat(s) · {cell.n_not_applicable} n/a rows",
    ]
    if cell.f1_repeat_sd is not None and metric == "f1":
        lines.append(f"SD of F1 over repeats: {cell.f1_repeat_sd:.2f}")
    return "<br>".join(lines)


def heatmap_figure(cell_list: Sequence[Cell], metric: str = "f1", value: str = "pct",
                   totals: Mapping[str, int] | None = None,
                   models: Sequence[str] | None = None,
                   highlight: int | None = None, layout: str = "auto") -> tuple[go.Figure, list[Cell]]:
    """The heatmap figure and the cells in marker order (marker i shows ``plotted[i]``).

    ``totals``: {model: penalty total} written into the model labels (pass
    core.sweeps.analysis.sweep_cells.penalty_totals for the same metric). ``models``: model order (default: the
    order of first appearance in ``cell_list``). ``highlight``: the index (in
    marker order) of a cell to outline, the one whose examples the page shows. ``layout``: one of
    :data:`LAYOUTS` (:func:`choose_layout`).
    """
    if not cell_list:
        raise ValueError("no cells to draw")
    cols = columns(cell_list)
    col_index = {c.key: i for i, c in enumerate(cols)}
    model_rows = list(models or dict.fromkeys(c.model for c in cell_list))
    row_index = {m: i for i, m in enumerate(model_rows)}
    plotted = sorted((c for c in cell_list if c.model in row_index),
                     key=lambda c: (row_index[c.model], col_index[(c.perturbation, c.params_json)]))
    positions = [col_index[(c.perturbation, c.params_json)] for c in plotted]
    models_at = [row_index[c.model] for c in plotted]

    fig = go.Figure()
    grid = n_grid(plotted)
    chosen = choose_layout(len(cols), layout, _n_grid_width(grid, len(model_rows)))
    if chosen == "models-as-rows":
        px = grid_size(len(cols))
        _add_cells(fig, plotted, positions, models_at, metric, value, px, highlight)
        _add_families(fig, cols, px, len(model_rows))
        _lay_out(fig, cols, model_rows, totals or {}, metric, value, px)
    elif chosen == "n-across":
        keys = [(c.perturbation, c.params_json) for c in plotted]
        xs = [m * (grid.n_columns + N_GAP) + grid.column_of[k] for m, k in zip(models_at, keys)]
        row_y = _family_gapped(grid.rows)
        _add_cells(fig, plotted, xs, [row_y[grid.row_of[k]] for k in keys], metric, value, FULL_TEXT_CELL,
                   highlight)
        _lay_out_n_across(fig, grid, row_y, model_rows, totals or {}, metric, value)
    else:
        _add_cells(fig, plotted, models_at, positions, metric, value, FULL_TEXT_CELL, highlight)
        _add_families_down(fig, cols, len(model_rows) - 0.5)
        _lay_out_down(fig, cols, model_rows, totals or {}, metric, value)
    return fig, plotted


def _add_cells(fig: go.Figure, plotted: list[Cell], xs: list[int], ys: list[int], metric: str, value: str,
               px: int, highlight: int | None) -> None:
    """Trace 0: one square per cell (colour: band; text: value and penalty); the outline of the
    chosen cell; the band legend's entries."""
    colours = [cell_colour(c, metric) for c in plotted]
    texts = []
    for c in plotted:
        pen = getattr(c, f"{metric}_penalty")
        pen_text = "" if pen is None else f"+{pen}"
        # A cell narrower than FULL_TEXT_CELL px has room for the penalty only (the value is in the hover).
        texts.append(f"{format_value(cell_value(c, metric, value), value)}<br>{pen_text}"
                     if px >= FULL_TEXT_CELL else pen_text)
    font_colours = ["white" if col in _DARK else "black" for col in colours]
    trace_data = [[i, c.model, c.perturbation, c.params_json] for i, c in enumerate(plotted)]
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers+text", name="cells", showlegend=False,
        marker=dict(symbol="square", size=px - 2, color=colours, line=dict(width=0)),
        # no fading on selection: the chosen cell gets an outline instead (``highlight``)
        selected=dict(marker=dict(opacity=1.0)), unselected=dict(marker=dict(opacity=1.0)),
        text=texts, textposition="middle center",
        textfont=dict(size=max(9, min(12, px // 4)), color=font_colours),
        customdata=trace_data,
        hovertext=[_hover(c, metric) for c in plotted], hovertemplate="%{hovertext}<extra></extra>",
    ))
    if highlight is not None and 0 <= highlight < len(plotted):
        fig.add_trace(go.Scatter(  # an open square around the chosen cell; clicking it re-selects it
            x=[xs[highlight]], y=[ys[highlight]], mode="markers", name="chosen", showlegend=False,
            marker=dict(symbol="square-open", size=px - 1, color="black", line=dict(width=3)),
            customdata=[trace_data[highlight]], hoverinfo="skip"))
    for label, *_rest, pen in BANDS:  # legend entries only: no points, so never selected
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{label}  (+{pen})",
                                 marker=dict(symbol="square", size=12, color=BAND_COLOURS[label])))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="no score",
                             marker=dict(symbol="square", size=12, color=NO_SCORE_COLOUR)))


def _add_families(fig: go.Figure, cols: list, px: int, n_rows: int) -> None:
    """Families: a name above each group of columns, a line between groups."""
    n_cols = len(cols)
    start = 0
    for i in range(1, n_cols + 1):
        if i == n_cols or cols[i].family != cols[start].family:
            width_px = (i - start) * px
            fig.add_annotation(x=(start + i - 1) / 2, y=-0.5, xref="x", yref="y", yanchor="bottom",
                               text=f"<b>{html.escape(cols[start].family)}</b>", showarrow=False,
                               textangle=0 if width_px >= 9 * len(cols[start].family) else -45,
                               font=dict(size=11))
            if i < n_cols:
                fig.add_shape(type="line", x0=i - 0.5, x1=i - 0.5, y0=-0.5, y1=n_rows - 0.5, xref="x", yref="y",
                              line=dict(color="#444", width=1.5))
            start = i


def _add_families_down(fig: go.Figure, cols: list, x_right: float) -> None:
    """Perturbations as rows: each family's name right of its group of rows (the grid ends at
    ``x_right``), a line between groups."""
    start = 0
    for i in range(1, len(cols) + 1):
        if i == len(cols) or cols[i].family != cols[start].family:
            fig.add_annotation(x=x_right, y=(start + i - 1) / 2, xref="x", yref="y", xanchor="left",
                               xshift=6, text=f"<b>{html.escape(cols[start].family)}</b>", showarrow=False,
                               font=dict(size=11))
            if i < len(cols):
                fig.add_shape(type="line", x0=-0.5, x1=x_right, y0=i - 0.5, y1=i - 0.5, xref="x",
                              yref="y", line=dict(color="#444", width=1.5))
            start = i


def _model_labels(model_rows: list[str], totals: Mapping[str, int]) -> list[str]:
    # Plotly reads tick text as its own small HTML (<a href> included): names are escaped. The
    # penalty total goes on a second line, so long model names do not widen the figure twice.
    return [html.escape(m) + (f"<br>Σ {totals[m]}" if m in totals else "") for m in model_rows]


def _legend_rows(per_row: int) -> int:
    """Lines the band legend takes with ``per_row`` entries to a line (the bands and "no score")."""
    return -(-(len(BANDS) + 1) // max(1, per_row))


def title_lines(text: str, width: int) -> list[str]:
    """``text`` in lines that fit a figure ``width`` px wide (a title wider than its figure is cut).

    >>> title_lines("F1: % change (colour: band of % change)", 500)
    ['F1: % change (colour: band of % change)']
    >>> title_lines("F1: % change (colour: band of % change)", 209)
    ['F1: % change (colour: band', 'of % change)']
    """
    return textwrap.wrap(text, max(12, int((width - 8) / TITLE_CHAR_PX))) or [text]


def _frame(fig: go.Figure, metric: str, value: str, width: int, height: int, margin: dict,
           legend_at: dict, title_at: dict) -> None:
    """What both layouts share: size, margins, clicks, the band legend and the title (placed by
    ``legend_at`` / ``title_at``; a title on more lines than one makes the figure taller above
    the plot, so what is placed against the plot stays where it was)."""
    lines = title_lines(f"{METRICS[metric]}: {VALUES[value]} (colour: band of % change)", width)
    # Plotly lifts a title of more lines than one by a line above its anchor (measured in Chromium: 5 px
    # above the figure with two lines): it is padded down by the lines it gains, and they are added twice
    extra = 2 * (len(lines) - 1) * TITLE_LINE_PX
    if len(lines) > 1:
        title_at = dict(y=1, yref="container", pad=dict(t=8 + (len(lines) - 1) * TITLE_LINE_PX))
    fig.update_layout(
        width=width, height=height + extra, margin={**margin, "t": margin["t"] + extra},
        plot_bgcolor="white", clickmode="event+select", dragmode=False,
        legend=dict(title=dict(text=f"{METRICS[metric]} % change band (penalty):", side="top"),
                    orientation="h", x=0, xanchor="left", entrywidth=LEGEND_ENTRY_WIDTH - 30,
                    font=dict(size=11), **legend_at),
        title=dict(text="<br>".join(html.escape(line) for line in lines),
                   x=0, xanchor="left", yanchor="top", font=dict(size=14), **title_at),
    )


def _ticks(n: int, labels: list[str], reverse: bool = False, **extra) -> dict:
    """An axis of ``n`` grid positions labelled ``labels`` (top to bottom when ``reverse``)."""
    return dict(range=[n - 0.5, -0.5] if reverse else [-0.5, n - 0.5], tickmode="array",
                tickvals=list(range(n)), ticktext=labels, showgrid=False, zeroline=False, fixedrange=True,
                **extra)


def _lay_out_down(fig: go.Figure, cols: list, model_rows: list[str], totals: Mapping[str, int], metric: str,
                  value: str) -> None:
    """Perturbations as rows: the model names (x axis) on top of the grid and the band legend above
    them, under the title, so the keys are where the reading starts; the family names on the right."""
    px = FULL_TEXT_CELL
    n_models, n_rows = len(model_rows), len(cols)
    y_labels = [html.escape(c.label) for c in cols]
    left = 20 + int(6.6 * max(len(s) for s in y_labels))
    right = 30 + 8 * max(len(c.family) for c in cols)
    label_h = 40 + int(7.2 * max(len(m) for m in model_rows))   # model names at -60 degrees, Σ under them
    grid_h = n_rows * px
    # Plotly wraps a horizontal legend at the plot area's width (measured in Chromium: one entry
    # per line above a single model's 40 px column)
    legend_h = 24 + _legend_rows((n_models * px) // LEGEND_ENTRY_WIDTH) * LEGEND_ROW_HEIGHT
    top, bottom = 40 + legend_h + label_h, 20
    # the legend's y is in plot fractions: above the grid by the model labels' height
    _frame(fig, metric, value, left + n_models * px + right, top + grid_h + bottom,
           dict(l=left, r=right, t=top, b=bottom),
           legend_at=dict(y=1 + (label_h + 4) / grid_h, yanchor="bottom"),
           title_at=dict(y=1, yref="container", pad=dict(t=8)))
    fig.update_xaxes(**_ticks(n_models, _model_labels(model_rows, totals), tickangle=-60, side="top"))
    fig.update_yaxes(**_ticks(n_rows, y_labels, reverse=True, tickfont=dict(size=11)))


FAMILY_GAP = 0.6   # n-across: a band this many rows high above each family, holding its name


def _family_gapped(rows: Sequence) -> list[float]:
    """y of each row with a FAMILY_GAP band above each family's first row (n-across: the family
    names sit in the grid, not beside it, so the figure stays within a narrow page)."""
    ys, families = [], 0
    for i, row in enumerate(rows):
        if i == 0 or row.family != rows[i - 1].family:
            families += 1
        ys.append(i + families * FAMILY_GAP)
    return ys


def _two_lines(label: str, longest: int = 16) -> str:
    """``typo_Q(layout=qwertz, rate=0.1)`` as the name and its parameters on two lines."""
    name, paren, rest = label.partition("(")
    return f"{name}<br>({rest}" if paren and len(label) > longest else label


def _lay_out_n_across(fig: go.Figure, grid: NGrid, row_y: list[float], model_rows: list[str],
                      totals: Mapping[str, int], metric: str, value: str) -> None:
    """Perturbations as rows, n across: per model a block of n columns (n on top), the model's name
    and penalty total above its block, the band legend above those; each family's name in a band
    above its rows; parameters the rows share, once under the title."""
    px, k = FULL_TEXT_CELL, grid.n_columns
    n_models = len(model_rows)
    labels = [_two_lines(r.label) for r in grid.rows]
    y_labels = [html.escape(lab).replace("&lt;br&gt;", "<br>") for lab in labels]
    left = 20 + int(6.6 * max(len(line) for lab in labels for line in lab.split("<br>")))
    right = 20
    span = n_models * k + (n_models - 1) * N_GAP          # grid units across
    x_right = span - 0.5
    height_units = row_y[-1] + 1                            # rows and family bands, top to bottom
    names = _model_labels(model_rows, {})
    # a model's name fits across its block at ~7 px a character; longer ones are turned
    longest = max(len(m) for m in model_rows)
    turned = 7 * longest > k * px
    name_h = (10 + int(5.2 * longest)) if turned else 18
    tick_h, total_h = 22, 18 if totals else 0
    label_h = tick_h + name_h + total_h + 8
    grid_h = int(height_units * px)
    legend_h = 24 + _legend_rows(int(span * px) // LEGEND_ENTRY_WIDTH) * LEGEND_ROW_HEIGHT
    shared = ", ".join(f"{html.escape(str(p))}={html.escape(str(v))}" for p, v in grid.constants.items())
    title_h = 18 if shared else 0
    top, bottom = 40 + title_h + legend_h + label_h, 20
    _frame(fig, metric, value, left + int(span * px) + right, top + grid_h + bottom,
           dict(l=left, r=right, t=top, b=bottom),
           legend_at=dict(y=1 + (label_h + 4) / grid_h, yanchor="bottom"),
           title_at=dict(y=1, yref="container", pad=dict(t=8)))
    if shared:   # under the title, above the legend
        fig.add_annotation(x=0, y=1, xref="paper", yref="paper", xanchor="left", yanchor="bottom", xshift=4 - left,
                           yshift=label_h + 4 + legend_h, showarrow=False, font=dict(size=11),
                           text=f"{html.escape(grid.param)} across; {shared} in every row with it")
    for m, name in enumerate(names):
        centre = m * (k + N_GAP) + (k - 1) / 2
        total = f"Σ {totals[model_rows[m]]}" if model_rows[m] in totals else ""
        if total:
            fig.add_annotation(x=centre, y=1, xref="x", yref="paper", yanchor="bottom", yshift=tick_h,
                               text=total, showarrow=False, font=dict(size=11))
        fig.add_annotation(x=centre, y=1, xref="x", yref="paper", yanchor="bottom", xanchor="left" if turned
                           else "center", yshift=tick_h + total_h, text=f"<b>{name}</b>", showarrow=False,
                           textangle=-45 if turned else 0, font=dict(size=12))
    tickvals = [m * (k + N_GAP) + j for m in range(n_models) for j in range(k)]
    fig.update_xaxes(range=[-0.5, x_right], tickmode="array", tickvals=tickvals,
                     ticktext=grid.column_labels * n_models, side="top", showgrid=False, zeroline=False,
                     fixedrange=True, tickfont=dict(size=11))
    fig.add_annotation(x=0, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom", xshift=-6,
                       yshift=2, text=f"{html.escape(grid.param)} →", showarrow=False, font=dict(size=11))
    for i, row in enumerate(grid.rows):   # the family bands: a line on top, the name inside
        if i == 0 or row.family != grid.rows[i - 1].family:
            band_top = row_y[i] - 0.5 - FAMILY_GAP
            fig.add_annotation(x=-0.5, y=band_top + FAMILY_GAP / 2, xref="x", yref="y", xanchor="left",
                               text=f"<b>{html.escape(row.family)}</b>", showarrow=False, font=dict(size=11))
            if i:
                fig.add_shape(type="line", x0=-0.5, x1=x_right, y0=band_top, y1=band_top, xref="x", yref="y",
                              line=dict(color="#444", width=1.5))
    fig.update_yaxes(range=[height_units - 0.5, -0.5], tickmode="array", tickvals=row_y, ticktext=y_labels,
                     showgrid=False, zeroline=False, fixedrange=True, tickfont=dict(size=11))


def _lay_out(fig: go.Figure, cols: list, model_rows: list[str], totals: Mapping[str, int], metric: str,
             value: str, px: int) -> None:
    """Size, margins, axes, title and legend: the grid on top, the x labels under it, the band
    legend under the plot in rows as wide as the figure."""
    n_rows, n_cols = len(model_rows), len(cols)
    x_labels = [html.escape(c.label) for c in cols]
    left = 20 + 7 * max(max(len(m) for m in model_rows), 6)
    # x labels at -60 degrees: about 7.2 px of height per character at the 12 px tick font (6.2 let the
    # legend title cover the first letters of a label like "keyboard_Q(p=0.25)")
    label_h = 30 + int(7.2 * max(len(s) for s in x_labels))
    grid_h = n_rows * px
    area_h = grid_h + label_h   # the grid on top, the x labels below it
    width = left + n_cols * px + 20
    # The band legend sits under the plot, in rows as wide as the figure: beside the grid it
    # took 190 px and covered the cells at 800 px.
    top, right, bottom = 90, 20, 40 + _legend_rows((width - 20) // LEGEND_ENTRY_WIDTH) * LEGEND_ROW_HEIGHT
    _frame(fig, metric, value, width, top + area_h + bottom, dict(l=left, r=right, t=top, b=bottom),
           legend_at=dict(y=0, yanchor="top"), title_at=dict(y=0.995))
    fig.update_xaxes(**_ticks(n_cols, x_labels, tickangle=-60))
    fig.update_yaxes(**_ticks(n_rows, _model_labels(model_rows, totals), reverse=True,
                              tickfont=dict(size=12 if px >= 34 else 10),   # two label lines fit a row
                              domain=[1 - grid_h / area_h, 1]))
