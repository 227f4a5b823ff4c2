"""Variants' one row in detail: the row's question and its edits, every model's span in the
(possibly perturbed) context beside the gold, each model's answer, then the error-analysis panels
on that row: NoiseQA's repair of its question and "Why did it change?" against the original."""
from __future__ import annotations

import streamlit as st

from components import loaders
from components.answers import legend, spans_in_context
from components.ask_tools import repair_panel
from components.attribution import why_changed_panel
from components.edits import edits_html
from components.text import html_text, md_escape
from core.render.highlight import color_for


def row_detail(res: dict, i: int) -> None:
    """Row ``i`` of the Variants result ``res`` (its rows, each model's predictions, whether the
    question is scored against the item's gold, the passage's language)."""
    rows, predictions = res["rows"], res["predictions"]
    row = rows[i]
    st.markdown(f"**Question:** {md_escape(row.example.question)}")
    if row.field:
        window = 60 if row.field == "context" else None
        st.markdown(f"Edits to the {row.field} (CER {100 * row.cer:.1f} %, WER {100 * row.wer_normalised:.1f} %, "
                    "case and punctuation ignored):")
        st.markdown(edits_html(row.original_text, row.edits, window), unsafe_allow_html=True)
    names = list(predictions)
    scored_answers = row.example.answers if res.get("scored", True) else ()   # not the item's own question: none
    gold = [(a.answer_start, a.answer_start + len(a.text)) for a in scored_answers]
    legend(names, with_gold=bool(gold))
    if row.field == "context":
        st.caption("The context below is the perturbed one this row's answers come from.")
    spans_in_context(row.example.context, {name: predictions[name][i] for name in names}, gold, show_legend=False)
    for k, name in enumerate(names):
        answer = predictions[name][i].text
        st.markdown(f'<span style="border-left:6px solid {color_for(k)};padding-left:.4rem">'
                    f"<b>{html_text(name)}</b>: {html_text(answer) if answer else '<i>no answer</i>'}</span>",
                    unsafe_allow_html=True)

    # NoiseQA's repair on this row's question: the repaired text, and every model's answer before and after.
    if predictions and row.field in (None, "question"):
        repair_panel("var", row.example.question, row.example.context, res["lang"],
                     {name: predictions[name][i] for name in names}, loaders.engine_for_state,
                     [a.text for a in scored_answers], gold)

    # "Why did it change?": attributions of the clean and the perturbed text, aligned by the edits.
    if predictions and i > 0:
        why_changed_panel("var", rows[0].example, row, names, predictions, i, loaders.engine_for_state)
