"""Beat the AI's views: an attempt's result, the attempts tables, the leaderboard, the collected
set and its statistics.

* :func:`collected_tab` - every attempt (who, question, answer, outcome, each model's F1,
  validation), the questions validators disagreed on, and the exports: SQuAD v1.1 JSON (the
  questions that beat every model, optionally only validated ones) and every record;
* :func:`statistics_tab` - the collected questions against the source data set, as Bartolo et
  al. (2020) compare them: lengths, wh-words, longest n-gram shared with the passage, each
  model's fooling rate (core.collect.beat_stats), every chart with its CSV.

Everything a visitor or a data set supplies is shown escaped; Plotly's labels are HTML-escaped.
"""
from __future__ import annotations

import html
import json
from datetime import datetime, timezone

import pandas as pd
import plotly.express as px
import streamlit as st

from components.answers import answer_card
from components.export import csv_download, download
from components.narrow import fitted
from components.text import md_escape
from core.collect import beat, beat_stats, identity
from core.collect.beat_store import BeatStore
from core.io.csv_export import csv_bytes
from core.render.highlight import Mark, color_for, highlight_html, legend_html
from core.render.words import count

HIDDEN_ANSWER = "(hidden: validators answer blind)"
ATTEMPT_WIDTHS = {"#": 40, "question": 180, "outcome": 70, "player": 100}   # in view at 800 px


def attempts_table(attempts: list[beat.Attempt], viewer: str | None = None) -> pd.DataFrame:
    """One row per attempt: who, question, answer, outcome, when and every model's F1. With
    ``viewer`` (the viewing browser's token), the answers of other people's winning questions are
    hidden: those are the questions validators answer without seeing the author's answer."""
    rows, seen_by = [], identity.token_key(viewer) if viewer is not None else None
    for a in attempts:
        blind = seen_by is not None and a.human_won and a.browser != seen_by
        row = {"#": a.id, "question": a.question, "outcome": "author won" if a.human_won else "AI won",
               "player": a.user, "answer": HIDDEN_ANSWER if blind else a.answer_text,
               "time (UTC)": a.created_at[:19].replace("T", " "),
               "model wins above F1": a.threshold}
        for m in a.models:
            row[f"F1 {m.model}"] = round(m.f1, 3)
        rows.append(row)
    return pd.DataFrame(rows)


def attempt_result(att: beat.Attempt) -> None:
    """A stored attempt as its author sees it after Submit: who won, each model's answer card, and
    the passage with the models' spans marked and the author's answer underlined."""
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
            answer_card(m.model, i, m.answer, f"F1 {m.f1:.2f} · {'wins' if m.won else 'fooled'}")
        if m.start is not None:
            amarks.append(Mark(m.model, m.start, m.end, color_for(i)))
    st.markdown(legend_html([(m.model, color_for(i)) for i, m in enumerate(att.models)],
                            with_gold=False)
                + '<div class="qax-legend"><span style="text-decoration:underline;'
                  'text-decoration-thickness:3px;">your answer</span> (underlined)</div>',
                unsafe_allow_html=True)
    st.markdown(highlight_html(att.context, amarks, [(att.answer_start, att.answer_end)]),
                unsafe_allow_html=True)


def show_attempts(table: pd.DataFrame, key: str) -> None:
    st.dataframe(table, hide_index=True, width="stretch", key=key,
                 column_config=fitted(table.columns, ATTEMPT_WIDTHS, pinned=["#"]))


def collected_tab(store: BeatStore, viewer: str) -> None:
    """Counts, every attempt, the flagged disagreements and the exports (see module doc). The
    table hides other people's answers to winning questions from ``viewer`` (the browser's
    token); the exports are the organiser's and carry every answer."""
    everything = store.attempts()
    won = [a for a in everything if a.human_won]
    ans = beat_stats.answerability(everything)
    m = st.columns(5)
    m[0].metric("Attempts", len(everything))
    m[1].metric("Won by people", len(won), help="Questions no model answered as their author did")
    m[2].metric("Validated", ans["validated"])
    m[3].metric("Answerable", ans["answerable"])
    m[4].metric("Flagged", ans["flagged"])
    if everything:
        table = attempts_table(everything, viewer)
        table["dataset"] = [a.dataset for a in everything]
        table["validation"] = [a.validation_status for a in everything]
        show_attempts(table, "beat_collected_table")
        download("Table as CSV", csv_bytes(table), "beat_the_ai_attempts.csv", "text/csv", "beat_table_csv")
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
    download("Download SQuAD JSON", json.dumps(exported, ensure_ascii=False, indent=1), "beat_the_ai.squad.json",
             "application/json", "beat_exp_squad", d1)
    download("Download every record (JSON)", json.dumps(store.export_records(), ensure_ascii=False, indent=1),
             "beat_the_ai.records.json", "application/json", "beat_exp_records", d2)


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
    download(f"{name} as CSV", csv_bytes(rows), f"beat_the_ai_{name}.csv", "text/csv", f"beat_csv_{name}")


def statistics_tab(store: BeatStore, ds) -> None:
    """The chosen collected questions against the source data set ``ds`` (see module doc)."""
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
        return
    st.caption("Lengths in words; longest common n-gram: the longest run of words the question "
               "shares with its passage (Bartolo et al. 2020, Table 3: it falls as stronger "
               "models are put in the loop). Fooling rate and answerability exist only for "
               "collected questions.")
    summary = beat_stats.comparison_rows(sets, by_set)
    st.dataframe(pd.DataFrame(summary).round(3), hide_index=True, width="stretch")
    download("summary as CSV", csv_bytes(summary), "beat_the_ai_summary.csv", "text/csv", "beat_csv_summary")

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


def as_of(key: str) -> None:
    """When the tab's figures were read, and a button to read them again: other players' attempts
    reach this browser only when it runs the page."""
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.caption(f"As of {datetime.now(timezone.utc):%H:%M:%S} UTC; other players' attempts since then "
               "show after Refresh or your next action.")
    c2.button("Refresh", key=f"beat_refresh_{key}")


def leaderboard_tab(store: BeatStore, models: list[str], threshold: float) -> None:
    """Rounds (a model set, its win rule and the dates it was played) and, per round, the authors'
    leaderboard (core.collect.beat_rounds): attempts, validated fooling rate, inter-validator
    agreement. It opens on the round of ``models`` and ``threshold`` (the Setup's), else the
    round with the most attempts."""
    from core.collect import beat_rounds

    everything = store.attempts()
    played = beat_rounds.rounds(everything)
    if not played:
        st.info("No attempt yet: the first one opens round 1 (the models in play and the day it was played).")
        return
    as_of("board")
    st.caption("A round is the set of models in play, the F1 above which a model matched the author, and the "
               "days it was played on: each attempt joins the round of the models and rule it was submitted "
               "under. Validated fooling: no model matched the author's "
               "answer and a majority of validators gave the same answer. Inter-validator agreement: the share "
               "of pairs of validators of one question who gave the same answer (or both none), over questions "
               "with two or more validators.")
    by_number = {r.number: r for r in reversed(played)}   # newest first in the list
    opening = beat_rounds.opening_round(played, models, threshold).number
    s = st.session_state
    if s.get("beat_round_opened") != opening or s.get("beat_round") not in by_number:
        s["beat_round_opened"] = s["beat_round"] = opening   # the Setup's round, once per change of it
    pick = st.selectbox("Round", list(by_number), format_func=lambda n: by_number[n].label, key="beat_round")
    chosen = by_number[pick]
    validations: dict[int, list] = {}
    for v in store.validations():
        validations.setdefault(v.attempt_id, []).append(v)
    rows = beat_rounds.leaderboard(chosen.attempts, validations)
    table = pd.DataFrame(rows)
    shown = table.copy()
    for col in ("validated fooling rate", "inter-validator agreement"):
        shown[col] = ["—" if v is None or pd.isna(v) else f"{100 * v:.0f} %" for v in table[col]]
    st.dataframe(shown, hide_index=True, width="stretch", key="beat_leaderboard", column_config=fitted(
        shown.columns, {"author": 110, "attempts": 60, "fooled": 50, "validated fooled": 60,
                        "validated fooling rate": 70, "inter-validator agreement": 70},
        labels={"validated fooled": "val. fooled", "validated fooling rate": "val. fooling",
                "inter-validator agreement": "agreement"}, pinned=["author"]))
    st.caption(md_escape(f"{count(len(chosen.attempts), 'attempt')} in this round; models in play: "
                         f"{', '.join(chosen.models)}."))
    csv_download(rows, f"beat_the_ai_round_{chosen.number}", "beat_leaderboard_csv")
