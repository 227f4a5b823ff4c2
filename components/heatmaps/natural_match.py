"""Natural against synthetic (core.collect.noise_profiles): which synthetic setting's noise looks most like
real people's? The distances as a heatmap (natural condition x synthetic setting), the closest setting
per condition, the noise profiles (XQuAD paragraphs apart) and the ranking, from comparisons stored by
the CLI (``--json .cache/noise_match/NAME.json``), bundled ones measured for the docs, or one run here
on a sample (cheap channels; TTS -> ASR on a few questions when asked)."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.cancellable import counted, progress_with_cancel, say_if_cancelled
from components.export import csv_download, figure_downloads, file_stem, json_download
from components.frame import run_output
from components.text import md_escape
from core.collect import noise_profiles
from core.datasets.natural import CONDITIONS


def results_dir() -> Path:
    from core.config import cache_dir

    return cache_dir() / "noise_match"


def stored_results() -> dict[str, dict]:
    """{label: result} of the comparisons in the cache's noise_match/ folder, then those bundled in
    assets/noise_match/ (measured for docs/results, marked "bundled"); unreadable files are left out."""
    from core.config import repo_root

    out = {}
    for folder, mark in ((results_dir(), ""), (repo_root() / "assets" / "noise_match", " (bundled)")):
        for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                found = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(found, dict) and {"ranking", "profiles", "closest"} <= found.keys():
                out.setdefault(f.name + mark, found)
    return out


def distance_figure(result: dict) -> go.Figure:
    """Natural condition (rows) x synthetic setting (columns), coloured by distance (lower = closer)."""
    naturals = list(dict.fromkeys(r["natural"] for r in result["ranking"]))
    settings = list(dict.fromkeys(r["setting"] for r in result["ranking"]))
    value = {(r["natural"], r["setting"]): r["distance"] for r in result["ranking"]}
    z = [[value.get((n, s)) for s in settings] for n in naturals]
    # plotly reads a few HTML tags in labels: the names (from a stored file) are escaped
    naturals, settings = [html.escape(n) for n in naturals], [html.escape(s) for s in settings]
    text = [["" if v is None else f"{v:.3f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=settings, y=naturals, text=text, texttemplate="%{text}",
                               colorscale="Viridis_r", colorbar={"title": "distance"},
                               hovertemplate="%{y}<br>%{x}<br>distance %{z:.3f}<extra></extra>"))
    fig.update_layout(height=140 + 60 * len(naturals), margin={"t": 30, "b": 10}, xaxis={"tickangle": -40},
                      yaxis={"autorange": "reversed"})
    return fig


def render() -> None:
    st.caption("NoiseQA's question, asked of real people's noise: on HeySQuAD's spoken questions and Disfl-QA's "
               "disfluent ones, which synthetic setting (keyboard noise, the disfluency family, TTS → ASR with "
               "the installed voices and recognisers) makes noise most like theirs? Each question's WER and CER "
               "against its typed original; the distance is " + md_escape(noise_profiles.DISTANCE) + ". Store full "
               "runs with `python -m core.collect.noise_match --json .cache/noise_match/NAME.json`.")
    stored = stored_results()
    with st.form("nm_run", enter_to_submit=False):   # Enter in a count box is not a start
        cols = st.columns([2, 1, 1])
        conditions = cols[0].multiselect("Natural conditions", list(CONDITIONS), default=["asr_human", "asr_tts"],
                                         format_func=lambda c: CONDITIONS[c].label, key="nm_conditions")
        n = cols[1].number_input("Questions", min_value=20, max_value=1000, value=100, step=20, key="nm_n")
        asr_n = cols[2].number_input("of them through TTS → ASR", min_value=0, max_value=50, value=0, step=5,
                                     key="nm_asr", help="seconds per question and setting (cached on disk)")
        go_run = st.form_submit_button("Compare")
    working = run_output()   # the bar and Cancel
    say_if_cancelled("nm", working, "the measurement stopped at the step it was on, and nothing of it was stored "
                                    "(TTS → ASR transcripts made so far are cached).")
    if go_run and conditions:
        with working.container():
            _run_here(conditions, int(n), int(asr_n))
        working.empty()
        stored = stored_results()
    if not stored:
        st.info("No comparison is stored yet: run one above, or with the command line.")
        return
    name = st.selectbox("Stored comparison", list(stored), key="nm_file")
    show(stored[name], file_stem("natural-vs-synthetic", Path(name).stem))


def flip_rows(result: dict) -> list[dict]:
    """One row per natural condition and model of a noise-match result's flip agreement (its
    ``agreement``; none when it was run without ``--model``).

    >>> flip_rows({"agreement": {"asr_human": [{"model": "m", "a": "natural:asr_human", "b": "keyboard_Q:p=0.25",
    ...     "n": 300, "flips a": 80, "flips b": 90, "both flip": 31, "kappa": 0.1148, "low": -0.0036, "high": 0.241,
    ...     "note": ""}]}})[0]["kappa [95%]"]
    '0.11 [0.00, 0.24]'
    """
    from core.collect.flip_agreement import kappa_label

    return [{"natural": r["a"], "setting": r["b"], "model": r["model"], "n": r["n"], "flips natural": r["flips a"],
             "flips setting": r["flips b"], "both": r["both flip"], "kappa [95%]": kappa_label(r),
             "note": r.get("note", "")}
            for rows in (result.get("agreement") or {}).values() for r in rows]


def show(result: dict, stem: str) -> None:
    s = result["settings"]
    st.caption(md_escape(f"{s['sample'] or 'all'} questions per condition, seed {s['seed']}"
                         + (f"; TTS → ASR on {s['asr_sample']} of them" if s.get("asr") else "")))
    closest = pd.DataFrame([{"natural": f"natural:{c}", "closest setting": r["setting"], "distance": r["distance"],
                             "W1 WER": r["w1_wer"], "W1 CER": r["w1_cer"], "mix TV": r["mix_tv"], "n": r["n"],
                             "distance (XQuAD paragraphs)": r.get("distance (xquad paragraphs)")}
                            for c, r in result["closest"].items()])
    st.markdown("**The closest synthetic setting per natural condition**")
    st.dataframe(closest, hide_index=True, width="stretch")
    fig = distance_figure(result)
    st.plotly_chart(fig, width="stretch")
    figure_downloads(fig, stem, "nm_fig")
    agreement = flip_rows(result)
    if agreement:   # what noise_match --model measured: whether the closest setting flips the same answers
        st.markdown("**Flip agreement of the closest setting** (Cohen's kappa with its bootstrap 95% interval, "
                    "Fisher's exact p where the result has it)")
        st.dataframe(pd.DataFrame(agreement), hide_index=True, width="stretch")
    st.markdown("**Noise profiles** (XQuAD's paragraphs apart: the shipped models did not train on them)")
    profiles = pd.DataFrame(result["profiles"])
    st.dataframe(profiles, hide_index=True, width="stretch")
    with st.expander("Every setting's distance"):
        ranking = pd.DataFrame(result["ranking"])
        st.dataframe(ranking, hide_index=True, width="stretch")
    c1, c2, c3 = st.columns(3)
    with c1:
        csv_download(pd.DataFrame(result["ranking"]), f"{stem}-ranking", "nm_rank_csv", label="Ranking CSV")
    with c2:
        csv_download(profiles, f"{stem}-profiles", "nm_prof_csv", label="Profiles CSV")
    with c3:
        json_download(result, stem, "nm_json", label="All (JSON)")


def _run_here(conditions: list[str], n: int, asr_n: int) -> None:
    with progress_with_cancel("nm", "Measuring the noise…") as bar:
        try:
            result = noise_profiles.run_match(conditions, sample=n, asr_sample=asr_n, progress=counted(bar))
        except (ValueError, OSError, RuntimeError) as e:   # a missing data file, voice or recogniser
            st.error(md_escape(f"The comparison could not run: {e}"))
            return
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{file_stem('-'.join(conditions), n, asr_n)}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target)
    st.session_state["nm_file"] = target.name
