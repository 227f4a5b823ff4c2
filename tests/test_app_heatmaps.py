"""Heatmaps page (AppTest) and its figure builder, on a sweep with hand-computed cells.

Two lookup-table engines answer a five-question toy set, so every cell is worked out by hand:

clean: fake-a answers q1-q4 right and q5 half right ("Neumann" for "Balthasar Neumann": F1 2/3);
       fake-b answers all five right.
TUQ (upper case):      fake-a F1 (1 + 1 + 2/3 + 0 + 0)/5 vs clean (4 + 2/3)/5: -42.86 %, band (-70, -40], +3
                       fake-b F1 (4 + 2/3)/5 vs 100: -6.67 %, band (-10, -2], +1
RUQ (umlauts; only q5 has one): fake-a 100 vs 66.67: +50 %, band > 10, +1
                       fake-b 0 vs 100: -100 %, band [-100, -70], +4
drop_qmark_Q:          both answer as on the clean questions: 0 %, band (-2, 0], 0
DCRQ(n_chars=1|2):     neither engine knows a misspelt question: F1 0, -100 %, +4 each
Penalty totals (F1): fake-a 3 + 1 + 0 + 4 + 4 = 12, fake-b 1 + 4 + 0 + 4 + 4 = 13.
"""
from __future__ import annotations

import html
import json
import re

import pytest
from rendered import open_tab
from streamlit.testing.v1 import AppTest

from core.datasets import Dataset
from core.perturb.spec import parse_specs
from core.render.heatmap import (
    BAND_COLOURS,
    MAX_ACROSS,
    NO_SCORE_COLOUR,
    cell_value,
    choose_layout,
    grid_size,
    heatmap_figure,
    layout_for,
)
from core.sweeps.analysis import sweep_cells
from core.sweeps.analysis import tables as views
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Answer, Prediction, QAExample, Span

PAGE = "../pages/heatmaps.py"


class LookupEngine:
    """Answers each question with a fixed text found in the context; unknown questions get no span."""

    def __init__(self, answers: dict[str, str], fingerprint: str):
        self.answers, self.fingerprint = answers, fingerprint

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = []
        for q, c in zip(questions, contexts):
            a = self.answers.get(q)
            if a is None or a not in c:
                out.append(Prediction())
            else:
                out.append(Prediction([Span(a, c.index(a), c.index(a) + len(a), 1.0)]))
        return out


def _ex(i, question, context, answer):
    return QAExample(f"q{i}", question, context, (Answer(answer, context.index(answer)),))


TOY = Dataset("toy", "en", [
    _ex(1, "What is the capital of France?", "Paris is the capital of France.", "Paris"),
    _ex(2, "When was the tower built?", "The tower was built in 1889.", "1889"),
    _ex(3, "Which river flows through London?", "The river Thames flows through London.", "Thames"),
    _ex(4, "How many people live in Berlin?", "Berlin has a population of three million people.", "three million"),
    _ex(5, "Who built the palace in Würzburg?", "The palace in Würzburg was built by Balthasar Neumann.",
        "Balthasar Neumann"),
])
CLEAN_A = {"What is the capital of France?": "Paris", "When was the tower built?": "1889",
           "Which river flows through London?": "Thames", "How many people live in Berlin?": "three million",
           "Who built the palace in Würzburg?": "Neumann"}
ANSWERS_A = {**CLEAN_A,
             **{q.rstrip("?"): a for q, a in CLEAN_A.items()},
             "WHAT IS THE CAPITAL OF FRANCE?": "Paris", "WHEN WAS THE TOWER BUILT?": "1889",
             "WHICH RIVER FLOWS THROUGH LONDON?": "river Thames", "HOW MANY PEOPLE LIVE IN BERLIN?": "Berlin",
             "WHO BUILT THE PALACE IN WÜRZBURG?": "palace",
             "Who built the palace in Wuerzburg?": "Balthasar Neumann"}
CLEAN_B = {**CLEAN_A, "Who built the palace in Würzburg?": "Balthasar Neumann"}
ANSWERS_B = {**CLEAN_B,
             **{q.rstrip("?"): a for q, a in CLEAN_B.items()},
             **{q.upper(): a for q, a in CLEAN_A.items()},  # TUQ: q5 half right as "Neumann"
             "Who built the palace in Wuerzburg?": "palace"}
SPECS = "TUQ,RUQ,drop_qmark_Q,DCRQ:n_chars=1..2"
EXPECTED_COLUMNS = ["drop_qmark_Q", "TUQ", "RUQ", "DCRQ(n_chars=1, n_words=1)", "DCRQ(n_chars=2, n_words=1)"]
EXPECTED_BANDS = {
    "fake-a": ["(-2, 0]", "(-70, -40]", "> 10", "[-100, -70]", "[-100, -70]"],
    "fake-b": ["(-2, 0]", "(-10, -2]", "[-100, -70]", "[-100, -70]", "[-100, -70]"],
}
EXPECTED_COLOURS = {
    "fake-a": ["#91cf60", "#f46d43", "#2166ac", "#a50026", "#a50026"],
    "fake-b": ["#91cf60", "#fee08b", "#a50026", "#a50026", "#a50026"],
}


def build_sweep(db) -> str:
    config = SweepConfig("toy", parse_specs(SPECS), ["fake-a", "fake-b"], repeats=2, seed=1, name="toy-sweep")
    engines = {"fake-a": LookupEngine(ANSWERS_A, "a1"), "fake-b": LookupEngine(ANSWERS_B, "b1")}
    run = run_sweep(config, engines, db, dataset=TOY)
    assert run.status == "done" and run.done_units == run.total_units == 2 * 5 * (1 + 1 + 1 + 1 + 2 + 2)
    return run.name


# --------------------------------------------------------------------------------- figure builder


def test_figure_markers_colours_and_labels(sweep_db):
    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    totals = sweep_cells.penalty_totals(cells, "f1")
    assert totals == {"fake-a": 12, "fake-b": 13}
    fig, plotted = heatmap_figure(cells, "f1", "pct", totals=totals, models=["fake-a", "fake-b"])
    trace = fig.data[0]
    assert len(trace.x) == len(plotted) == 2 * 5          # one marker per (model, perturbation)
    assert trace.marker.symbol == "square" and trace.marker.size == grid_size(5) - 2 == 58
    assert [c.label for c in plotted[:5]] == EXPECTED_COLUMNS
    assert list(fig.layout.xaxis.ticktext) == EXPECTED_COLUMNS
    assert list(fig.layout.yaxis.ticktext) == ["fake-a<br>Σ 12", "fake-b<br>Σ 13"]
    for m, model in enumerate(("fake-a", "fake-b")):
        mine = plotted[5 * m:5 * m + 5]
        assert [c.f1_band for c in mine] == EXPECTED_BANDS[model]
        assert list(trace.marker.color[5 * m:5 * m + 5]) == EXPECTED_COLOURS[model]
        assert list(trace.x[5 * m:5 * m + 5]) == [0, 1, 2, 3, 4] and set(trace.y[5 * m:5 * m + 5]) == {m}
    # texts: value and penalty; hover: clean and perturbed scores and N
    assert trace.text[1] == "-42.9<br>+3" and trace.text[2] == "+50.0<br>+1" and trace.text[0] == "+0.0<br>+0"
    assert "clean F1: 93.3" in trace.hovertext[1] and "perturbed F1: 53.3" in trace.hovertext[1]
    assert "N = 5 examples" in trace.hovertext[1] and "N = 1 examples" in trace.hovertext[2]
    assert [list(d)[0] for d in trace.customdata] == list(range(10))
    # family names above the columns, lines between families (artefact | case | character)
    assert [a.text for a in fig.layout.annotations] == ["<b>artefact</b>", "<b>case</b>", "<b>character</b>"]
    assert [s.x0 for s in fig.layout.shapes] == [0.5, 1.5]
    # other values, same colours
    fig_drop, _ = heatmap_figure(cells, "f1", "drop")
    assert fig_drop.data[0].text[1] == "40.0<br>+3"
    assert list(fig_drop.data[0].marker.color) == list(trace.marker.color)
    assert cell_value(plotted[1], "em", "score") == 40.0
    # EM: fake-a RUQ has clean EM 0 and EM 100: +inf, band > 10
    fig_em, plotted_em = heatmap_figure(cells, "em", "pct")
    assert fig_em.data[0].text[2] == "+∞<br>+1" and fig_em.data[0].marker.color[2] == BAND_COLOURS["> 10"]


def test_many_columns_give_small_cells_with_penalty_only(sweep_db):
    import dataclasses

    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    many = [dataclasses.replace(c, params_json=f"{c.params_json}#{k}", label=f"{c.label}#{k}")
            for k in range(12) for c in cells]                     # 60 columns
    fig, plotted = heatmap_figure(many, layout="models-as-rows")
    assert grid_size(60) == 18 and fig.data[0].marker.size == 16 and len(plotted) == 120
    assert fig.data[0].text[12] == "+3"            # fake-a TUQ#0, after the 12 artefact columns: penalty only
    assert fig.layout.width == fig.layout.margin.l + 60 * 18 + fig.layout.margin.r


def test_more_columns_than_fit_across_are_drawn_down_the_page(sweep_db):
    """The German catalogue at n = 1..4 is 140 perturbations: across a page they were squeezed
    unreadable, so beyond MAX_ACROSS the perturbations are the rows and the models the columns."""
    import dataclasses

    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    many = [dataclasses.replace(c, params_json=f"{c.params_json}#{k}", label=f"{c.label}#{k}")
            for k in range(9) for c in cells]                      # 45 columns, 2 models
    assert choose_layout(45) == "perturbations-as-rows" and choose_layout(MAX_ACROSS) == "models-as-rows"
    across, plotted_across = heatmap_figure(many, layout="models-as-rows")
    fig, plotted = heatmap_figure(many, totals={"fake-a": 12, "fake-b": 13})
    assert [c.label for c in plotted] == [c.label for c in plotted_across]   # the same cells, same order
    trace = fig.data[0]
    # x is the model, y the perturbation: the transpose of the other layout
    assert list(trace.x) == list(across.data[0].y) and list(trace.y) == list(across.data[0].x)
    assert list(fig.layout.xaxis.ticktext) == ["fake-a<br>Σ 12", "fake-b<br>Σ 13"]
    assert fig.layout.xaxis.side == "top"
    assert list(fig.layout.yaxis.ticktext) == [c.label for c in plotted[:45]]
    # cells tall enough for the value and the penalty; the figure as narrow as two columns allow
    assert trace.marker.size == 38 and "<br>" in trace.text[1]
    assert fig.layout.height >= 45 * 40 and fig.layout.width < 500
    # families right of their rows, a line between groups; the legend above the grid
    assert [a.text for a in fig.layout.annotations] == ["<b>artefact</b>", "<b>case</b>", "<b>character</b>"]
    assert all(a.xanchor == "left" for a in fig.layout.annotations)
    assert [s.y0 for s in fig.layout.shapes] == [8.5, 17.5]
    assert fig.layout.legend.y > 1 and fig.layout.legend.yanchor == "bottom"
    # a click maps back to its cell as before: customdata starts with the marker's index
    assert [list(d)[0] for d in trace.customdata] == list(range(90))
    with pytest.raises(ValueError, match="layout must be one of"):
        heatmap_figure(many, layout="sideways")


def test_n_across_folds_each_perturbation_into_one_row_with_its_n_across(sweep_db):
    """The German catalogue's 140 specs are 44 perturbations at n = 1..4: one row per perturbation,
    per model one column per n (and one for the specs without n), the cells as in the other layouts."""
    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    fig, plotted = heatmap_figure(cells, totals={"fake-a": 12, "fake-b": 13}, layout="n-across")
    _, plotted_across = heatmap_figure(cells, layout="models-as-rows")
    assert [c.label for c in plotted] == [c.label for c in plotted_across]
    trace = fig.data[0]
    # plotted order: drop_qmark_Q, TUQ, RUQ (no n: column 2), DCRQ at n_chars 1 and 2 (columns 0, 1);
    # fake-b's block starts 3 columns + a half-cell gap to the right
    assert list(trace.x) == [2, 2, 2, 0, 1, 5.5, 5.5, 5.5, 3.5, 4.5]
    # rows 0..3, each family below a band of 0.6 rows that holds its name (artefact | case | character)
    assert list(trace.y) == pytest.approx([0.6, 2.2, 3.8, 4.8, 4.8] * 2)
    assert list(fig.layout.yaxis.ticktext) == ["drop_qmark_Q", "TUQ", "RUQ", "DCRQ(n_words=1)"]
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "no n"] * 2 and fig.layout.xaxis.side == "top"
    assert list(trace.marker.color) == EXPECTED_COLOURS["fake-a"] + EXPECTED_COLOURS["fake-b"]
    assert trace.text[3] == "-100.0<br>+4" and trace.text[1] == "-42.9<br>+3"
    texts = [a.text for a in fig.layout.annotations]
    assert {"<b>fake-a</b>", "<b>fake-b</b>", "Σ 12", "Σ 13", "n_chars →"} <= set(texts)
    family = {a.text: a.y for a in fig.layout.annotations if a.text in ("<b>artefact</b>", "<b>case</b>",
                                                                         "<b>character</b>")}
    assert family == pytest.approx({"<b>artefact</b>": -0.2, "<b>case</b>": 1.4, "<b>character</b>": 3.0})
    assert [s.y0 for s in fig.layout.shapes] == pytest.approx([1.1, 2.7])   # a line above each band but the first
    assert fig.layout.width < 470     # beside the sidebar in a window 800 px wide
    assert [list(d)[0] for d in trace.customdata] == list(range(10))   # clicks map back as before


def test_one_model_with_many_specs_of_n_is_drawn_n_across_by_default(sweep_db):
    import dataclasses

    cells = [c for c in sweep_cells.cells(sweep_db, "toy-sweep") if c.model == "fake-a"]
    many = [dataclasses.replace(c, params={**c.params, "k": k}, params_json=json.dumps({**c.params, "k": k}),
                                label=f"{c.label}#{k}") for k in range(9) for c in cells]   # 45 specs
    assert views.n_grid(many).n_columns == 3 and len(views.n_grid(many).rows) == 4 * 9   # DCRQ's n_chars across
    three = many + [dataclasses.replace(c, model=m) for m in ("b", "c") for c in many]
    assert layout_for(many, 1) == "n-across" and layout_for(three, 3) == "perturbations-as-rows"   # 3 blocks: too wide
    fig, plotted = heatmap_figure(many)
    down, _ = heatmap_figure(many, layout="perturbations-as-rows")
    assert len(fig.layout.yaxis.ticktext) == 36 and fig.layout.height < down.layout.height
    # 45 specs in 36 rows and 3 family bands; n_words=1, shared by the 9 DCRQ rows, is said once
    assert fig.layout.height - fig.layout.margin.t - fig.layout.margin.b == int((36 + 3 * 0.6) * 40)
    assert "DCRQ(k=0)" in fig.layout.yaxis.ticktext
    assert "n_chars across; n_words=1 in every row with it" in [a.text for a in fig.layout.annotations]
    # two specs that their params do not tell apart fold into no grid: drawn as rows instead
    clashing = [dataclasses.replace(c, params_json=f"{c.params_json}#{k}", label=f"{c.label}#{k}")
                for k in range(9) for c in cells]
    assert views.n_grid(clashing) is None and layout_for(clashing, 1, "n-across") == "perturbations-as-rows"


def test_cell_without_scores_is_grey():
    from core.sweeps.analysis.sweep_cells import Cell

    empty = Cell("m", "RUQ", {}, "{}", "RUQ", "character", "question", 0, 0, 5, *([None] * 13))
    fig, _ = heatmap_figure([empty])
    assert list(fig.data[0].marker.color) == [NO_SCORE_COLOUR] and fig.data[0].text[0] == "–<br>"
    with pytest.raises(ValueError, match="no cells"):
        heatmap_figure([])


def test_a_small_sweeps_title_wraps_inside_its_figure():
    """Issue 53: a sweep of one perturbation drew "F1: % change (colour: band c" and cut the rest; the
    title now takes as many lines as the figure's width needs, each within it, and the figure grows
    above the plot by those lines (the plot keeps its place)."""
    from core.render.heatmap import TITLE_CHAR_PX, TITLE_LINE_PX
    from core.sweeps.analysis.sweep_cells import Cell

    one = [Cell(m, "RUQ", {}, "{}", "RUQ", "character", "question", 0, 0, 5, *([None] * 13))
           for m in ("minilm-squad-v2", "mpnet-squad-v2")]
    for value in ("pct", "score", "drop"):
        fig, _ = heatmap_figure(one, "f1", value)
        lines = fig.layout.title.text.split("<br>")
        assert len(lines) >= 2 and " ".join(lines).startswith("F1: ") and lines[-1].endswith("% change)")
        assert all(len(line) * TITLE_CHAR_PX <= fig.layout.width - 8 for line in lines), (fig.layout.width, lines)
        wide, _ = heatmap_figure(one * 1 + [Cell("m", f"P{k}", {}, "{}", f"P{k}", "f", "question", 0, 0, 5,
                                                 *([None] * 13)) for k in range(8)], "f1", value)
        assert "<br>" not in wide.layout.title.text   # a wide figure keeps its title on one line
        assert fig.layout.margin.t == 90 + 2 * (len(lines) - 1) * TITLE_LINE_PX


def test_views_tables(sweep_db):
    cells = sweep_cells.cells(sweep_db, "toy-sweep")
    rows = views.cell_rows(cells, ["fake-a", "fake-b"])
    assert [(r["model"], r["label"], r["F1 penalty"]) for r in rows[:3]] == [
        ("fake-a", "drop_qmark_Q", 0), ("fake-a", "TUQ", 3), ("fake-a", "RUQ", 1)]
    assert rows[1]["F1 % change"] == -42.86 and rows[1]["clean F1"] == 93.33
    assert views.noiseqa_table(cells) == []          # no interface-noise family in this sweep
    table = sweep_cells.penalty_table(sweep_db, "toy-sweep", param="n_chars")
    assert views.penalty_rows(table) == [{"model": "fake-a", "n_chars=1": 4, "n_chars=2": 4, "total": 8},
                                         {"model": "fake-b", "n_chars=1": 4, "n_chars=2": 4, "total": 8}]


# -------------------------------------------------------------------------------------------- page


def _frame(at, column: str):
    """The page's dataframe that has ``column`` (dataframes without selection carry no key)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} dataframes with column {column!r}"
    return found[0]


def _chart_spec(at) -> dict:
    charts = at.get("plotly_chart")
    assert charts, "no plotly chart on the page"
    return json.loads(charts[0].proto.spec)


def test_page_heatmap_totals_drilldown_and_exports(sweep_db):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    spec = _chart_spec(at)
    cells = spec["data"][0]
    assert cells["marker"]["symbol"] == "square" and len(cells["x"]) == 10
    assert cells["marker"]["color"] == EXPECTED_COLOURS["fake-a"] + EXPECTED_COLOURS["fake-b"]
    assert spec["layout"]["yaxis"]["ticktext"] == ["fake-a<br>Σ 12", "fake-b<br>Σ 13"]
    assert spec["layout"]["xaxis"]["ticktext"] == EXPECTED_COLUMNS

    penalties = _frame(at, "penalty total (F1)")
    assert list(penalties["model"]) == ["fake-a", "fake-b"]
    assert list(penalties["penalty total (F1)"]) == [12, 13]
    # EM: fake-a TUQ -50 % (+3), RUQ +inf (+1), drop_qmark 0, DCRQ 2 x +4; fake-b TUQ EM 80 vs 100 (-20 %, +2)
    assert list(penalties["penalty total (EM)"]) == [12, 14]

    assert not [df for df in at.dataframe if "no n" in df.value.columns]   # a hidden tab is not built
    open_tab(at, "Penalty by n")
    pen_n = _frame(at, "total")
    assert list(pen_n.columns) == ["model", "n_chars=1", "n_chars=2", "total"]
    assert pen_n.to_dict("records")[0] == {"model": "fake-a", "n_chars=1": 4, "n_chars=2": 4, "total": 8}
    by_n = _frame(at, "no n")   # each perturbation one row, its n across
    b = by_n[by_n["model"] == "fake-b"].astype(object).where(by_n.notna(), None)
    assert b[["perturbation", "n_chars=1", "no n", "penalty"]].values.tolist()[1:] == \
        [["TUQ", None, -6.67, 1], ["RUQ", None, -100.0, 4], ["DCRQ(n_words=1)", -100.0, None, 8]]

    # Drill-down through the select box (AppTest cannot click a Plotly point): fake-a x TUQ is cell 1.
    open_tab(at, "Heatmap")
    at.selectbox(key="hm_cell").set_value(1).run()
    assert not at.exception
    ex = _frame(at, "F1 loss")
    assert list(ex["example"]) == ["q4", "q5", "q3", "q1", "q2"]           # by F1 loss, largest first
    assert list(ex["F1 loss"]) == [100.0, 66.7, 33.3, 0.0, 0.0]
    assert list(ex["perturbed question"])[0] == "HOW MANY PEOPLE LIVE IN BERLIN?"
    assert list(ex["clean answer"])[:2] == ["three million", "Neumann"]
    assert list(ex["perturbed answer"])[:2] == ["Berlin", "palace"]
    contexts = [m.value for m in at.markdown if 'class="qax-context"' in m.value]
    assert len(contexts) == 1   # the largest loss in detail: every model's answer marked in one context
    shown_html = html.unescape(contexts[0])
    assert 'title="fake-a">Berlin</mark>' in shown_html
    assert 'title="fake-b, gold answer">three million</mark>' in shown_html
    # every model of the sweep side by side, not only the cell's
    texts = [t.value for t in at.text]
    assert texts.count("clean: three million  (F1 100)") == 2
    assert "perturbed: Berlin  (F1 0)" in texts and "perturbed: three million  (F1 100)" in texts
    at.radio(key="hm_show_answers").set_value("clean answers").run()
    contexts = [m.value for m in at.markdown if 'class="qax-context"' in m.value]
    assert 'title="fake-a, fake-b, gold answer">three million</mark>' in html.unescape(contexts[0])
    assert html.unescape(re.sub(r"<[^>]+>", "", contexts[0])) == TOY.examples[3].context

    # The metric switch re-colours: EM bands (fake-b TUQ: -20 % -> (-40, -10])
    at.radio(key="hm_metric").set_value("em").run()
    em_colours = _chart_spec(at)["data"][0]["marker"]["color"]
    assert em_colours[6] == BAND_COLOURS["(-40, -10]"] and em_colours[2] == BAND_COLOURS["> 10"]

    labels = [b.label for b in at.get("download_button")]
    for expected in ("⬇ CSV", "⬇ CSV of all cells", "⬇ HTML (interactive)"):
        assert expected in labels, labels
    assert labels.count("⬇ CSV") >= 3    # penalties, clean, examples

    # Plain statements where the sweep has no such perturbations
    open_tab(at, "DuReader-robust")
    infos = " ".join(i.value for i in at.info)
    # a view with nothing to show has no tab (issue 43), instead of a "This sweep has no ..." box
    tabs = [t.label for t in at.tabs]
    assert "NoiseQA" not in tabs and "Repair" not in tabs and "no interface-noise perturbation" not in infos
    assert tabs[0] == "Heatmap" and "DuReader-robust" in tabs
    assert "no paraphrase-family perturbation" in infos


def test_page_model_vs_model_paired_differences(sweep_db):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert not [df for df in at.dataframe if "F1 fake-b" in df.value.columns]   # no bootstrap until shown
    open_tab(at, "Model vs model")
    diff = _frame(at, "F1 fake-b").set_index("spec")
    # clean: fake-b gains 1/3 on q5 only -> +6.67; TUQ: 53.33 -> 93.33 -> +40.00
    assert (diff.loc["clean", "n"], diff.loc["clean", "difference"]) == (5, 6.67)
    assert (diff.loc["TUQ", "F1 fake-a"], diff.loc["TUQ", "F1 fake-b"], diff.loc["TUQ", "difference"]) == (
        53.33, 93.33, 40.0)
    assert diff.loc["TUQ", "ci95_low"] <= 40.0 <= diff.loc["TUQ", "ci95_high"]
    # NaN (not equal to itself): one pair has no interval
    assert diff.loc["RUQ", "n"] == 1 and diff.loc["RUQ", "difference"] != diff.loc["RUQ", "difference"]
    # B picked as fake-a the other way round: the signs flip
    at.selectbox(key="hm_diff_a").set_value("fake-b").run()
    flipped = _frame(at, "F1 fake-a").set_index("spec")
    assert flipped.loc["TUQ", "difference"] == -40.0
    assert "⬇ JSON" in [b.label for b in at.get("download_button")]


def test_page_without_database(tmp_path, monkeypatch):
    from core import config

    monkeypatch.setattr(config, "runs_dir", lambda: tmp_path / "runs")   # none of a developer's own sweeps
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "absent.sqlite"))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert at.selectbox(key="hm_db").value == "\x00demo"             # nothing of the user's: the demo
    at.selectbox(key="hm_db").set_value(str(tmp_path / "absent.sqlite")).run()   # the empty one, on purpose
    assert not at.exception
    assert any("holds no sweep yet" in m.value for m in at.markdown)   # and the demo sweep is offered
    assert [b.label for b in at.button if b.key == "hm_demo_sweep"] == ["Build the demo sweep"]
    assert not (tmp_path / "absent.sqlite").exists()      # reading must not create it


def test_mt_and_asr_breakdowns_from_files_and_params(tmp_path):
    """Interface-noise rows: a NoiseQA-style natural MT file (language from its name) and synthetic
    keyboard noise, in Table 4 order; the ASR breakdown reads voice/engine from parameters."""
    data = tmp_path / "data" / "noiseqa"
    data.mkdir(parents=True)
    noisy = Dataset("mt", "en", [QAExample(e.id, e.question.replace("What", "Which"), e.context, e.answers)
                                 for e in TOY.examples])
    noisy.to_squad_json(data / "xquad-translation-natural-th.json")
    config = SweepConfig("toy", ["file:noiseqa/xquad-translation-natural-th", "keyboard_Q"], ["fake-a"], seed=2)
    run = run_sweep(config, {"fake-a": LookupEngine(ANSWERS_A, "a1")}, tmp_path / "s.sqlite", dataset=TOY,
                    data_dir=tmp_path / "data")
    cells = sweep_cells.cells(tmp_path / "s.sqlite", run.name)
    table = views.noiseqa_table(cells)
    assert [(r["interface"], r["kind"], r["perturbation"]) for r in table] == [
        ("keyboard", "synthetic", "keyboard_Q(p=0.25)"), ("MT", "natural", "file:xquad-translation-natural-th")]
    mt_row = table[1]
    # only q1 changed ("Which is the capital of France?"), unknown to the engine: F1 (0 + 1 + 1 + 1 + 2/3)/5
    assert (mt_row["fake-a N"], mt_row["fake-a clean F1"], mt_row["fake-a noisy F1"]) == (5, 93.33, 73.33)
    mt = views.mt_breakdown(tmp_path / "s.sqlite", run.name, cells)
    assert [(r["model"], r["source language"], r["kind"], r["F1"]) for r in mt] == [("fake-a", "th", "natural", 73.33)]
    assert views.asr_breakdown(cells) == []
    # Table 3 beside Table 4: only q1 changed, "What" -> "Which" (3 character edits, 1 word) over the
    # 152 characters / 28 words of the five original questions
    rates = sweep_cells.noise_rates(tmp_path / "s.sqlite", run.name)
    mt_rates = rates[("file:noiseqa/xquad-translation-natural-th", "{}")]
    assert mt_rates["n"] == 5
    assert (round(mt_rates["cer"], 2), round(mt_rates["wer"], 2)) == (1.97, 3.57)
    with_rates = views.noiseqa_table(cells, rates)
    assert (with_rates[1]["CER % (raw)"], with_rates[1]["WER % (raw)"]) == (1.97, 3.57)
    # Table 3 as the paper computes it: lower-cased, no punctuation: "what" -> "which" is 3 edits over
    # the 147 characters left of the five questions (no "?"), 1 of 28 words
    assert (with_rates[1]["CER % (Table 3)"], with_rates[1]["WER % (Table 3)"]) == (2.04, 3.57)
    assert with_rates[0]["WER % (raw)"] > 0 and with_rates[0]["perturbation"] == "keyboard_Q(p=0.25)"
    # core.translate.natural_mt's file names carry "mt", not "translation" (core.sweeps files them as "natural")
    assert views.interface_of("file:/x/runs/xquad-natural-mt-es", "natural") == "mt"
    assert views.interface_of("file:noiseqa/Natural/asr-speaker3", "natural") == "asr"
    assert views.interface_of("file:paraphrases/gan-ng", "paraphrase") is None
    trial = "file:/home/u/.cache/trials/anna-2026/challenge/whisper-base"   # core.collect.trials' layout
    assert (views.interface_of(trial, "natural"), views.kind_of(trial)) == ("asr", "natural")
    assert views.trial_file(trial) == ("anna-2026", "whisper-base")
    assert views.interface_of("translate_question", "sentence") is None


def test_asr_breakdown_reads_voice_and_engine():
    from core.sweeps.analysis.sweep_cells import Cell

    def asr_cell(model, voice, engine, f1):
        params = {"voice": voice, "engine": engine}
        return Cell(model, "asr_Q", params, json.dumps(params), f"asr_Q({voice})", "asr", "question", 10, 1, 0,
                    80.0, 70.0, f1, 50.0, None, None, None, None, None, None, None, None, None)

    cells = [asr_cell("m", "flite:kal16", "pocketsphinx", 40.0), asr_cell("m", "piper:joe", "whisper-base", 60.0),
             Cell("m", "file:noiseqa/Natural/asr-x", {}, "{}", "file:asr-x", "asr", "question", 3, 1, 0,
                  *([None] * 13)),
             Cell("m", "file:/c/trials/t1/challenge/pocketsphinx", {}, "{}", "file:pocketsphinx", "natural",
                  "question", 4, 1, 0, *([None] * 13))]
    rows = views.asr_breakdown(cells)
    assert [(r["voice"], r["engine"], r["F1"], r["clean F1"], r["N"]) for r in rows] == [
        ("flite:kal16", "pocketsphinx", 40.0, 80.0, 10), ("piper:joe", "whisper-base", 60.0, 80.0, 10),
        ("asr-x", "(file)", None, None, 3), ("speaker t1", "pocketsphinx", None, None, 4)]
    assert [r["kind"] for r in views.noiseqa_table(cells)] == ["synthetic", "synthetic", "natural", "natural"]


def test_page_noiseqa_and_dureader_views(tmp_path, monkeypatch):
    """A sweep with interface noise from files: Table 4 rows, the ASR and MT plots, DPR and traps."""
    data = tmp_path / "data" / "noiseqa"
    data.mkdir(parents=True)
    Dataset("asr", "en", [QAExample(e.id, e.question.lower().rstrip("?"), e.context, e.answers)
                          for e in TOY.examples]).to_squad_json(data / "xquad-asr-natural.json")
    Dataset("mt", "en", [QAExample(e.id, e.question.replace("What", "Which"), e.context, e.answers)
                         for e in TOY.examples]).to_squad_json(data / "xquad-translation-natural-th.json")
    db = tmp_path / "s.sqlite"
    config = SweepConfig("toy", ["file:noiseqa/xquad-asr-natural", "file:noiseqa/xquad-translation-natural-th"],
                         ["fake-a"], name="noise")
    run_sweep(config, {"fake-a": LookupEngine(ANSWERS_A, "a1")}, db, dataset=TOY, data_dir=tmp_path / "data")
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = open_tab(AppTest.from_file(PAGE, default_timeout=120).run(), "NoiseQA")
    assert not at.exception, at.exception

    table4 = _frame(at, "fake-a noisy F1")
    assert table4[["interface", "kind", "perturbation"]].values.tolist() == [
        ["ASR", "natural", "file:xquad-asr-natural"], ["MT", "natural", "file:xquad-translation-natural-th"]]
    # lower-cased questions without "?" are unknown to the engine: F1 0; MT changed q1 only
    assert table4["fake-a noisy F1"].tolist() == [0.0, 73.33]
    assert table4["fake-a clean F1"].tolist() == [93.33, 93.33]
    # lower-casing and dropping "?" changes the first and the last word of each question: 10 / 28
    assert table4["WER % (raw)"].tolist() == [35.71, 3.57]
    assert table4["WER % (Table 3)"].tolist() == [0.0, 3.57]   # ...which ASR never writes (the paper's figure)

    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [c["layout"].get("title", {}).get("text", "") for c in charts]
    asr = charts[titles.index("ASR noise: F1 per voice and ASR engine")]
    assert asr["data"][0]["x"] == ["xquad-asr-natural"] and asr["data"][0]["y"] == [0.0]
    assert asr["data"][1]["y"] == [93.33]                                  # the clean marker
    mt = charts[titles.index("MT noise: F1 per language translated into English")]
    assert mt["data"][0]["x"] == ["th"] and mt["data"][0]["y"] == [73.33]

    # DPR over the ASR file: every answer changed (empty vs the clean answer): 100 %
    open_tab(at, "DuReader-robust")
    at.multiselect(key="hm_dpr_families").set_value(["asr"]).run()
    assert not at.exception, at.exception
    dpr = _frame(at, "DPR %")
    assert dpr.values.tolist() == [["fake-a", "file:xquad-asr-natural", 5, 100.0], ["fake-a", "(all)", 5, 100.0]]
    assert "DPR against question similarity" in [   # (charts of other tabs may have no title)
        json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")]
    trap_caption = [c.value for c in at.caption if "have a trap sentence" in c.value]
    assert len(trap_caption) == 1 and re.search(r"(\d+) examples have a trap sentence, (\d+) none", trap_caption[0])
    found = re.search(r"(\d+) examples have a trap sentence, (\d+) none", trap_caption[0]).groups()
    assert int(found[0]) + int(found[1]) == 5


def test_png_and_html_export_of_the_heatmap(sweep_db):
    """PNG through kaleido + Chromium at the figure's own size (x2); HTML self-contained."""
    import struct

    from components.export import figure_html, figure_png, png_problem

    fig, _ = heatmap_figure(sweep_cells.cells(sweep_db, "toy-sweep"))
    page = figure_html(fig)
    assert page.startswith("<!doctype html>") and "plotly.js v" in page   # plotly.js inlined
    assert "<script src=" not in page and len(page) > 1_000_000               # nothing fetched when opened
    if png_problem() is not None:
        pytest.skip(png_problem())
    png = figure_png(fig)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (2 * fig.layout.width, 2 * fig.layout.height)


def test_cell_of_an_incomplete_sweep_says_its_rows_are_not_stored_yet(tmp_path, monkeypatch):
    """A sweep cancelled after its first chunk (the clean rows) has cells with no row yet: the
    drill-down says the sweep stopped before them, not that the perturbation applied to nothing."""
    import threading

    db = tmp_path / "sweeps.sqlite"
    stop = threading.Event()
    config = SweepConfig("toy", parse_specs("TUQ"), ["fake-a"], name="stopped")
    run = run_sweep(config, {"fake-a": LookupEngine(ANSWERS_A, "a1")}, db, dataset=TOY, chunk_size=5,
                    cancel=stop, progress=lambda done, total: done and stop.set())
    assert run.status == "cancelled" and run.done_units == 5 < run.total_units
    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    said = [i.value for i in at.info]
    assert not any("applied to no example" in s for s in said), said
    assert any("not stored yet" in s for s in said), said


def test_page_translate_or_answer_tab_reads_stored_route_comparisons(sweep_db, tmp_path, monkeypatch):
    """The three-route comparison (core.models.routes) stored under the cache's routes/ folder is
    shown per language, "—" where a route did not run, with its CSV in numbers."""
    from core.models import routes

    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / "routes").mkdir(parents=True)
    es = routes.summarise("es", {"translate": [0.0, 1.0, 1.0, 1.0], "cross": [1.0, 1.0, 0.0, 1.0],
                                 "native": [1.0, 1.0, 1.0, 1.0]})
    de = routes.summarise("de", {"cross": [1.0, 0.0], "native": [0.5, 0.5]}) | {"translate_missing": "no de->en pair"}
    rows = [r | {"model": "e5-qa-multi", "english_model": "e5-qa-multi"} for r in (es, de)]
    (tmp_path / "cache" / "routes" / "run.json").write_text(json.dumps(rows))
    at = open_tab(AppTest.from_file(PAGE, default_timeout=120).run(), "Translate or answer?")
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "language" in df.value.columns)
    assert list(table["language"]) == ["es", "de"]
    assert table[routes.ROUTE_LABELS["translate"]].tolist()[1] == "—"
    assert table[routes.ROUTE_LABELS["native"]].tolist()[0] == "100.0 (100.0–100.0)"
    assert table["native − translate"].tolist()[0].startswith("+25.0")
    assert table["note"].tolist() == ["", "no de->en pair"]
