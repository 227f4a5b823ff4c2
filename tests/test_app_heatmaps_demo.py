"""Heatmaps in a live demo (issue #26): readable in a window 800 px wide, and a large sweep's first
open served from the aggregates stored when it finished (core.sweeps.analysis.aggregates).

The toy sweep and its hand-computed cells are tests/test_app_heatmaps.py's.
"""
from __future__ import annotations

import json
import sqlite3

from streamlit.testing.v1 import AppTest
from test_app_heatmaps import PAGE, _chart_spec, _frame

from core.render.heatmap import heatmap_figure
from core.sweeps.analysis import aggregates as aggregates
from core.sweeps.analysis import sweep_cells


def test_heatmap_fits_beside_the_sidebar_of_an_800px_window(sweep_db):
    """Beside Streamlit's sidebar an 800 px window leaves ~500 px: the figure (labels and legend
    included) fits, the legend is under the grid, not over it, and the cells keep their numbers."""
    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    for n_cols in (5, 11):   # the toy's 5 columns, and 11 (the benchmark sweep's)
        cols = sorted({(c.perturbation, c.params_json) for c in cells})
        some = [c for c in cells if (c.perturbation, c.params_json) in cols[:n_cols]]
        fig, _ = heatmap_figure(some, "f1", "pct", totals=sweep_cells.penalty_totals(some, "f1"))
        assert fig.layout.width <= 500, fig.layout.width
        assert fig.layout.legend.orientation == "h" and fig.layout.legend.yanchor == "top"
        assert fig.layout.legend.y <= 0   # under the plot area
        assert fig.layout.margin.r <= 20
    # 7 columns: 42 px cells, wide enough for the value and the penalty; 11 columns (the
    # benchmark sweep's) still fit, with the penalty alone in 27 px cells (the value is in the hover)
    for n_cols, size, both in ((7, 40, True), (11, 25, False)):
        wide = [c.__class__(**{**c.as_dict(), "params_json": f'{{"k":{i}}}', "label": f"DCRQ(n_chars={i})",
                               "model": "minilm-squad-noise"}) for i in range(n_cols) for c in cells[:1]]
        fig, _ = heatmap_figure(wide, "f1", "pct", totals={"minilm-squad-noise": 3})
        assert fig.data[0].marker.size == size and ("<br>" in fig.data[0].text[0]) == both
        assert fig.layout.width <= 470, (n_cols, fig.layout.width)


def test_first_open_reads_the_stored_aggregates_and_not_stale_ones(sweep_db):
    sid = sweep_cells.list_sweeps(sweep_db)[0]["id"]
    stored = aggregates.store(sweep_db, "toy-sweep")
    assert [c["label"] for c in stored["cells"]] == [c.label for c in sweep_cells.cells(sweep_db, sid)]
    assert set(stored) == {"cells", "noise_rates", "traps:clean", 'differences:["fake-a", "fake-b"]'}
    # Mark the stored copy (a penalty no live computation gives): the page must show it.
    conn = sqlite3.connect(sweep_db)
    marked = [{**c, "f1_penalty": 9} if c["model"] == "fake-a" else c for c in stored["cells"]]
    conn.execute("UPDATE sweep_aggregates SET json = ? WHERE name = 'cells'", (json.dumps(marked),))
    conn.commit()
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert list(_frame(at, "penalty total (F1)")["penalty total (F1)"]) == [45, 13]   # 5 cells x 9
    assert _chart_spec(at)["layout"]["yaxis"]["ticktext"][0] == "fake-a<br>Σ 45"
    # Once the sweep moves on (resumed, extended), the stored copy is stale: computed live again.
    conn.execute("UPDATE sweeps SET updated_at = '2099-01-01T00:00:00' WHERE id = ?", (sid,))
    conn.commit()
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert list(_frame(at, "penalty total (F1)")["penalty total (F1)"]) == [12, 13]
