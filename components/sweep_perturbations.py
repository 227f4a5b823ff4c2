"""The Sweeps page's perturbations: what a sweep compares with the clean questions. The
catalogue by family (each chosen perturbation's parameter box: every combination of its values
runs), challenge files paired with the data set (natural or pre-generated noise), specs typed in
the command line's spec language, and NoiseQA's repair chained after the question perturbations.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components import persist
from components.choice import keep_valid
from components.params import combinations, sweep_form
from components.sweep_db_picker import label
from components.sweep_setup import challenge_pairing, typed_specs
from components.text import md_escape
from core import config
from core.datasets import Dataset
from core.perturb import registry
from core.perturb.spec import PerturbationSpec
from core.sweeps.analysis.repair import SETTINGS, repair_specs
from core.sweeps.running import offer


@dataclass(frozen=True)
class ChosenSpecs:
    """What the form chose: ``specs`` in order, without repeats; ``pair_by``: how the challenge
    files pair with the data set; ``unpaired``: files that do not (the sweep cannot start);
    ``randomised``: {perturbation id: whether it draws noise} for the planned row count."""

    specs: list[PerturbationSpec]
    pair_by: str
    unpaired: list[str]
    randomised: dict[str, bool]


@st.cache_data(ttl=10, show_spinner=False)
def _other_challenge_files(roots: tuple[str, ...]) -> list[str]:
    return offer.challenge_files(roots)


def chosen_specs(ds: Dataset, dataset_name: str, challenges: dict[str, list[str]], data_dir,
                 on_ambiguous: str) -> ChosenSpecs:
    """The perturbation form for ``ds`` (``challenges``: the data directory's challenge files by
    the data set they pair with)."""
    st.markdown("**Perturbations** (by family; parameters below)")
    families = registry.by_family()
    by_id = {p.id: p for ps in families.values() for p in ps}

    def option_label(pid: str) -> str:
        p = by_id[pid]
        kind = "random" if p.randomised else "once"
        langs = f" · {'/'.join(p.languages)} only" if p.languages and ds.lang not in p.languages else ""
        return f"{pid} · {p.field} · {kind}{langs}"

    chosen: list[str] = []
    cols = st.columns(3)
    for i, (family, members) in enumerate(families.items()):
        with cols[i % 3]:
            persist.keep(f"sw_fam_{family}", [p.id for p in members])
            chosen += st.multiselect(family, [p.id for p in members], key=f"sw_fam_{family}",
                                     format_func=option_label,
                                     help="\n".join(f"- **{p.id}**: {md_escape(p.description)}" for p in members))
    if chosen:   # a chip in a third of an 800 px window shows two letters of its name ("TU…": TUQ, TLQ or TTQ?)
        st.caption(f"Chosen ({len(chosen)}): " + ", ".join(f"`{pid}`" for pid in chosen))
    keep_valid("sw_files", challenges.get(dataset_name, []))
    files = st.multiselect("Challenge files made from this data set (natural or pre-generated "
                           "noise, compared with the clean questions like a perturbation)",
                           challenges.get(dataset_name, []), key="sw_files")
    if not challenges.get(dataset_name):
        st.caption(f"No challenge file in the data directory is paired with {md_escape(dataset_name)} "
                   "(NoiseQA's files pair with xquad/xquad.en).")
    other_roots = tuple(str(r) for r in config.read_roots(data_dir)[1:])   # the data directory's are above
    others = [f for f in _other_challenge_files(other_roots) if f not in files]
    keep_valid("sw_more_files", others)
    files += st.multiselect("Other challenge files (runs/, speech trials, folders the server adds)", others,
                            key="sw_more_files", format_func=lambda f: label(f[len("file:"):]),
                            help="SQuAD files whose question ids match this data set, e.g. written by "
                                 "python -m core.translate.natural_mt or python -m core.perturb.make_challenge, "
                                 "found in the folders the server allows (QAX_EXTRA_ROOTS adds one).")

    # One parameter box per perturbation: the values each parameter takes; the sweep runs every combination.
    specs = [PerturbationSpec.make(pid, combo) for pid in chosen
             for combo in combinations(sweep_form(by_id[pid], "sw_param"))]
    specs += [PerturbationSpec(f) for f in files]
    specs += typed_specs("sw")   # chains A+B, ranges and lists, as the command line takes them
    repairs = st.multiselect(
        "Also measure NoiseQA's question repair", list(SETTINGS), key="sw_repair",
        help="For each setting: repair_Q on the clean questions, and chained after every chosen question "
             "perturbation and challenge file (e.g. keyboard_Q+repair_Q), so Heatmaps can show the gain of each "
             "repair with a paired-bootstrap interval. The noise is drawn as without the repair.")
    specs += repair_specs(specs, repairs, {pid for pid, p in by_id.items() if p.field == "question"})
    pair_by, unpaired = challenge_pairing(files, dataset_name, str(data_dir) if data_dir else "", on_ambiguous, ds)
    return ChosenSpecs(list(dict.fromkeys(specs)), pair_by, unpaired,
                       {pid: p.randomised for pid, p in by_id.items()})


def coverage_note(specs: list[PerturbationSpec], planned: list) -> None:
    """One note naming the chosen perturbations that cannot run on every planned question (their
    language, or natural noise that exists only for some ids), with the count and the first
    reason: a column that would stay empty is a warning, a partial one a caption."""
    found = offer.coverage(specs, planned)
    if not found:
        return
    checked = found[0].checked
    of = f"the first {checked:,}" if checked < len(planned) else f"the {checked:,}"
    lines = [f"- **{md_escape(c.label)}** can run on {'none' if c.runs == 0 else f'{c.runs:,}'} of {of} planned "
             f"questions ({'the first it cannot: ' if c.checked - c.runs > 1 else ''}{md_escape(c.reason)})"
             for c in found]
    if any(c.runs == 0 for c in found):
        st.warning("\n".join(lines) + "\n\nA perturbation that runs on none of them gives its cells no score.")
    else:
        st.caption("\n".join(lines) + "\n\nThe cells of each compare the questions it runs on.")
