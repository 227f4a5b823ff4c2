"""Sweeps: evaluate models x perturbations over a data set, store every prediction, resume.

The engine is core.sweeps.running.run.run_sweep (caching, transactional chunks, resume); this page gathers the
configuration, runs the sweep on a background thread (core.sweeps.running.job.SweepJob) so the page stays
responsive, polls its progress with an auto-refreshing fragment, offers Cancel, and lists the
sweeps stored in the database with a Resume for the unfinished ones. Results are browsed on the
Heatmaps page.

Data sets are offered by the names core.datasets.load_dataset resolves (demo.<lang>, paths under the
data directory), not uploads: a stored sweep is resumed by reloading its data set by name.

Confinement: nothing here takes a path typed in the browser. The database comes from the picker of
components.sweep_db_picker (a new one by file name only, created when its first sweep starts), data sets
and challenge files from what exists under the server's roots (core.config), and data sets are
loaded with ``confined=True``, so a stored sweep naming a file elsewhere cannot be resumed here.
A sweep whose process died is listed as interrupted (core.sweeps.ownership.effective_status) and offered
for resume like a cancelled one.

Where a sweep runs: this process, a Ray started on this machine, or the Ray cluster named by the
server's QAX_RAY_ADDRESS (core.sweeps.running.ray; an address is never typed in the browser), with a
worker count; a Ray sweep shows each worker's node, state, calls and restarts while it runs.
"""
from __future__ import annotations

import streamlit as st

from components import loaders, persist
from components.choice import keep_valid
from components.frame import page_frame
from components.job_progress import start_sweep, sweep_panel
from components.pickers import DEMO_LANGS, language_mismatch_note, model_picker
from components.state import current_data_dir
from components.stored_sweeps import stored_sweeps
from components.sweep_db_picker import db_picker, label, stored_sweeps_or_stop
from components.sweep_perturbations import chosen_specs, coverage_note
from components.sweep_setup import count_input, ray_options, run_on_picker
from components.text import choose_hint, md_escape
from core import budgets, config
from core.datasets import DatasetError, has_gold, load_dataset, sample_examples
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.running import offer
from core.sweeps.running.job import SweepJob
from core.sweeps.running.progress import readable_name

page_frame()
st.title("Sweeps")
st.caption("Evaluate every selected model under many perturbations over a whole data set (or a seeded "
           "sample). Every prediction is stored; an interrupted or cancelled sweep resumes where it "
           "stopped, and work already done (same variants, same model) is never recomputed. "
           "Browse the results on the **Heatmaps** page.")

JOB = "sweep_job"
# Units (example x perturbation x repeat, each answered by every model) per committed chunk: the
# progress bar moves with every chunk, so a small one keeps it moving (128 left it stuck ~a minute).
CHUNK = 8


@st.cache_data(show_spinner="Reading dataset…", max_entries=8)
def dataset_by_name(name: str, data_dir: str, on_ambiguous: str = "error", lang: str | None = None):
    return load_dataset(name, data_dir or None, confined=True, on_ambiguous=on_ambiguous, lang=lang)


def start_job(config: SweepConfig, ds, stored: dict[str, str] | None = None) -> None:
    """Start ``config`` in the background (components.job_progress.start_sweep); ``stored``: a
    resumed sweep's {model: fingerprint} (each model answers with the backend it was made with)."""
    if db_path is None:   # the Start and Resume buttons are disabled then; checked again here
        st.error(md_escape(db.error or db.hint or "Choose a sweep database."))
        return
    try:   # a name is stored and shown to every visitor: refused before any model loads
        budgets.clean_name(config.name or "", "the sweep name")
    except budgets.BudgetError as e:
        st.error(md_escape(e))
        return
    d = current_data_dir()
    start_sweep(JOB, "sw", config, ds, db_path, data_dir=str(d) if d else None, ray=ray_options("sw"),
                chunk_size=int(st.session_state.get("sw_chunk", CHUNK)), stored=stored)


db = db_picker("sw", allow_new=True)
db_path = db.path
if db.error:
    st.error(md_escape(db.error))
elif db.hint:
    st.info(db.hint)
elif db.new:
    folder = config.shown_path(db_path.parent, "the server's sweep folder")
    st.caption(md_escape(f"{db_path.name} is created in {folder} when its first sweep starts."))
job: SweepJob | None = st.session_state.get(JOB)
busy = bool(job and job.running)

# ------------------------------------------------------------------------------------- new sweep

st.subheader("New sweep")
data_dir = current_data_dir()
options = list(DEMO_LANGS)
challenges: dict[str, list[str]] = {}  # data set name -> challenge files paired with it
if data_dir:
    evaluation_sets, challenges = offer.offered_datasets(loaders.discovered(str(data_dir)))
    options += evaluation_sets

persist.keep("sw_dataset", options)   # this page's inputs survive a visit to another page
persist.keep_all(["sw_sample", "sw_repeats", "sw_seed", "sw_name", "sw_chunk", "sw_where", "sw_spec_text"])
keep_valid("sw_dataset", options)
c1, c2 = st.columns([3, 1])
dataset_name = c1.selectbox("Dataset", options, key="sw_dataset",
                            help="The bundled demo sets, and every evaluation set found in the data directory.")
on_ambiguous = st.radio(
    "Answer offset -1 with several occurrences (DuReader-robust files)", ("error", "first", "nearest"),
    horizontal=True, key="sw_on_ambiguous",
    format_func={"error": "refuse", "first": "first occurrence", "nearest": "nearest the question's words"}.get,
    help="What the loader does with an answer whose position is unknown (answer_start -1) and which occurs "
         "several times in its context; the same as --on-ambiguous on the command line.")
try:
    ds = dataset_by_name(dataset_name, str(data_dir) if data_dir else "", on_ambiguous)
except (SweepError, DatasetError, OSError) as e:
    st.error(md_escape(f"Could not read {dataset_name}: {e}"))
    st.stop()
usable = [ex for ex in ds.examples if has_gold(ex)]
if st.session_state.get("sw_sample_for") != dataset_name:
    # a sample chosen for the last data set means nothing for this one: back to the default
    # (otherwise the demo set's 12 stayed put for XQuAD's 1,190, a sweep of 12 by mistake)
    st.session_state["sw_sample_for"] = dataset_name
    st.session_state["sw_sample"] = min(100, len(usable))
sample = int(c2.number_input("Sample size (0 = all)", 0, len(usable), key="sw_sample",   # value: set above
                             help="A seeded sample: the sample of 200 contains the sample of 100 (same seed), "
                                  "so growing a sweep reuses its work."))
st.caption(f"{len(ds):,} questions, {len(usable):,} with a gold answer (only those can be scored), "
           f"language `{ds.lang}`. Loaded: {md_escape(ds.load_line())}")

chosen = chosen_specs(ds, dataset_name, challenges, data_dir, on_ambiguous)
specs, pair_by, unpaired = chosen.specs, chosen.pair_by, chosen.unpaired

c1, c2, c3, c4 = st.columns(4)
repeats, too_many = count_input(c1, "Repeats (randomised)", budgets.MAX_REPEATS, 3, "sw_repeats",
                                "Runs of each randomised perturbation with independent seeds, averaged (the "
                                "German paper uses 25). Deterministic ones and files run once.")
seed = int(c2.number_input("Seed", 0, 2**31 - 1, 0, key="sw_seed"))
name = c3.text_input("Name (optional)", key="sw_name", help="Default: what the sweep runs and a short hash of its "
                     "configuration; the same configuration under the same name resumes.")
c4.number_input("Chunk size", 8, 4096, CHUNK, step=8, key="sw_chunk",
                help="Units per committed transaction: smaller = more frequent progress and faster cancel.")
models = model_picker("sw", lang=ds.lang)
language_mismatch_note(models, ds.lang)

too_many = run_on_picker("sw") or too_many

planned = sample_examples(usable, sample or None, seed) if usable else []
n_examples = len(planned)
total = offer.planned_rows(n_examples, len(models), specs, repeats, chosen.randomised)
if specs and models:
    st.caption(f"{len(specs)} perturbation spec(s) × {n_examples:,} examples × {len(models)} model(s): "
               f"{total:,} result rows (clean + perturbed).")
    coverage_note(specs, planned)
else:
    st.caption(choose_hint({"at least one perturbation": not specs, "at least one model": not models},
                           "to start a sweep"))
default_name = readable_name(dataset_name, [str(s) for s in specs], models,
                             n_examples, repeats, seed, sample or None)
if specs and models and not name.strip():
    st.caption(md_escape(f"It will be called “{default_name}”."))
if st.button("Start sweep", type="primary", key="sw_start",
             disabled=busy or db_path is None or not (specs and models and usable) or bool(unpaired) or bool(too_many)):
    start_job(SweepConfig(dataset_name, specs, models, repeats=repeats, seed=seed, sample=sample or None,
                          name=name.strip() or default_name, pair_by=pair_by, on_ambiguous=on_ambiguous), ds)
if unpaired:
    st.caption("Leave out the challenge files that do not pair (or choose another pairing) to start.")
if busy:
    st.caption("A sweep is running in this session; start another when it ends (or cancel it).")
sweep_panel(JOB, "sw")   # under Start, where the presenter's eyes are

# ----------------------------------------------------------------------------------- stored sweeps

st.subheader("Stored sweeps")
if db_path is None:
    st.info("Choose a sweep database above to see its sweeps.")
    st.stop()
sweeps = stored_sweeps_or_stop(db_path, md_escape(f"No sweep database at {label(str(db_path))} yet: the first sweep "
                                                  "creates it."))

if (to_resume := stored_sweeps(sweeps, job, resume_disabled=busy or db_path is None, db_path=db_path,
                               state_key=JOB)) is not None:
    resume = offer.resume_config(to_resume)
    if named := offer.cli_only_params(resume.perturbations):   # a model or file chosen with the CLI
        st.error(md_escape(f"This sweep names {', '.join(named)}, which only the command line may set: "
                           f"resume it with python -m core.sweeps."))
        st.stop()
    try:
        resume_ds = dataset_by_name(resume.dataset, str(data_dir) if data_dir else "", resume.on_ambiguous,
                                    resume.lang)
    except (SweepError, DatasetError, OSError) as e:
        st.error(md_escape(f"Cannot reload the data set {resume.dataset!r} of this sweep: {e}"))
        st.stop()
    start_job(resume, resume_ds, stored=offer.stored_fingerprints(to_resume))
