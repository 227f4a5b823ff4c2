"""A sweep report (core.reports.content) as one self-contained HTML file.

Self-contained: opening it makes no request. plotly.js is written inline once (with the first
figure), without MathJax; the CSS is inline, no font is loaded (system fonts only), no image, no
link. Every text that came from the store (sweep, model and perturbation names, questions,
contexts, answers) is escaped with core.render.text.html_text, so it is shown literally and can
neither start markup nor become a link; the figures' data are JSON that plotly's writer escapes
inside its script (``</script>`` cannot end it). The answer spans are marked with
core.render.highlight, as the Heatmaps drill-down marks them.
"""
from __future__ import annotations

import html
import math
from typing import Any

from core.render.highlight import Mark, color_for, highlight_html, legend_html
from core.render.text import html_text
from core.reports.content import Example, Report, Table
from core.sweeps.analysis import drill

__all__ = ["render_html", "format_cell"]

# Readable from 800 px up: wide tables and figures scroll inside their own box, never the page.
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1400px;
       padding: 1rem 1.5rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.02rem; margin: 1.2rem 0 .4rem; }
.note { color: #555; font-size: .92rem; max-width: 60rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: .85rem; margin: .3rem 0 1rem; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.header th { width: 11rem; } code { white-space: pre-wrap; word-break: break-all; font-size: .85rem; }
.example { border: 1px solid #ccc; border-radius: 6px; padding: .6rem .9rem; margin: 1rem 0; }
.answers td { white-space: normal; }
.qax-context { line-height: 1.9; padding: .6rem .8rem; border: 1px solid #ddd; border-radius: 6px;
               white-space: pre-wrap; max-height: 360px; overflow-y: auto; }
.qax-context mark { color: inherit; padding: 1px 0; border-radius: 2px; }
.qax-legend { margin: .3rem 0 .5rem 0; font-size: .9rem; }
"""


def format_cell(value: Any) -> str:
    """A table value as escaped HTML text: None and NaN as "–", floats to two decimals.

    >>> format_cell(None), format_cell(float("nan")), format_cell(93.3333), format_cell(5)
    ('–', '–', '93.33', '5')
    >>> format_cell("<b>x</b>")
    '&#60;b&#62;x&#60;&#47;b&#62;'
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return html_text(", ".join(str(v) for v in value))
    return html_text(value)


def _table(table: Table) -> str:
    if not table.rows:
        return f"<h3>{html_text(table.title)}</h3><p class='note'>No rows.</p>"
    columns = list(dict.fromkeys(k for row in table.rows for k in row))
    head = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td class='num'>{format_cell(row.get(c))}</td>"
                         if isinstance(row.get(c), (int, float)) and not isinstance(row.get(c), bool)
                         else f"<td>{format_cell(row.get(c))}</td>" for c in columns) + "</tr>"
        for row in table.rows)
    return (f"<h3>{html_text(table.title)}</h3><div class='scroll'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _figure(fig, first: bool) -> str:
    # include_plotlyjs=True writes plotly.js inline (no CDN); MathJax is left out (no request).
    return "<div class='scroll'>" + fig.to_html(full_html=False, include_plotlyjs=first, include_mathjax=False,
                                                config={"displaylogo": False, "responsive": True}) + "</div>"


def _f1(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}"


def _example(k: int, ex: Example) -> str:
    r = ex.row
    models = [o["model"] for o in ex.across]
    colour = {m: color_for(j) for j, m in enumerate(models)}
    answers = "".join(
        f"<tr><td><span style='background:{colour[o['model']]}80;padding:0 4px'>{html_text(o['model'])}</span>"
        f"{' (this cell)' if o['model'] == ex.model else ''}</td>"
        f"<td>{html_text(o['clean_answer'] or '∅')} (F1 {_f1(o['clean_f1'])})</td>"
        f"<td>{html_text(o['answer'] or '∅') if o['status'] == 'ok' else html_text(o['status'] or 'not stored')}"
        f" (F1 {_f1(o['f1'])})</td></tr>" for o in ex.across)
    parts = [f"<div class='example'><h3>{k}. {html_text(ex.model)} under {html_text(ex.spec)} · example "
             f"{html_text(r['example_id'])} repeat {r['repeat']} · F1 loss {100 * r['f1_loss']:.0f}</h3>",
             f"<p><b>Clean question:</b> {html_text(r['original_question'])}<br>"
             f"<b>Perturbed question:</b> {html_text(r['variant_question'])}<br>"
             f"<b>Gold:</b> {html_text(' | '.join(r['golds']))}</p>",
             "<div class='scroll'><table class='answers'><thead><tr><th>model</th><th>clean answer</th>"
             f"<th>perturbed answer</th></tr></thead><tbody>{answers}</tbody></table></div>",
             legend_html([(m, colour[m]) for m in models])]
    for clean in (True, False):
        context, gold, perturbed = drill.shown_context(r, clean)
        marks = [Mark(m, s.start, s.end, colour[m]) for m, s in drill.answer_spans(ex.across, clean).items()
                 if s is not None]
        label = ("Clean answers in the context" if clean else
                 "Perturbed answers in the perturbed context" if perturbed else "Perturbed answers in the context")
        parts.append(f"<p><b>{label}:</b></p>{highlight_html(context, marks, gold)}")
    return "".join(parts) + "</div>"


def render_html(rep: Report, report_command: str = "") -> str:
    """The whole report as one HTML document."""
    title = f"Sweep report: {rep.header['sweep']}"
    header = "".join(f"<tr><th>{html_text(k)}</th><td>{html_text(v)}</td></tr>" for k, v in rep.header.items())
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
           # an empty icon: without it a browser asks the server for /favicon.ico
           "<link rel='icon' href='data:,'>"
           f"<title>{html_text(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{html_text(title)}</h1>",
           f"<div class='scroll'><table class='header'><tbody>{header}</tbody></table></div>",
           # commands are copied: escaped as HTML only (html_text's invisible word joiners would be copied too)
           f"<p><b>Reproduce the sweep:</b><br><code>{html.escape(rep.command)}</code></p>"]
    if report_command:
        out.append(f"<p><b>This report:</b><br><code>{html.escape(report_command)}</code></p>")
    first = True
    for section in rep.sections:
        out.append(f"<h2>{html_text(section.title)}</h2>")
        if section.note:
            out.append(f"<p class='note'>{html_text(section.note)}</p>")
        for fig in section.figures:
            out.append(_figure(fig, first))
            first = False
        out += [_table(t) for t in section.tables]
    out.append("<h2>Worst examples</h2>")
    if not rep.examples:
        out.append("<p class='note'>No row lost F1 under a perturbation.</p>")
    else:
        out.append("<p class='note'>The rows with the largest F1 loss (clean F1 − perturbed F1) over every cell, "
                   "each with every model's clean and perturbed answer marked in the context (gold underlined).</p>")
        out += [_example(k, ex) for k, ex in enumerate(rep.examples, 1)]
    out.append("</body></html>")
    return "\n".join(out)
