"""Two error-analysis panels under a set of answers (Ask, Variants):

* :func:`repair_panel` - NoiseQA's question repair (core.perturb.repair.repair_question) on the
  question asked: the repaired text with each change marked and its reason, and every model's
  answer before and after;
* :func:`counterfactual_panel` - edit one word of the question or the context, answer again in
  place, and see each model's span movement and score change (core.explore.counterfactual).

Both take the answers already on the page (``before``: {model: Prediction}) and a function that
returns a model's engine, so they add no model loading of their own.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import streamlit as st

from components.answers import legend, spans_in_context
from components.edits import edits_html
from components.export import csv_download, json_download
from components.text import md_escape
from core.explore import counterfactual as cf
from core.explore.answers import answer_all
from core.metrics import score_answer
from core.perturb.base import Edit
from core.perturb.repair import MODES, repair_question
from core.types import Prediction

EngineFor = Callable[[str], object]


def _answer_all(models: Sequence[str], engine_for: EngineFor, question: str, context: str
                ) -> tuple[dict[str, Prediction], list[str]]:
    answered = answer_all(models, engine_for, question, context)
    return answered.predictions(), answered.failures


def _best_text(p: Prediction | None) -> str:
    return p.best.text if p is not None and p.best is not None else ""


def _score(p: Prediction | None) -> float | None:
    return round(float(p.best.score), 4) if p is not None and p.best is not None else None


def repair_panel(key: str, question: str, context: str, lang: str, before: Mapping[str, Prediction],
                 engine_for: EngineFor, golds: Sequence[str] = (), gold_spans: Sequence[tuple[int, int]] = ()) -> None:
    """The "Repair the question" expander (see module doc)."""
    with st.expander("🔧 Repair the question (NoiseQA's mitigation)"):
        st.caption("A question word that does not occur in the context is replaced by the closest context word "
                   "(character error rate ≤ 0.5): in content words (nouns, adjectives), named entities, or every "
                   "word. Optionally a spellchecker and a final question mark. The answers before and after show "
                   "whether it helps; it can also 'repair' a correct word.")
        c1, c2, c3 = st.columns(3)
        mode = c1.selectbox("Repair words", (*MODES, "none"), key=f"{key}_rep_mode",
                            format_func=lambda m: {"content": "content words", "entities": "named entities",
                                                   "all": "every word", "none": "none (context repair off)"}[m])
        spell = c2.checkbox("Spellchecker", key=f"{key}_rep_spell")
        qmark = c3.checkbox("Add the question mark", key=f"{key}_rep_qmark")
        try:
            repair = repair_question(question, context, lang, mode, spell, qmark)
        except ValueError as e:
            st.warning(md_escape(f"Cannot repair this question: {e}"))
            return
        edits = [Edit(c.start, c.end, c.new, c.reason) for c in repair.changes]
        if not edits:
            st.info("Nothing to repair: every question word the chosen repair looks at occurs in the context.")
            return
        st.markdown("**Repaired question** (hover a change for its reason):")
        st.markdown(edits_html(question, edits), unsafe_allow_html=True)
        st.dataframe(pd.DataFrame([{"was": c.old, "now": c.new, "why": c.reason} for c in repair.changes]),
                     hide_index=True, key=f"{key}_rep_changes")
        signature = (question, context, repair.text, tuple(before))
        if st.button("Answer the repaired question", key=f"{key}_rep_go"):
            with st.spinner("Answering the repaired question…"):
                after, errors = _answer_all(list(before), engine_for, repair.text, context)
            st.session_state[f"{key}_rep_result"] = {"signature": signature, "after": after, "errors": errors}
        res = st.session_state.get(f"{key}_rep_result")
        if not res or res["signature"] != signature:
            return
        for e in res["errors"]:
            st.error(md_escape(e))
        rows = []
        for m in before:
            b, a = before.get(m), res["after"].get(m)
            row = {"model": m, "answer before": _best_text(b), "answer after": _best_text(a),
                   "score before": _score(b), "score after": _score(a),
                   "answer changed": _best_text(b) != _best_text(a)}
            if golds:
                row["F1 before"] = round(100 * score_answer(_best_text(b), list(golds), lang)[1], 1)
                row["F1 after"] = round(100 * score_answer(_best_text(a), list(golds), lang)[1], 1)
            rows.append(row)
        df = pd.DataFrame(rows)
        st.dataframe(df, hide_index=True, key=f"{key}_rep_table")
        models = list(before)
        legend(models, with_gold=bool(gold_spans))
        st.caption("Answers to the repaired question:")
        spans_in_context(context, res["after"], gold_spans, models, show_legend=False)
        export = {"question": question, "repaired": repair.text,
                  "changes": [c.__dict__ for c in repair.changes], "mode": mode, "spellcheck": spell,
                  "question_mark": qmark, "answers": rows}
        d1, d2 = st.columns(2)
        csv_download(df, "repair", f"{key}_rep_csv", where=d1)
        json_download(export, "repair", f"{key}_rep_json", where=d2)


def counterfactual_panel(key: str, question: str, context: str, lang: str, before: Mapping[str, Prediction],
                         engine_for: EngineFor, gold_spans: Sequence[tuple[int, int]] = ()) -> None:
    """The "Edit one word" expander (see module doc)."""
    with st.expander("✏️ Counterfactual: edit one word and answer again"):
        field = st.radio("Edit a word of the", ["question", "context"], horizontal=True, key=f"{key}_cf_field")
        text = question if field == "question" else context
        try:
            found = cf.words(text, lang)
        except ValueError as e:   # a language written without spaces
            st.warning(md_escape(e))
            return
        if not found:
            st.info(f"The {field} has no words to edit.")
            return
        c1, c2 = st.columns(2)
        index = c1.selectbox("Word", list(range(len(found))), key=f"{key}_cf_index_{field}",
                             format_func=lambda i: f"{i + 1}. {found[i][2]}")
        new = c2.text_input("Replace it by (empty: delete it)", value=found[index][2],
                            key=f"{key}_cf_new_{field}_{index}", max_chars=200)
        new_text, edit = cf.edit_word(text, index, new, lang, field)
        if new_text == text:
            st.caption("Type a different word to see the answers move.")
            return
        q2, c2_text = (new_text, context) if field == "question" else (question, new_text)
        st.markdown(edits_html(text, [Edit(edit.start, edit.end, edit.new, "counterfactual edit")],
                               window=80 if field == "context" else None), unsafe_allow_html=True)
        signature = (question, context, field, index, new, tuple(before))
        if st.button("Answer again", key=f"{key}_cf_go", type="primary"):
            with st.spinner("Answering the edited input…"):
                after, errors = _answer_all(list(before), engine_for, q2, c2_text)
            st.session_state[f"{key}_cf_result"] = {"signature": signature, "after": after, "errors": errors,
                                                    "edit": edit, "question": q2, "context": c2_text}
        res = st.session_state.get(f"{key}_cf_result")
        if not res or res["signature"] != signature:
            return
        for e in res["errors"]:
            st.error(md_escape(e))
        rows = cf.compare(before, res["after"], res["edit"])
        df = pd.DataFrame(rows)
        st.dataframe(df, hide_index=True, key=f"{key}_cf_table")
        models = list(before)
        legend(models, with_gold=False)
        b1, b2 = st.columns(2)
        with b1:
            st.caption("Before the edit")
            spans_in_context(context, before, gold_spans, models, show_legend=False)
        with b2:
            st.caption("After the edit")
            spans_in_context(res["context"], res["after"], models=models, show_legend=False)
        export = {"field": field, "word_index": index, "old": res["edit"].old, "new": res["edit"].new,
                  "question": res["question"], "context": res["context"], "rows": rows}
        d1, d2 = st.columns(2)
        csv_download(df, "counterfactual", f"{key}_cf_csv", where=d1)
        json_download(export, "counterfactual", f"{key}_cf_json", where=d2)
