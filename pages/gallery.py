"""Gallery: striking examples for a demo, found in stored sweeps and Beat-the-AI attempts.

Where the models disagree, where one keystroke flips an answer, where a person beat the AI
(core.explore.gallery finds them); each opens on Ask or Variants in one click, with its passage and
question filled in.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components import permalink, persist
from components.demo_sweep import offer_demo_sweep
from components.export import csv_download, json_download
from components.frame import page_frame
from components.open_item import open_on
from components.sweep_db_picker import db_picker, demo_caption
from components.text import html_text, md_escape
from core.collect import beat_store
from core.config import shown_dataset
from core.explore import demo_sweep
from core.explore import gallery as cg
from core.sweeps.analysis.stored import list_sweeps

page_frame()
st.title("Gallery")
st.caption("Striking examples from the stored sweeps and Beat-the-AI games: where the models disagree, where one "
           "keystroke flips an answer, where a person beat the AI. Open any of them on **Ask** or **Variants** "
           "in one click.")

KINDS = {"disagree": "Models disagree", "flip": "One keystroke flips the answer", "beaten": "The AI was beaten"}


@st.cache_data(show_spinner="Looking for striking examples…", max_entries=8)
def findings(db: str | None, sweep_ids: tuple[int, ...], versions: tuple, attempts_version: tuple) -> dict:
    try:
        attempts = beat_store.BeatStore().attempts(outcome="human")
    except (ValueError, OSError):
        attempts = []
    return cg.find_all(db, sweep_ids, attempts)


link = permalink.opened_gallery()   # a link's database, sweeps and example, once (components/permalink.py)
choice = db_picker("gal", allow_demo=True)   # a fresh clone opens on the bundled demo sweep
demo_caption(choice)
sweeps = []
if choice.path is not None and choice.path.exists():
    try:
        sweeps = list_sweeps(choice.path)
    except Exception as e:  # a damaged file must not take the page down
        st.error(md_escape(f"Cannot read {choice.path}: {e}"))
by_id = {s["id"]: s for s in sweeps}
ids = demo_sweep.user_first(list(reversed(list(by_id))), by_id)   # newest first, the demo sweep last
own = [i for i in ids if not demo_sweep.is_demo(by_id[i])]
permalink.apply_gallery_sweeps(link, by_id)
# a sweep stored since joins them; the user's own sweeps replace the demo sweep as soon as there are any
persist.keep("gal_sweeps", ids, default=(own or ids)[:5], follow_default=True)
picked = st.multiselect("Sweeps to look in", ids, key="gal_sweeps",
                        format_func=lambda i: f"{by_id[i]['name']} · {shown_dataset(by_id[i]['dataset'])}")
if not sweeps and choice.path is not None:   # an empty database chosen: a one-click demo sweep, not an empty room
    offer_demo_sweep("gal", choice.path, "No stored sweep in this database: only Beat-the-AI wins can be shown. "
                                         "Run a sweep on the Sweeps page, or build the demo sweep here.")
try:
    n_attempts = len(beat_store.BeatStore().attempts(outcome="human"))
except (ValueError, OSError):
    n_attempts = 0
found = findings(str(choice.path) if sweeps else None, tuple(picked),
                 tuple((by_id[i]["updated_at"], by_id[i]["done_units"]) for i in picked), (n_attempts,))


found, linked = permalink.linked_first(link, found)   # the linked example first, its tab open
tab_labels = [f"{label} ({len(found[kind])})" for kind, label in KINDS.items()]
# open on the first kind that has examples, not on an empty one
tabs = st.tabs(tab_labels, default=tab_labels[list(KINDS).index(linked.kind)] if linked else
               next((t for t, k in zip(tab_labels, KINDS) if found[k]), tab_labels[0]))
for tab, kind in zip(tabs, KINDS):
    with tab:
        if not found[kind]:
            st.caption({"disagree": "No clean question where one model is right and another wrong in the chosen "
                                    "sweeps (a sweep with two or more models finds them).",
                        "flip": "No variant in the chosen sweeps is one keystroke from its question and "
                                "turns a right answer wrong. Such variants come from one-character edits "
                                "(DCRQ, ICRQ, SCRQ, ReplaceCRQ with one word and one character) and from "
                                "keyboard noise that happened to change one letter only.",
                        "beaten": "Nobody has beaten the AI yet: play on **Beat the AI**."}[kind])
        for n, f in enumerate(found[kind]):
            with st.container(border=True):
                if f is linked:
                    st.caption("🔗 The example this link names")
                st.markdown(f"**{md_escape(f.title)}**")
                st.caption(md_escape(f"{f.source} · {f.dataset or 'passage as played'} · {f.example_id} · gold: "
                                     + " | ".join(f.golds)))
                if f.kind == "flip":
                    st.markdown(f"<div>Question: {html_text(f.original_question)}<br>Typed: "
                                f"<b>{html_text(f.question)}</b></div>", unsafe_allow_html=True)
                else:
                    st.markdown(f"<div>Question: <b>{html_text(f.question)}</b></div>", unsafe_allow_html=True)
                st.markdown(" · ".join(f"{html_text(who)}: <i>{html_text(a or '∅')}</i>"
                                       for who, a in f.answers.items()), unsafe_allow_html=True)
                opens = st.container(horizontal=True)   # buttons as wide as their labels (columns cut them)
                if opens.button("Open on Ask", key=f"gal_ask_{kind}_{n}"):
                    open_on("ask", f)
                if opens.button("Open on Variants", key=f"gal_var_{kind}_{n}"):
                    open_on("variants", f)
                permalink.copy_link(permalink.gallery_link(choice if sweeps else None,
                                                           [by_id[i]["name"] for i in picked], f),
                                    key=f"gal_link_{kind}_{n}")
        if found[kind]:   # the list as a table: every finding, its answers and its passage
            rows = cg.export_rows(found[kind])
            with st.container(horizontal=True):
                csv_download(pd.DataFrame(rows), f"gallery_{kind}", key=f"gal_csv_{kind}")
                json_download(rows, f"gallery_{kind}", key=f"gal_json_{kind}")
