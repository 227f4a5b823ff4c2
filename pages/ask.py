"""Ask: one question, every selected model's answer side by side, spans highlighted."""
from __future__ import annotations

import html
import json
import random
import time

import pandas as pd
import streamlit as st

from components import loaders
from components.highlight import CSS, Mark, color_for, highlight_html, legend_html
from components.pickers import dataset_picker, model_picker
from components.state import init_state, sidebar_settings
from core.datasets import detect_lang
from core.metrics import score_answer
from core.qa.engine import QAInputError

init_state()
sidebar_settings()
st.markdown(CSS, unsafe_allow_html=True)
st.title("Ask")
st.caption("Type a question about a context; every selected model answers, spans highlighted side by side.")

models = model_picker("ask")
source = st.radio("Context", ["Dataset item", "Paste a context"], horizontal=True, key="ask_source")

gold: list[tuple[str, int]] = []
lang = "en"
if source == "Dataset item":
    ds = dataset_picker("ask")
    if ds is None or len(ds) == 0:
        st.stop()
    n = len(ds)
    c1, c2 = st.columns([3, 1])
    if c2.button("Random item", key="ask_random"):
        st.session_state["ask_item"] = random.Random(time.time_ns()).randrange(n)
    idx = c1.number_input(f"Item (0–{n - 1})", 0, n - 1, key="ask_item")
    ex = ds.examples[int(idx)]
    context, lang = ex.context, ex.lang
    gold = [(a.text, a.answer_start) for a in ex.answers]
    # A new item resets the question box to that item's question.
    if st.session_state.get("ask_item_id") != (ds.name, ex.id):
        st.session_state["ask_item_id"] = (ds.name, ex.id)
        st.session_state["ask_question"] = ex.question
    st.caption(f"{ds.name} · id `{ex.id}` · {ex.title}")
else:
    context = st.text_area("Context", height=180, key="ask_context",
                           placeholder="Paste a paragraph the answer should come from.")
    lang = detect_lang(context) if context.strip() else "en"

question = st.text_area("Question", key="ask_question", height=68)
n_best = st.slider("n-best spans", 1, 10, 5, key="ask_nbest")

if st.button("Answer", type="primary", key="ask_go", disabled=not models):
    results, errors = [], []
    for name in models:
        try:
            eng = loaders.engine_for_state(name)
            pred, secs = eng.timed_answer(question, context, n_best=n_best)
            results.append({"model": name, "pred": pred, "latency_s": secs})
        except QAInputError as e:
            errors.append(str(e))
            break
        except Exception as e:  # a model that fails to load must not take the page down
            errors.append(f"{name}: {e}")
    st.session_state["ask_result"] = {
        "question": question, "context": context, "gold": gold, "lang": lang,
        "results": results, "errors": errors,
    }

res = st.session_state.get("ask_result")
if res and res["context"] == context:
    for e in res["errors"]:
        st.error(e)
    if res["results"]:
        cols = st.columns(len(res["results"]))
        rows, marks = [], []
        for i, (col, r) in enumerate(zip(cols, res["results"])):
            best = r["pred"].best
            colour = color_for(i)
            with col:
                st.markdown(
                    f'<div style="border-left:6px solid {colour};padding-left:.5rem">'
                    f"<b>{html.escape(r['model'])}</b></div>",
                    unsafe_allow_html=True,
                )
                # st.text, not markdown: answers are data and must not be interpreted.
                st.text(f"Answer: {best.text}" if best else "No answer")
                row = {"model": r["model"], "answer": best.text if best else "",
                       "start": best.start if best else None, "end": best.end if best else None,
                       "score": round(best.score, 4) if best else None,
                       "latency_ms": round(r["latency_s"] * 1000, 1)}
                line = f"score {row['score']} · {row['latency_ms']} ms"
                if res["gold"] and best:
                    em, f1 = score_answer(best.text, [g for g, _ in res["gold"]], res["lang"])
                    row.update(EM=round(100 * em, 1), F1=round(100 * f1, 1))
                    line += f" · EM {row['EM']:.0f} · F1 {row['F1']:.1f}"
                st.caption(line)
                rows.append(row)
                if best:
                    marks.append(Mark(r["model"], best.start, best.end, colour))
        st.markdown(legend_html([(r["model"], color_for(i)) for i, r in enumerate(res["results"])],
                                with_gold=bool(res["gold"])), unsafe_allow_html=True)
        gold_spans = [(s, s + len(t)) for t, s in res["gold"]]
        st.markdown(highlight_html(res["context"], marks, gold_spans), unsafe_allow_html=True)
        if res["gold"]:
            st.caption("Gold: " + " | ".join(dict.fromkeys(t for t, _ in res["gold"])))
        with st.expander("n-best spans"):
            nb = [{"model": r["model"], "rank": k + 1, "answer": s.text, "start": s.start, "end": s.end,
                   "score": round(s.score, 4)} for r in res["results"] for k, s in enumerate(r["pred"].nbest)]
            st.dataframe(pd.DataFrame(nb), hide_index=True, width="stretch")
        table = pd.DataFrame(rows)
        export = {"question": res["question"], "context": res["context"], "gold": res["gold"],
                  "answers": rows, "nbest": nb}
        c1, c2 = st.columns(2)
        c1.download_button("Export CSV", table.to_csv(index=False), "ask_answers.csv", "text/csv")
        c2.download_button("Export JSON", json.dumps(export, ensure_ascii=False, indent=1),
                           "ask_answers.json", "application/json")
