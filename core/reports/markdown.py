"""A sweep report (core.reports.content) as Markdown, written beside the HTML report.

The same header, command, sections and tables (GitHub tables); the figures are in the HTML file,
their numbers are the tables here. The worst examples give each model's spans as text with their
character offsets, and the context with the cell model's perturbed span in bold.

Every text from the store goes through core.render.text.md_escape: each ASCII punctuation
character backslash-escaped (so no link, image, HTML, emphasis or table pipe can start) and a
word joiner inside ``www.``, ``scheme://`` and ``a@b`` (so no renderer autolinks them).
"""
from __future__ import annotations

import math
from typing import Any

from core.render.text import md_escape
from core.reports.content import Example, Report, Table
from core.sweeps.analysis import drill

__all__ = ["render_markdown", "md_cell", "md_table"]


def md_cell(value: Any) -> str:
    """A value in a Markdown table cell: numbers as they are (floats to two decimals), None and
    NaN as "–", text escaped and on one line.

    >>> md_cell(None), md_cell(93.3333), md_cell(4), md_cell("a|b\\nc")
    ('–', '93.33', '4', 'a\\\\|b c')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return md_escape(" ".join(str(value).split()))


def md_table(table: Table) -> str:
    """``table`` as a titled GitHub table.

    >>> print(md_table(Table("T", [{"model": "m", "F1": 50.0}, {"model": "n", "F1": None}])))
    **T**
    <BLANKLINE>
    | model | F1 |
    | --- | --- |
    | m | 50.00 |
    | n | – |
    """
    title = f"**{md_escape(table.title)}**"
    if not table.rows:
        return f"{title}\n\nNo rows."
    columns = list(dict.fromkeys(k for row in table.rows for k in row))
    lines = ["| " + " | ".join(md_cell(c) for c in columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(md_cell(row.get(c)) for c in columns) + " |" for row in table.rows]
    return f"{title}\n\n" + "\n".join(lines)


def _bold_span(context: str, start: int, end: int) -> str:
    if not 0 <= start < end <= len(context):
        return md_escape(context)
    return f"{md_escape(context[:start])}**{md_escape(context[start:end])}**{md_escape(context[end:])}"


def _f1(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}"


def _span(answer: str | None, start: int | None, end: int | None) -> str:
    """An answer's offsets in the passage; an LLM's answer not found in it has none.

    >>> _span("Paris", 3, 8), _span("in Paris", None, None), _span("", None, None)
    (' (3–8)', ' (not in the passage)', '')
    """
    if start is not None:
        return f" ({start}–{end})"
    return " (not in the passage)" if answer else ""


def _example(k: int, ex: Example) -> str:
    r = ex.row
    lines = [f"### {k}\\. {md_escape(ex.model)} under {md_escape(ex.spec)} · example {md_escape(r['example_id'])} "
             f"repeat {r['repeat']} · F1 loss {100 * r['f1_loss']:.0f}", "",
             f"- clean question: {md_escape(r['original_question'])}",
             f"- perturbed question: {md_escape(r['variant_question'])}",
             f"- gold: {md_escape(' | '.join(r['golds']))}", "",
             "| model | clean answer (span) | clean F1 | perturbed answer (span) | perturbed F1 |",
             "| --- | --- | --- | --- | --- |"]
    for o in ex.across:
        clean = md_cell(o["clean_answer"] or "∅") + _span(o["clean_answer"], o["clean_start"], o["clean_end"])
        pert = (md_cell(o["answer"] or "∅") + _span(o["answer"], o["span_start"], o["span_end"]) if o["status"] == "ok"
                else md_cell(o["status"] or "not stored"))
        lines.append(f"| {md_cell(o['model'])} | {clean} | {_f1(o['clean_f1'])} | {pert} | {_f1(o['f1'])} |")
    context, _, perturbed = drill.shown_context(r, clean=False)
    context = context.replace("\r", " ").replace("\n", " ")   # one quoted paragraph; the offsets stay
    span = drill.answer_spans(ex.across, clean=False).get(ex.model)
    where = "perturbed context" if perturbed else "context"
    lines += ["", f"{md_escape(ex.model)}'s perturbed answer in bold in the {where}:", "",
              "> " + (_bold_span(context, span.start, span.end) if span else md_escape(context))]
    return "\n".join(lines)


def render_markdown(rep: Report, report_command: str = "") -> str:
    """The whole report as one Markdown document."""
    out = [f"# Sweep report: {md_escape(rep.header['sweep'])}", "",
           "| | |", "| --- | --- |"]
    out += [f"| {md_cell(k)} | {md_cell(v)} |" for k, v in rep.header.items()]
    out += ["", "Reproduce the sweep:", "", "```", rep.command.replace("```", "` ` `"), "```"]
    if report_command:
        out += ["", "This report:", "", "```", report_command.replace("```", "` ` `"), "```"]
    out += ["", "The figures are in the HTML report beside this file; their numbers are the tables below."]
    for section in rep.sections:
        out += ["", f"## {md_escape(section.title)}", ""]
        if section.note:
            out += [md_escape(section.note), ""]
        out += ["\n\n".join(md_table(t) for t in section.tables)] if section.tables else []
    out += ["", "## Worst examples", ""]
    out += ["\n\n".join(_example(k, ex) for k, ex in enumerate(rep.examples, 1))] if rep.examples else \
        ["No row lost F1 under a perturbation."]
    return "\n".join(out).rstrip() + "\n"
