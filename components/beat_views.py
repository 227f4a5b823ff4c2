"""Beat the AI's collected set and its statistics (the page's last two tabs).

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

import pandas as pd
import plotly.express as px
import streamlit as st

from components.export import csv_download, download
from components.text import count, md_escape
from core.collect import beat, beat_stats
from core.collect.beat_store import BeatStore
from core.io.csv_export import csv_bytes


def attempts_table(attempts: list[beat.Attempt]) -> pd.DataFrame:
    """One row per attempt: when, who, question, answer, outcome and every model's F1."""
    rows = []
    for a in attempts:
        row = {"#": a.id, "time (UTC)": a.created_at[:19].replace("T", " "), "player": a.user,
               "question": a.question, "answer": a.answer_text,
               "outcome": "you won" if a.human_won else "AI won"}
        for m in a.models:
            row[f"F1 {m.model}"] = round(m.f1, 3)
        rows.append(row)
    return pd.DataFrame(rows)


def collected_tab(store: BeatStore) -> None:
    """Counts, every attempt, the flagged disagreements and the exports (see module doc)."""
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


def leaderboard_tab(store: BeatStore) -> None:
    """Rounds (a model set and the dates it was played) and, per round, the authors' leaderboard
    (core.collect.beat_rounds): attempts, validated fooling rate, inter-validator agreement."""
    from core.collect import beat_rounds

    everything = store.attempts()
    played = beat_rounds.rounds(everything)
    if not played:
        st.info("No attempt yet: the first one opens round 1 (the models in play and the day it was played).")
        return
    st.caption("A round is the set of models in play and the days it was played on: each attempt joins the "
               "round of the models it was submitted against. Validated fooling: no model matched the author's "
               "answer and a majority of validators gave the same answer. Inter-validator agreement: the share "
               "of pairs of validators of one question who gave the same answer (or both none), over questions "
               "with two or more validators.")
    newest = list(reversed(played))
    pick = st.selectbox("Round", range(len(newest)), format_func=lambda i: newest[i].label, key="beat_round")
    chosen = newest[pick]
    validations: dict[int, list] = {}
    for v in store.validations():
        validations.setdefault(v.attempt_id, []).append(v)
    rows = beat_rounds.leaderboard(chosen.attempts, validations)
    table = pd.DataFrame(rows)
    shown = table.copy()
    for col in ("validated fooling rate", "inter-validator agreement"):
        shown[col] = ["—" if v is None or pd.isna(v) else f"{100 * v:.0f} %" for v in table[col]]
    st.dataframe(shown, hide_index=True, width="stretch", key="beat_leaderboard")
    st.caption(md_escape(f"{count(len(chosen.attempts), 'attempt')} in this round; models in play: "
                         f"{', '.join(chosen.models)}."))
    csv_download(rows, f"beat_the_ai_round_{chosen.number}", "beat_leaderboard_csv")
