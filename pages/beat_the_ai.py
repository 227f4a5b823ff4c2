"""Beat the AI: write a question the models get wrong (Bartolo et al. 2020); validate; export; stats.

All logic lives in core/collect/ (beat, beat_store, beat_stats); this page only lays it out. Every attempt is stored the moment
the models have answered (core.collect.beat_store.BeatStore; database file from $QAX_BEAT_DB or the cache).
Everything a visitor, a dataset or the store supplies is shown escaped (components/text.py) and
every CSV goes through core.csv_export. Who is who: the typed name plus a per-browser token
(components/browser_id.py); core.collect.beat_store refuses an author's validation of their own question.
"""
from __future__ import annotations

import html
import json
import uuid

import pandas as pd
import plotly.express as px
import streamlit as st

from components import loaders
from components.browser_id import browser_token
from components.highlight import CSS, Mark, color_for, highlight_html, legend_html
from components.pickers import dataset_picker, model_picker
from components.span_picker import span_keys, span_picker
from components.state import init_state, sidebar_settings
from components.text import count, html_text, md_escape
from core.collect import beat, beat_stats, beat_store, identity
from core.csv_export import csv_bytes
from core.qa.engine import QAInputError
from core.types import Span

init_state()
sidebar_settings()
st.markdown(CSS, unsafe_allow_html=True)
st.title("Beat the AI")
st.caption("Write a question about the passage and mark its answer. The models answer at once: "
           "a model wins when its answer overlaps yours (word F1 above the threshold). With "
           "several models, you win only by fooling all of them. Every attempt is saved.")

if "beat_session" not in st.session_state:
    st.session_state["beat_session"] = uuid.uuid4().hex
SESSION = st.session_state["beat_session"]
BROWSER = browser_token()  # the same visitor across reloads: see components/browser_id.py
YOU = "#0072B2"  # the player's own span in previews (models get the palette colours)

c1, c2 = st.columns([3, 2])
with c1:
    models = model_picker("beat")
with c2:
    user = st.text_input("Your name", key="beat_user", max_chars=identity.MAX_NAME_CHARS,
                         help="Stored with your questions; validators must be someone else.")
    st.caption("Names are not authentication: anyone can type any name. The app also remembers "
               "this browser (a random cookie), and neither the same browser nor a look-alike "
               "name can validate a question written here.")
with st.expander("Rules"):
    threshold = st.number_input("A model wins when its F1 with your answer is above", 0.0, 0.99,
                                beat.WIN_THRESHOLD, 0.05, key="beat_threshold",
                                help="0.4 in Bartolo et al. (2020).")
    agree_threshold = st.number_input("A validator agrees when F1 with the author's answer is "
                                      "at least", 0.05, 1.0, beat.AGREE_THRESHOLD, 0.05,
                                      key="beat_agree_threshold")

ds = dataset_picker("beat")
try:
    store = beat_store.BeatStore()
except (ValueError, OSError) as e:
    st.error(f"Cannot open the Beat-the-AI database: {md_escape(e)}")
    st.stop()
st.caption(f"Database: {md_escape(store.path)}")


def attempts_table(attempts: list[beat.Attempt]) -> pd.DataFrame:
    rows = []
    for a in attempts:
        row = {"#": a.id, "time (UTC)": a.created_at[:19].replace("T", " "), "player": a.user,
               "question": a.question, "answer": a.answer_text,
               "outcome": "you won" if a.human_won else "AI won"}
        for m in a.models:
            row[f"F1 {m.model}"] = round(m.f1, 3)
        rows.append(row)
    return pd.DataFrame(rows)


tab_play, tab_validate, tab_collected, tab_stats = st.tabs(
    ["Play", "Validate", "Collected set & export", "Statistics"])

# ---------------------------------------------------------------------------------------------
with tab_play:
    if ds is None or len(ds) == 0:
        st.info("Choose a dataset with at least one passage.")
    else:
        plist = beat.passages(ds)
        s = st.session_state
        # A sampler per data set, kept in the session: every passage once before any again.
        turn = beat.passage_turn(s, ds.name, len(plist), new=st.button("New passage", key="beat_new"))
        passage = plist[turn]
        if s.get("beat_passage_id") != passage.id:  # a new passage starts a clean form
            s["beat_passage_id"] = passage.id
            for k in ["beat_question", *span_keys("beat")]:
                s.pop(k, None)
        st.caption(f"{md_escape(ds.name)} · {md_escape(passage.title or 'untitled')} · passage "
                   f"{turn + 1} of {len(plist)} · id {md_escape(passage.id)}")

        question = st.text_area("Your question", key="beat_question", height=68,
                                placeholder="Ask something the passage answers, but that a "
                                            "model will get wrong.")
        span = span_picker("beat", passage.context)
        if span:
            st.caption(f"Your answer: characters {span[0]}–{span[1]} · "
                       f"“{md_escape(passage.context[span[0]:span[1]])}”")
        # The passage, with the marked answer highlighted before anything is submitted.
        marks = [Mark("your answer", span[0], span[1], YOU)] if span else []
        st.markdown(highlight_html(passage.context, marks), unsafe_allow_html=True)

        ready = bool(models) and span is not None and bool(question.strip())
        if not models:
            st.warning("Choose at least one model to play against.")
        if st.button("Submit to the AI", type="primary", key="beat_submit", disabled=not ready):
            spans: dict[str, Span | None] = {}
            error = None
            for name in models:
                try:
                    best = loaders.engine_for_state(name).answer(question, passage.context,
                                                                 n_best=1).best
                    spans[name] = best
                except QAInputError as e:
                    error = str(e)
                    break
                except Exception as e:  # a model that fails to load must not take the page down
                    error = f"{name}: {e}"
                    break
            if error:
                st.error(f"Not recorded: {md_escape(error)}")
            else:
                try:
                    att = store.record_attempt(passage, question, span, spans, user=user,
                                               session=SESSION, threshold=threshold,
                                               browser=BROWSER)
                    s["beat_last_attempt"] = att.id
                except ValueError as e:
                    st.error(f"Not recorded: {md_escape(e)}")

        last = s.get("beat_last_attempt")
        att = store.attempt(last) if last else None
        if att is not None and att.passage_id == passage.id:
            st.subheader(f"Attempt #{att.id}")
            if att.human_won:
                st.success(f"🎉 You beat the AI! No model matched your answer (every F1 ≤ "
                           f"{att.threshold:.2f}).")
            else:
                won = ", ".join(f"{md_escape(m.model)} (F1 {m.f1:.2f})" for m in att.models if m.won)
                st.error(f"🤖 The AI wins: {won} matched your answer (F1 > {att.threshold:.2f}). "
                         "Try a harder question about the same passage.")
            cols = st.columns(len(att.models))
            amarks = []
            for i, (col, m) in enumerate(zip(cols, att.models)):
                with col:
                    st.markdown(f'<div style="border-left:6px solid {color_for(i)};'
                                f'padding-left:.5rem"><b>{html_text(m.model)}</b></div>',
                                unsafe_allow_html=True)
                    st.text(f"Answer: {m.answer}" if m.answer else "No answer")
                    st.caption(f"F1 {m.f1:.2f} · {'wins' if m.won else 'fooled'}")
                if m.start is not None:
                    amarks.append(Mark(m.model, m.start, m.end, color_for(i)))
            st.markdown(legend_html([(m.model, color_for(i)) for i, m in enumerate(att.models)],
                                    with_gold=False)
                        + '<div class="qax-legend"><span style="text-decoration:underline;'
                          'text-decoration-thickness:3px;">your answer</span> (underlined)</div>',
                        unsafe_allow_html=True)
            st.markdown(highlight_html(att.context, amarks, [(att.answer_start, att.answer_end)]),
                        unsafe_allow_html=True)

        here = store.attempts(passage_id=passage.id)
        st.subheader("Attempts on this passage")
        if here:
            won = sum(a.human_won for a in here)
            st.caption(f"{count(len(here), 'attempt')} · {won} won by people · {len(here) - won} by the AI")
            st.dataframe(attempts_table(here), hide_index=True, width="stretch")
        else:
            st.caption("No attempts yet: be the first.")
        with st.expander("Inspiration: questions that beat the AI on this passage"):
            winners = [a for a in here if a.human_won]
            if not winners:
                st.caption("None yet.")
            for a in winners:
                st.text(f"• {a.question}   ({a.user})")

# ---------------------------------------------------------------------------------------------
with tab_validate:
    st.caption("Answer someone else's winning question without seeing their answer. It counts "
               "as answerable when your answer matches theirs; disagreements are flagged.")
    vs = st.session_state
    if not identity.name_key(user):
        st.info("Enter your name (with at least one letter or digit) above to validate questions.")
    else:
        queue = store.validation_queue(user, browser=BROWSER)
        if not queue:
            st.info("Nothing to validate: no winning question by someone else is waiting for you.")
        else:
            pick = st.selectbox(f"Question to validate ({len(queue)} waiting)",
                                [a.id for a in queue], key="beat_val_pick",
                                format_func=lambda i: f"#{i}: " + next(
                                    a.question for a in queue if a.id == i)[:80])
            target = next(a for a in queue if a.id == pick)
            if vs.get("beat_val_for") != target.id:
                vs["beat_val_for"] = target.id
                for k in ["beat_val_none", *span_keys("beat_val")]:
                    vs.pop(k, None)
            st.markdown(f"**Question:** {md_escape(target.question)}")
            st.markdown(highlight_html(target.context, []), unsafe_allow_html=True)
            none = st.checkbox("The passage does not answer this question", key="beat_val_none")
            vspan = None if none else span_picker("beat_val", target.context)
            if vspan:
                st.markdown(highlight_html(target.context,
                                           [Mark("your answer", vspan[0], vspan[1], YOU)]),
                            unsafe_allow_html=True)
            if st.button("Submit validation", key="beat_val_submit",
                         disabled=not (none or vspan)):
                try:
                    v = store.record_validation(target.id, user, None if none else vspan,
                                                session=SESSION, threshold=agree_threshold,
                                                browser=BROWSER)
                    vs["beat_val_last"] = v.id
                    st.rerun()
                except ValueError as e:
                    st.error(md_escape(e))
        vid = vs.get("beat_val_last")
        found = store.validations(validation_id=vid) if vid else []
        if found:
            v = found[0]
            a = store.attempt(v.attempt_id)
            st.subheader(f"Your validation of #{a.id}")
            (st.success if v.agrees else st.warning)(
                f"{'You agree' if v.agrees else 'You disagree'} with the author (F1 {v.f1:.2f}); "
                f"the question is now: {a.validation_status}.")
            st.text(f"Author's answer: {a.answer_text}\nYour answer:     "
                    f"{v.answer_text or '(not answerable)'}")

# ---------------------------------------------------------------------------------------------
with tab_collected:
    everything = store.attempts()
    won = [a for a in everything if a.human_won]
    ans = beat_stats.answerability(everything)
    m = st.columns(5)
    m[0].metric("Attempts", len(everything))
    m[1].metric("Won by people", len(won))
    m[2].metric("Validated", ans["validated"])
    m[3].metric("Answerable", ans["answerable"])
    m[4].metric("Flagged", ans["flagged"])
    if everything:
        table = attempts_table(everything)
        table["dataset"] = [a.dataset for a in everything]
        table["validation"] = [a.validation_status for a in everything]
        st.dataframe(table, hide_index=True, width="stretch")
        st.download_button("Table as CSV", csv_bytes(table), "beat_the_ai_attempts.csv",
                           "text/csv", key="beat_table_csv")
        flagged = [a for a in everything if a.flagged]
        if flagged:
            with st.expander(f"Disagreements ({count(len(flagged), 'flagged question')})"):
                for a in flagged:
                    st.markdown(f"**#{a.id}** {md_escape(a.question)} — author: "
                                f"“{md_escape(a.answer_text)}”")
                    for v in store.validations(attempt_id=a.id):
                        st.text(f"   {v.validator}: {v.answer_text or '(not answerable)'} · "
                                f"F1 {v.f1:.2f} · {'agrees' if v.agrees else 'disagrees'}")
    else:
        st.caption("Nothing collected yet.")
    st.subheader("Export as SQuAD v1.1 JSON")
    e1, e2 = st.columns(2)
    only_won = e1.checkbox("Only questions that beat every model", True, key="beat_exp_human")
    only_valid = e2.checkbox("Only validated (answerable) questions", False,
                             key="beat_exp_validated")
    exported = store.export_squad(validated_only=only_valid, human_won_only=only_won)
    n_exp = sum(len(p["qas"]) for a in exported["data"] for p in a["paragraphs"])
    st.caption(f"{count(n_exp, 'question')}; the file loads as a dataset anywhere in this app "
               "(upload it in the dataset picker, or put it in the data directory).")
    d1, d2 = st.columns(2)
    d1.download_button("Download SQuAD JSON", json.dumps(exported, ensure_ascii=False, indent=1),
                       "beat_the_ai.squad.json", "application/json", key="beat_exp_squad")
    d2.download_button("Download every record (JSON)",
                       json.dumps(store.export_records(), ensure_ascii=False, indent=1),
                       "beat_the_ai.records.json", "application/json", key="beat_exp_records")

# ---------------------------------------------------------------------------------------------


def source_statistics(dataset) -> beat_stats.SetStatistics:
    """The source set's statistics, kept in this session only: a process-wide cache keyed by
    name would mix up two visitors' uploads of the same name and outlive their sessions."""
    key = (dataset.name, len(dataset), id(dataset))
    kept = st.session_state.get("beat_source_stats")
    if kept is None or kept[0] != key:
        with st.spinner("Computing statistics…"):
            kept = (key, beat_stats.dataset_statistics(dataset))
        st.session_state["beat_source_stats"] = kept
    return kept[1]


def plot_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows for a Plotly chart: set and model names (an upload's file name, models.toml names)
    HTML-escaped, since Plotly reads legend and tick text as its own small HTML (links too).
    The CSV keeps the names as they are."""
    df = pd.DataFrame(rows)
    for col in ("set", "model"):
        if col in df:
            df[col] = df[col].map(lambda v: html.escape(str(v)))
    return df


def chart_with_csv(fig, rows: list[dict], name: str) -> None:
    st.plotly_chart(fig, key=f"beat_fig_{name}")
    st.download_button(f"{name} as CSV", csv_bytes(rows),
                       f"beat_the_ai_{name}.csv", "text/csv", key=f"beat_csv_{name}")


with tab_stats:
    scope = st.radio("Collected set", ["Questions that beat the AI", "All attempts",
                                       "Validated answerable questions"],
                     horizontal=True, key="beat_stats_scope")
    everything = store.attempts()
    chosen = {"Questions that beat the AI": [a for a in everything if a.human_won],
              "All attempts": everything,
              "Validated answerable questions": [a for a in everything if a.answerable]}[scope]
    sets, by_set = [], {}
    collected = beat_stats.attempt_statistics("collected", chosen)
    if chosen:
        sets.append(collected)
        by_set["collected"] = chosen
    else:
        st.info("No collected questions in this selection yet; showing the source data set only.")
    if ds is not None and len(ds):
        sets.append(source_statistics(ds))
    if not sets:
        st.stop()
    st.caption("Lengths in words; longest common n-gram: the longest run of words the question "
               "shares with its passage (Bartolo et al. 2020, Table 3: it falls as stronger "
               "models are put in the loop). Fooling rate and answerability exist only for "
               "collected questions.")
    summary = beat_stats.comparison_rows(sets, by_set)
    st.dataframe(pd.DataFrame(summary).round(3), hide_index=True, width="stretch")
    st.download_button("summary as CSV", csv_bytes(summary),
                       "beat_the_ai_summary.csv", "text/csv", key="beat_csv_summary")

    wh = beat_stats.wh_rows(sets)
    fig = px.bar(plot_frame(wh), x="wh", y="share", color="set", barmode="group",
                 title="Wh-word distribution (Figure 3)", labels={"share": "share of questions"})
    chart_with_csv(fig, wh, "wh_words")
    for attr, title in (("longest_ngram", "Longest common n-gram with the passage"),
                        ("question_tokens", "Question length (words)"),
                        ("answer_tokens", "Answer length (words)")):
        rows = beat_stats.distribution_rows(sets, attr)
        fig = px.bar(plot_frame(rows), x=attr, y="share", color="set", barmode="group",
                     title=title, labels={"share": "share of questions"})
        chart_with_csv(fig, rows, attr)
    fool = beat_stats.fooling_rates(everything)
    if fool:
        fig = px.bar(plot_frame(fool), x="model", y="fooling_rate", range_y=[0, 1],
                     title="Model-fooling rate per model (all attempts)",
                     hover_data=["attempts", "fooled"])
        chart_with_csv(fig, fool, "fooling_rate")
