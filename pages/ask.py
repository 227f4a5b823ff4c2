"""Ask: one question, every selected model's answer side by side, spans highlighted.

The question can be typed or spoken (browser recorder, or the server's own microphone when it has
one; every ASR engine's transcript is shown with its WER against what the user meant to say), and
typed in another language (machine-translated into the context's language first, both shown).
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from components import loaders, permalink, persist
from components.answers import answer_cards, replies_as_written
from components.ask_speech import forget_if_moved, speech_panel
from components.ask_tools import counterfactual_panel, repair_panel
from components.ask_translation import planned_question, question_language_picker
from components.attribution import attributions_panel
from components.context_box import context_box
from components.export import download
from components.frame import page_frame, run_output
from components.pickers import item_picker, language_mismatch_note, model_picker
from components.text import md_escape
from core.explore import answers
from core.explore.question_match import same_question
from core.io.csv_export import csv_bytes
from core.langid import guess_language
from core.render.highlight import highlight_html

page_frame()
# Ask is the app's first screen: it says what the app is, then what this page does, in two lines
st.title("QA Robustness Explorer")
st.caption("How question-answering models (extractive readers and LLMs) break when a question reaches them "
           "typed with typos, spoken, machine-translated or paraphrased. **Ask**: Type a question about a context; "
           "every selected model answers, spans highlighted side by side.")
permalink.apply_ask()   # a link's item, question and models, once (components/permalink.py)

# The page's parts in the order they are shown: the question and the Answer button come first, the
# rarely changed options (question language, n-best, gold answer, upload) below the answers. They
# are filled in the order the logic needs (the models picker marks models by the passage's language).
models_slot = st.container()
# Kept across pages and across the context switch (components/persist.py): "Paste a context" and
# back used to reset the data set to demo.en and the item to 0 under a question typed for another.
persist.keep_all(["ask_source", "ask_question", "ask_qlang", "ask_nbest", "ask_asr_engine",
                  "ask_auto_answer", "ask_gold", "ask_reference"])
source = st.radio("Context", ["Dataset item", "Paste a context"], horizontal=True, key="ask_source",
                  label_visibility="collapsed")   # the options say it: the passage stays on the first screen
item_slot, question_slot, answer_slot, options_slot = st.container(), st.container(), st.container(), st.container()
with options_slot:
    options_box = st.expander("Options: question language, n-best spans, gold answer")
    upload_slot = st.container()

gold: list[tuple[str, int]] = []
lang = "en"
ds = ex = None
with item_slot:
    if source == "Dataset item":
        ds, ex = item_picker("ask", upload_box=upload_slot)
        context, lang = ex.context, ex.lang
        gold = [(a.text, a.answer_start) for a in ex.answers]
        # Wikipedia titles come with underscores ("Fresno,_California")
        st.caption(f"{md_escape(ds.name)} · id {md_escape(ex.id)} · {md_escape(ex.title.replace('_', ' '))}")
    else:
        persist.keep("ask_context")   # kept only where it is drawn: see components/persist.py
        context = context_box("ask_context", 180)   # refused past the engine's limit, before any work
        lang = guess_language(context).code if context.strip() else "en"
# a recording and its transcripts belong to the item (or pasted passage) they were made for
forget_if_moved("\n".join([ds.name, ex.id, context]) if ex is not None else context)
with models_slot:
    models = model_picker("ask", lang=lang)
    mismatch_slot = st.container()

with options_box:
    qlang = question_language_picker()
    mt_slot = st.container()
    n_best = st.slider("n-best spans", 1, 10, 5, key="ask_nbest")
    user_gold = st.text_input(
        "Gold answer (optional)", key="ask_gold",
        help="Scores the answers (EM/F1) against this text. Without it, only a dataset item's own question "
             "is scored (against the item's gold answers): a question of your own has no gold answer.")

with question_slot:
    with st.expander("🎤 Speak the question", expanded=bool(st.session_state.get("ask_speech"))):
        speech_panel(qlang)
    question = st.text_area("Question", key="ask_question", height=68)

# the question in the passage's language (translated when it is typed in another)
plan = planned_question(question, qlang, lang, question_slot, mt_slot)
with mismatch_slot:
    language_mismatch_note(models, lang)

own_question = ex is not None and same_question(question, ex.question)
meant_own = ex is not None and same_question(st.session_state.get("ask_reference", ""), ex.question)   # spoken
score_gold, score_note = answers.gold_to_score(user_gold, context, gold, own_question, ex is not None, meant_own)
signature = (plan.asked, context, tuple(models), n_best, tuple(score_gold))

# buttons sized to their labels, side by side while they fit (a fixed column cut "Ans…" at 800 px)
buttons = question_slot.container(horizontal=True)
pressed = buttons.button("Answer", type="primary", key="ask_go", disabled=not models)
if buttons.button("🧪 Perturb this question", key="ask_perturb", disabled=not (plan.asked.strip() and context.strip()),
                  help="Opens Variants on this passage and question, with the same models."):
    handed = {"var_question": plan.asked, "var_models": list(models)}
    if ex is not None:
        handed |= {"var_source": "Dataset item", "var_dataset": st.session_state.get("ask_dataset"),
                   "var_item": int(st.session_state.get("ask_item", 0)), "var_item_id": (ds.name, ex.id)}
    else:
        handed |= {"var_source": "Type a question and context", "var_context": context}
    persist.hand_over(handed)
    st.session_state.pop("var_result", None)   # its table was for other inputs
    st.switch_page("pages/variants.py")
# beside the buttons (on a row of its own it pushed the passage off the first screen); filled last: the
# link says whether answers are shown
link_slot = buttons.container()
# a recording's transcript (while its toggle is on), or an item opened from Gallery or Heatmaps' rows
# (kept until answered: a rerun that stops this run mid-answer, e.g. on a loaded CPU, answers instead)
arrived = st.session_state.get("ask_answer_on_arrival", False)
spoken = st.session_state.get("ask_answer_now", False) and st.session_state.get("ask_auto_answer", True)
answer_now = arrived or spoken
with answer_slot:   # the answers (or the plain passage) come right below the buttons
    loading = run_output()   # the models' loads, an LLM's reply as it is written
    if (pressed or (answer_now and models)):
        # a long context is read in many windows: the answers can take seconds, and the page says so
        with (loading.container(), st.spinner(md_escape(f"Answering with {', '.join(models)}…")),
              replies_as_written() as on_text):
            answered = answers.answer_all(models, loaders.engine_for_state, plan.asked, context, n_best=n_best,
                                          golds=[g for g, _ in score_gold], lang=lang, note=loaders.backend_note,
                                          on_text=on_text)
        st.session_state["ask_result"] = {
            "question": plan.asked, "typed": question, "question_lang": plan.lang,
            "translator": plan.translator, "context": context, "gold": score_gold, "lang": lang,
            "signature": signature, "score_note": score_note,
            "answered": answered,
        }
        loading.empty()
    for flag in ("ask_answer_on_arrival", "ask_answer_now"):   # used (or not wanted: toggle off, no model)
        st.session_state.pop(flag, None)

    res = st.session_state.get("ask_result")
    if res and (res["context"] != context or "answered" not in res):
        res = None   # answers about another passage (or kept from before this version): not shown over this one
    if source == "Dataset item" and res is None:   # before Answer: the plain passage (then the highlights)
        st.caption("Passage")
        with st.container(border=True):   # as tall as the passage: a fixed box hid its last line at 800 px
            st.markdown(highlight_html(context, []), unsafe_allow_html=True)
    if res and res.get("signature") != signature:
        st.info("The question, models or gold answer changed since these answers were made: press Answer "
                "to refresh them.")
    if res:
        answered = res["answered"]
        for e in answered.failures:
            st.error(md_escape(e))
        if answered.answers:
            answer_cards(answered.answers, res["context"], res["gold"], res.get("score_note", ""))
            nb = answers.nbest_rows(answered.answers)
            with st.expander("n-best spans"):
                st.dataframe(pd.DataFrame(nb), hide_index=True, width="stretch")
                st.caption(md_escape(answers.extractive_only_note(
                    [a.model for a in answered.answers if a.prediction.alignment], "n-best spans")))
            export = answers.ask_export(answered.answers, {
                "question": res["question"], "typed_question": res.get("typed", res["question"]),
                "question_lang": res.get("question_lang"), "translator": res.get("translator"),
                "context": res["context"], "gold": res["gold"]})
            c1, c2 = st.columns(2)
            download("Export CSV", csv_bytes(pd.DataFrame(answers.ask_csv_rows(export))), "ask_answers.csv",
                     "text/csv", where=c1)
            download("Export JSON", json.dumps(export, ensure_ascii=False, indent=1), "ask_answers.json",
                     "application/json", where=c2)

            # Error analysis on these answers: NoiseQA's repair, and one-word counterfactuals (components.ask_tools).
            before = answered.predictions()
            spans = answers.gold_spans(res["gold"])   # a typed gold may not be in the context
            repair_panel("ask", res["question"], res["context"], res["lang"], before, loaders.engine_for_state,
                         [g for g, _ in res["gold"]], spans)
            counterfactual_panel("ask", res["question"], res["context"], res["lang"], before, loaders.engine_for_state,
                                 spans)
            # Why each model chose its span: tokens coloured by attribution (components.attribution).
            attributions_panel("ask", res["question"], res["context"], [a.model for a in answered.answers],
                               loaders.engine_for_state)

with link_slot:
    permalink.copy_link(*permalink.ask_link(ex, context, question, models, n_best, user_gold,
                                            bool(res and res.get("signature") == signature)), key="ask_link")
