"""Behaviour tests: CheckList-style MFT / INV / DIR tests (core.behaviour) against the selected models.

A shipped example file (assets/behaviour/*.toml) or an uploaded one (format: docs/BEHAVIOUR.md)
is read, expanded with its seed, run; the page shows pass rates per model and test, the failing
cases with the answer spans highlighted, and CSV/JSON exports.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components import loaders
from components.cancellable import progress_with_cancel, say_if_cancelled
from components.export import csv_download, download, json_download
from components.frame import page_frame, run_output
from components.narrow import fitted, key_first
from components.pickers import language_mismatch_note, model_picker
from components.text import md_escape
from core.behaviour.run import case_rows, results_rows, run_file
from core.behaviour.spec import BehaviourError, check_size, expand, loads
from core.render.highlight import Mark, color_for, highlight_html, legend_html

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "behaviour"

page_frame()
st.title("Behaviour tests")
st.caption("Templated tests of what a model should do (CheckList): **MFT** the answer must be the expected one, "
           "**INV** a perturbation of the question must not change the answer, **DIR** an edit of the context "
           "must change it. Pick a shipped file or upload your own (format: docs/BEHAVIOUR.md).")

# Drawn here, filled once the file is read: the picker marks models not trained for its language.
models_slot = st.container()


def stop_without_a_file() -> None:
    """No usable file: the model picker (unmarked) still shows, then the page ends here."""
    with models_slot:
        model_picker("bt")
    st.stop()


shipped = sorted((p.name for p in EXAMPLES.glob("*.toml")), key=lambda n: (n != "en.toml", n))
source = st.radio("Tests", ["Shipped example", "Upload a file"], horizontal=True, key="bt_source")
text, file_name = None, None
if source == "Shipped example":
    if not shipped:
        st.error("No example file in assets/behaviour/.")
        stop_without_a_file()
    file_name = st.selectbox("File", shipped, key="bt_file")
    text = (EXAMPLES / file_name).read_text(encoding="utf-8")
else:
    up = st.file_uploader("Behaviour file (.toml)", type=["toml"], key="bt_upload")
    if up is not None:
        try:   # the size budget, checked before the bytes are read
            check_size(up.size, "The file")
        except BehaviourError as e:
            st.error(md_escape(e))
            stop_without_a_file()
        try:
            text, file_name = up.getvalue().decode("utf-8"), up.name
        except UnicodeDecodeError:
            st.error("The file is not UTF-8 text.")
            stop_without_a_file()
if text is None:
    st.info("Upload a behaviour file to run it.")
    stop_without_a_file()

try:
    bfile = loads(text, Path(file_name).stem)
    counts = {t.name: len(expand(t, bfile.seed)) for t in bfile.tests}
except BehaviourError as e:
    st.error(md_escape(f"This file cannot be used: {e}"))
    stop_without_a_file()

st.caption(md_escape(f"{bfile.name} · language {bfile.lang} · seed {bfile.seed} · {len(bfile.tests)} tests · "
                     f"{sum(counts.values())} cases"))
with models_slot:
    models = model_picker("bt", lang=bfile.lang)
    language_mismatch_note(models, bfile.lang)
with st.expander("The tests"):
    st.dataframe(pd.DataFrame([{"test": t.name, "type": t.kind, "cases": counts[t.name],
                                "perturb": t.perturb or "", "max failure rate": t.max_failure_rate,
                                "description": t.description} for t in bfile.tests]), hide_index=True)
    download("⬇ The file", text, file_name, "text/plain", "bt_file_dl")

threshold = st.slider("Default maximum failure rate (tests without their own)", 0.0, 1.0, 0.2, 0.05,
                      key="bt_threshold")
signature = (text, tuple(models), threshold)
run = st.button("Run the tests", type="primary", key="bt_go", disabled=not models)
working = run_output()   # the models' loads, the bar and Cancel
say_if_cancelled("bt", working, "the tests stopped at the case they were on, and this run's results were not kept.")
if run:
    engines, errors = {}, []
    with working.container():
        for name in models:
            try:
                engines[name] = loaders.engine_for_state(name)
            except Exception as e:   # one model failing to load must not hide the others
                errors.append(f"{name}: {e}")
        with progress_with_cancel("bt", "Running…") as bar:
            try:
                results = run_file(bfile, engines, threshold,
                                   progress=lambda d, t: bar(d / max(t, 1), f"Running tests… {d}/{t}"))
            except BehaviourError as e:
                errors.append(str(e))
                results = []
    working.empty()
    st.session_state["bt_result"] = {"signature": signature, "results": results, "errors": errors}

res = st.session_state.get("bt_result")
if not res:
    st.stop()
if res["signature"] != signature:
    st.info("The file, models or threshold changed since these results; press Run the tests to refresh them.")
for e in res["errors"]:
    st.error(md_escape(e))
results = res["results"]
if not results:
    st.stop()

summary = pd.DataFrame(results_rows(results))
over = int(summary["over threshold"].sum())
st.subheader("Pass rates")
(st.error if over else st.success)(f"{over} of {len(summary)} (model, test) pairs over their failure-rate threshold.")
# the failure rate beside the model and test, so a window 800 px wide shows it (components/narrow.py)
shown = summary[key_first(summary.columns, ["model", "test", "failure rate %", "max failure rate %", "over threshold"])]
st.dataframe(shown, hide_index=True, key="bt_summary", width="stretch", column_config=fitted(
    shown.columns, {"model": 125, "test": 135, "failure rate %": 60, "max failure rate %": 55, "over threshold": 55},
    labels={"failure rate %": "failed %", "max failure rate %": "max %", "over threshold": "over?"}))
cases = pd.DataFrame(case_rows(results))
c1, c2, c3 = st.columns(3)
csv_download(summary, "behaviour_summary", "bt_sum_csv", "Summary CSV", where=c1)
csv_download(cases, "behaviour_cases", "bt_cases_csv", "Cases CSV", where=c2)
json_download({"file": bfile.name, "summary": results_rows(results), "cases": case_rows(results)}, "behaviour",
              "bt_json", where=c3)

st.subheader("Failing cases")
failing = [(r, c) for r in results for c in r.cases if c.status == "fail"]
if not failing:
    st.success("No case failed.")
    st.stop()
# the tests over their threshold first, then by failure rate: the list opens on the worst
ranked = sorted((r for r in results if any(c.status == "fail" for c in r.cases)),
                key=lambda r: (not r.over_threshold, -(r.failure_rate or 0)))
tests = [f"{r.model} · {r.name}" for r in ranked]
chosen = st.selectbox("Test", tests, key="bt_fail_test")
mine = [(r, c) for r, c in failing if f"{r.model} · {r.name}" == chosen]
st.caption(f"{len(mine)} failing cases; the answer is highlighted in its context (before and after the change "
           "for INV and DIR).")
for r, c in mine[:25]:
    with st.container(border=True):
        st.markdown(f"**Q:** {md_escape(c.question)}" + (f"  \n**Perturbed Q:** {md_escape(c.question_after)}"
                                                         if c.question_after else ""))
        st.caption(md_escape(c.reason))
        marks = ([Mark("answer", c.answer.start, c.answer.end, color_for(0))]
                 if c.answer and c.answer.start is not None else [])
        gold = []
        if c.expect and c.expect in c.context:
            i = c.context.index(c.expect)
            gold = [(i, i + len(c.expect))]
        st.markdown(highlight_html(c.context, marks, gold), unsafe_allow_html=True)
        if c.answer_after is not None:
            after_ctx = c.context_after or c.context
            after_marks = ([Mark("answer after", c.answer_after.start, c.answer_after.end, color_for(1))]
                           if c.answer_after.start is not None else [])
            st.markdown(highlight_html(after_ctx, after_marks), unsafe_allow_html=True)
if len(mine) > 25:
    st.caption(f"{len(mine) - 25} more in the cases CSV.")
st.markdown(legend_html([("answer", color_for(0)), ("answer after the change", color_for(1))], with_gold=True),
            unsafe_allow_html=True)
