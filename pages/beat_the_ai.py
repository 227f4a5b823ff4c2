"""Beat the AI: write a question the models get wrong (Bartolo et al. 2020); validate; export; stats.

All logic lives in core/collect/ (beat, beat_store, beat_stats); this page only lays it out. Every
attempt is stored the moment the models have answered (core.collect.beat_store.BeatStore; database
file from $QAX_BEAT_DB or the cache).
Everything a visitor, a dataset or the store supplies is shown escaped (components/text.py) and
every CSV goes through core.io.csv_export. Who is who: the typed name plus a per-browser token
(components/browser_id.py); core.collect.beat_store refuses an author's validation of their own question.
"""
from __future__ import annotations

import sqlite3
import uuid

import streamlit as st

from components import loaders, persist
from components.beat_views import (
    as_of,
    attempt_result,
    attempts_table,
    collected_tab,
    leaderboard_tab,
    show_attempts,
    statistics_tab,
)
from components.browser_id import browser_token
from components.frame import page_frame, run_output
from components.pickers import dataset_picker, language_mismatch_note, model_picker
from components.span_picker import SELECT, reset_span, span_picker
from components.text import md_escape
from core import config
from core.budgets import MAX_NOTE_CHARS
from core.collect import beat, beat_store, identity
from core.explore.answers import answer_all
from core.render.highlight import Mark, highlight_html
from core.render.words import count
from core.types import Span

page_frame()
st.title("Beat the AI")
st.caption("Write a question about the passage and mark its answer. The models answer at once: "
           "a model wins when its answer overlaps yours (word F1 above the threshold). With "
           "several models, you win only by fooling all of them. Every attempt is saved.")

if "beat_session" not in st.session_state:
    st.session_state["beat_session"] = uuid.uuid4().hex
SESSION = st.session_state["beat_session"]
BROWSER = browser_token()  # the same visitor across reloads: see components/browser_id.py
YOU = "#0072B2"  # the player's own span in previews (models get the palette colours)

# The passage comes first (Play); the setup (name, data set, models, rules) has its own tab.
tab_play, tab_setup, tab_validate, tab_board, tab_collected, tab_stats = st.tabs(
    ["Play", "Setup: name, data set, models", "Validate", "Leaderboard", "Collected set & export", "Statistics"])
try:
    store = beat_store.BeatStore()
except (ValueError, OSError) as e:
    st.error(f"Cannot open the Beat-the-AI database: {md_escape(e)}")
    st.stop()
with tab_setup:
    # The name outlives other pages and a reload: a question stored under "anonymous" is lost credit.
    persist.keep("beat_user", default=store.last_name(BROWSER) or None)
    user = st.text_input("Your name", key="beat_user", max_chars=identity.MAX_NAME_CHARS,
                         help="Stored with your questions; validators must be someone else.")
    st.caption("Names are not authentication: anyone can type any name. The app also remembers "
               "this browser (a random cookie), and neither the same browser nor a look-alike "
               "name can validate a question written here.")
    ds = dataset_picker("beat")
    # the picker marks models not trained for the data set's language
    models = model_picker("beat", lang=ds.lang if ds is not None else None)
    with st.expander("Rules"):
        threshold = st.number_input("A model wins when its F1 with your answer is above", 0.0, 0.99,
                                    beat.WIN_THRESHOLD, 0.05, key="beat_threshold",
                                    help="0.4 in Bartolo et al. (2020).")
        agree_threshold = st.number_input("A validator agrees when F1 with the author's answer is "
                                          "at least", 0.05, 1.0, beat.AGREE_THRESHOLD, 0.05,
                                          key="beat_agree_threshold")
    st.caption(f"Database: {md_escape(config.shown_path(store.path))}")

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
            reset_span("beat")
            s["beat_question"] = ""   # set, not dropped: the browser would keep showing the old one
        st.caption(f"{md_escape(ds.name)} · {md_escape(passage.title or 'untitled')} · passage "
                   f"{turn + 1} of {len(plist)} · id {md_escape(passage.id)} · playing against "
                   + (md_escape(", ".join(models)) if models else "no model (choose them under Setup)"))

        # The passage first: select the answer in it with the mouse (or mark it another way)
        span = span_picker("beat", passage.context)
        if span:
            st.caption(f"Your answer: characters {span[0]}–{span[1]} · "
                       f"“{md_escape(passage.context[span[0]:span[1]])}”")
        if s.get("beat_span_mode", SELECT) != SELECT:
            # the passage, with the marked answer highlighted before anything is submitted
            marks = [Mark("your answer", span[0], span[1], YOU)] if span else []
            st.markdown(highlight_html(passage.context, marks), unsafe_allow_html=True)
        persist.keep("beat_question")   # a draft outlives a look at another page
        question = st.text_area("Your question", key="beat_question", height=68,
                                max_chars=MAX_NOTE_CHARS.value(),
                                placeholder="Ask something the passage answers, but that a "
                                            "model will get wrong.")
        language_mismatch_note(models, passage.lang)

        named = bool(identity.name_key(user))
        ready = bool(models) and span is not None and bool(question.strip()) and named
        if not models:
            st.warning("Choose at least one model to play against.")
        elif not named:   # an attempt under "anonymous" would count for nobody
            st.warning("Enter your name (with at least one letter or digit) under Setup to submit.")
        elif not question.strip():   # a marked answer without a question: say why Submit waits
            st.caption("Write a question to submit it.")
        submitted = st.button("Submit to the AI", type="primary", key="beat_submit", disabled=not ready)
        outcome = run_output()   # the models' loads, then why a submission was not recorded
        refused = None
        if submitted:
            try:   # what would make the store refuse it, before the models answer
                beat_store.checked_submission(passage, question, span)
            except ValueError as e:
                refused = e
        if refused is not None:
            s.pop("beat_last_attempt", None)   # no earlier result stands in for a refused one
            outcome.error(f"Not recorded: {md_escape(refused)}")
        elif submitted:
            with outcome.container():
                with st.spinner(md_escape(f"Answering with {', '.join(models)}…")):
                    answered = answer_all(models, loaders.engine_for_state, question, passage.context,
                                          stop_at_failure=True)
                error = answered.failures[0] if answered.failures else None
                spans: dict[str, Span | None] = {a.model: a.best for a in answered.answers}
                if error:
                    s.pop("beat_last_attempt", None)
                    st.error(f"Not recorded: {md_escape(error)}")
                else:
                    try:
                        att = store.record_attempt(passage, question, span, spans, user=user,
                                                   session=SESSION, threshold=threshold,
                                                   browser=BROWSER,
                                                   key=beat_store.submission_key(SESSION, passage.id, question,
                                                                                 span, list(models)))
                        s["beat_last_attempt"] = att.id
                    except ValueError as e:
                        s.pop("beat_last_attempt", None)
                        st.error(f"Not recorded: {md_escape(e)}")
                    except sqlite3.OperationalError:   # still locked after the store's retries
                        st.error("Not recorded: the database is busy. Submit again: the same question "
                                 "is stored once.")

        last = s.get("beat_last_attempt")
        att = store.attempt(last) if last else None
        if att is not None and att.passage_id == passage.id:
            attempt_result(att)

        here = store.attempts(passage_id=passage.id)
        st.subheader("Attempts on this passage")
        if here:
            won = sum(a.human_won for a in here)
            st.caption(f"{count(len(here), 'attempt')} · {won} won by people · {len(here) - won} by the AI")
            show_attempts(attempts_table(here, BROWSER), "beat_play_table")
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
    st.caption("Answer someone else's winning question without seeing their answer (the tables show an "
               "answer to a winning question only to its author; the collected set's downloads, the "
               "organiser's, carry every answer). It counts as answerable when your answer matches "
               "theirs; disagreements are flagged.")
    as_of("validate")
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
                vs["beat_val_none"] = False
                reset_span("beat_val")
            st.markdown(f"**Question:** {md_escape(target.question)}")
            # the mouse form below draws the passage itself; without it (another way to mark, or no answer) here
            if vs.get("beat_val_none") or vs.get("beat_val_span_mode", SELECT) != SELECT:
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
with tab_board:
    leaderboard_tab(store, models, threshold)

with tab_collected:
    collected_tab(store, BROWSER)

with tab_stats:
    statistics_tab(store, ds)
