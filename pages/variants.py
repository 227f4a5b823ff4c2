"""Variants: one question perturbed many ways, every model's answer to every variant side by side.

The logic (seed rule, batching, the table) lives in core.explore.variants; this page only gathers inputs,
shows progress and renders. Repeat r of perturbation P under seed S draws from
core.perturb.spec.rng_for(S, example, P, r), as a sweep and make_challenge do, so any row can be
reproduced from the numbers in the table, and a sweep with the same seed shows the same variant.
"""
from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from components import loaders, permalink, persist
from components.cancellable import progress_with_cancel, say_if_cancelled
from components.context_box import context_box
from components.export import download
from components.frame import page_frame, run_output
from components.narrow import fitted, wrapped_sizes
from components.params import param_form
from components.pickers import item_picker, language_mismatch_note, model_picker
from components.text import choose_hint, md_escape
from components.variant_row import row_detail
from core.config import hide_server_paths
from core.explore import variants as cv
from core.explore.answers import load_engines
from core.explore.question_match import same_question
from core.io.csv_export import csv_bytes
from core.langid import guess_language
from core.perturb import registry
from core.perturb.nlp import tagger_warning
from core.qa.engine import QAInputError, validate_pair
from core.types import Answer, QAExample

page_frame()
st.title("Variants")
st.caption("Perturb one question many ways and see how every selected model's answer moves. "
           "Pick perturbations by family, set a seed, press **Generate & answer**, click a row.")
run_link = permalink.apply_variants()   # a link's inputs, once; True: generate at once (components/permalink.py)


# Drawn here, filled once the item is known: the picker marks models not trained for its language.
models_slot = st.container()
persist.keep_all(["var_source", "var_question", "var_seed", "var_repeats", "var_chain"])
source = st.radio("Input", ["Dataset item", "Type a question and context"], horizontal=True, key="var_source")

if source == "Dataset item":
    ds, item = item_picker("var")
    st.caption(md_escape(f"{ds.name} · id {item.id} · {item.title.replace('_', ' ')} · language {item.lang}"))
    with st.expander("Context"):
        st.text(item.context)
    question = st.text_area("Question", key="var_question", height=68)
    example = dataclasses.replace(item, question=question)
    own_question = same_question(question, item.question)   # only it (and its variants) has a gold answer
else:
    persist.keep("var_context")   # kept only where it is drawn: see components/persist.py
    context = context_box("var_context", 160)   # refused past the engine's limit, before any work
    question = st.text_area("Question", key="var_question", height=68)
    persist.keep("var_gold")
    gold = st.text_input("Gold answer (optional: scores the answers, EM/F1)", key="var_gold").strip()
    lang = guess_language(context).code if context.strip() else "en"   # as Ask: Latin script is not all English
    example = QAExample(id="typed", question=question, context=context, lang=lang,
                        answers=(Answer(gold, context.find(gold)),) if gold else ())
    own_question = bool(gold)   # a typed gold answer scores the question and its variants, as on Ask
    st.caption(f"Language detected from the context: {md_escape(lang)}."
               + ("" if gold else " Without a gold answer there is no EM/F1."))

with models_slot:
    models = model_picker("var", lang=example.lang)
language_mismatch_note(models, example.lang)
if warning := tagger_warning(example.lang):
    st.warning(md_escape(warning))

# ----------------------------------------------------------------------------- perturbations

st.subheader("Perturbations")
families = registry.by_family()
reasons = {p.id: cv.incompatibility_reason(p, example) for ps in families.values() for p in ps}
by_id = {p.id: p for ps in families.values() for p in ps}
# told from the question's text alone (case in Thai, QWERTY typos in Hindi): said in the option too,
# unless a choice below could change it (typo_Q's layout)
idle = {pid: None if reasons[pid] or any(q.choices for q in p.parameters) else p.nothing_to_change(example)
        for pid, p in by_id.items()}


def option_label(pid: str) -> str:
    """What the perturbation does, in the option itself (a bare SCRQ says nothing to an audience)."""
    p = by_id[pid]
    what = p.description if len(p.description) <= 70 else p.description[:69].rstrip() + "…"
    label = f"{pid} — {what}"
    if reasons[pid]:
        return label + " · ⚠ not for this example"
    return label + " · nothing to change here" if idle[pid] else label


chosen_ids: list[str] = []
cols = st.columns(2)
for i, (family, members) in enumerate(families.items()):
    with cols[i % 2]:
        help_text = "\n".join(f"- **{p.id}** ({p.field}): {md_escape(p.description)}" for p in members)
        persist.keep(f"var_fam_{family}", [p.id for p in members])
        chosen_ids += st.multiselect(family, [p.id for p in members], key=f"var_fam_{family}",
                                     format_func=option_label, help=help_text)

chain = st.multiselect(
    "Chain (composition)", list(by_id), key="var_chain", format_func=option_label,
    help="Two or more perturbations applied one after the other, in the order chosen "
         "(e.g. translate, then keyboard noise), as one extra row per repeat. All steps must change "
         "the same field. Steps use the parameters set below.")
if len(chain) == 1:
    st.caption("A chain needs at least two steps.")

unavailable = [(pid, r) for pid, r in reasons.items() if r]
if unavailable:
    with st.expander(f"Not available for this example ({len(unavailable)})"):
        for pid, reason in unavailable:
            st.text(hide_server_paths(f"{pid}: {reason}"))  # plain text: md_escape does not run
for pid in chosen_ids:
    if reasons[pid]:
        st.warning(md_escape(f"{pid} will be skipped: {reasons[pid]}"))


# One parameter box per perturbation, shared by its single run and any chain it is a step of.
params_of = {pid: {} if reasons[pid] else param_form(by_id[pid], "var_param")
             for pid in dict.fromkeys(chosen_ids + chain)}
choices = [cv.Choice(pid, params_of[pid]) for pid in chosen_ids]
if len(chain) >= 2:
    choices.append(cv.Choice("+".join(chain), {pid: params_of[pid] for pid in chain}))

c1, c2 = st.columns(2)
seed = int(c1.number_input("Seed", 0, 2**31 - 1, 0, key="var_seed"))
repeats = int(c2.number_input("Repeat N times", 1, cv.MAX_REPEATS, 3, key="var_repeats",
                              help="Randomised perturbations are re-sampled N times; repeat r draws what a "
                                   "sweep with this seed draws for its repeat r (and make_challenge for r = 0). "
                                   "Deterministic ones run once."))

# ----------------------------------------------------------------------------- generate & answer

signature = (example, repr(choices), seed, repeats, tuple(models))
if hint := choose_hint({"at least one perturbation": not choices, "at least one model": not models},
                       "to generate variants"):
    st.caption(hint)
generate = st.button("Generate & answer", type="primary", key="var_go", disabled=not (models and choices))
working = run_output()   # the progress bar, the models' loads
say_if_cancelled("var", working, "the variants stopped where they were, and none of this run was kept.")
if generate or (run_link and models and choices):
    with working.container():
        try:
            validate_pair(example.question, example.context)
        except QAInputError as e:
            st.error(md_escape(e))
            st.stop()
        with progress_with_cancel("var", "Generating variants…") as bar:
            rows, notes = cv.generate_variants(
                example, choices, seed, repeats,
                progress=lambda done, total: bar(done / max(total, 1), f"Generating variants… {done}/{total}"))
            engines, errors = load_engines(models, loaders.engine_for_state)

            def answer_progress(name, done, total):
                k = list(engines).index(name)
                bar((k + done / max(total, 1)) / len(engines), f"Answering with {name}… {done}/{total} windows")

            predictions = cv.answer_variants(rows, engines, progress=answer_progress) if engines else {}
    working.empty()
    st.session_state["var_result"] = {
        "signature": signature, "rows": rows, "notes": notes, "errors": errors,
        "predictions": predictions, "lang": example.lang,
        "table": cv.results_table(rows, predictions, example.lang, scored=own_question), "scored": own_question,
    }
    st.session_state["var_row"] = permalink.first_row()   # 0, or the row a link shows
    st.session_state["var_last_selection"] = []

res = st.session_state.get("var_result")


def link_box(row: int | None = None) -> None:
    """This view's copy-link box; ``row``: the row shown in detail (None: no table)."""
    permalink.copy_link(*permalink.variants_link(
        item if source == "Dataset item" else None, example.context, question, models, chosen_ids, params_of,
        chain, seed, repeats, row if res and res["signature"] == signature else None,
        gold=example.answers[0].text if source != "Dataset item" and example.answers else ""), key="var_link")


if not res:
    link_box()
    st.stop()

if res["signature"] != signature:
    st.info("The inputs changed since this table was made; press Generate & answer to refresh it.")
for e in res["errors"]:
    st.error(md_escape(e))
if res["notes"]:
    lines = [f"{n.perturbation}" + (f" r{n.repeat}" if n.repeat is not None else "") + f" ({n.status}): {n.message}"
             for n in res["notes"]]
    st.warning("No variant from:\n\n" + "\n".join(f"- {md_escape(line)}" for line in lines))

rows, predictions, table = res["rows"], res["predictions"], pd.DataFrame(res["table"])
table["repeat"] = table["repeat"].astype("Int64")  # None for the original row; keep ints, not floats
st.caption("⟦old→new⟧ replaced, ⟦+x⟧ inserted, ⟦−x⟧ deleted (context rows show only the text around the "
           "edits). One column per model: \"changed\" = its answer differs from its answer to the original "
           "question (after EM normalisation), \"same\" = it does not, then the answer and its F1 (%) "
           "against gold. WER ignores case and punctuation, as on Heatmaps. Repeats that drew the same variant "
           "are one row. Click a row to see the spans; the CSV has every column.")
if not res.get("scored", True) and source == "Dataset item":
    st.caption("Not scored: this is not the item's own question, so it has no gold answer (as on Ask). "
               "The item's own question and its variants are scored against the item's gold answers.")
compact = cv.compact_table(res["table"], list(predictions))
shown_table = pd.DataFrame(compact)
# three models' columns beside the variant at 800 px, all grown to fill a wider page; the variant's
# cell names its perturbation; rows tall enough to read each variant and answer whole (components/narrow.py)
widths = {"#": 28, "variant (edits marked)": 118, **{name: 92 for name in predictions}}
row_px, table_px = wrapped_sizes(compact, {k: v for k, v in widths.items() if k != "#"})
event = st.dataframe(shown_table, key="var_table", on_select="rerun", selection_mode="single-row",
                     hide_index=True, width="stretch", row_height=row_px, height=table_px,
                     column_config=fitted(shown_table.columns, widths,
                                          labels={"variant (edits marked)": "variant"},
                                          hidden=["perturbation", "params", "field", "repeat", "same as repeats",
                                                  "question", "text"]))
selected = list(getattr(getattr(event, "selection", None), "rows", []) or [])
if selected and selected != st.session_state.get("var_last_selection"):
    st.session_state["var_row"] = selected[0]
st.session_state["var_last_selection"] = selected
download("Export CSV", csv_bytes(table), "variants.csv", "text/csv", "var_csv")

# ----------------------------------------------------------------------------- one row in detail

if st.session_state.get("var_row", 0) >= len(rows):
    st.session_state["var_row"] = 0
i = st.selectbox("Show spans for row", list(range(len(rows))), key="var_row",
                 format_func=lambda k: cv.row_label(k, rows[k]))
link_box(i)
row_detail(res, i)
