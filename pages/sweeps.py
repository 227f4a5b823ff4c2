"""Sweeps: evaluate models x perturbations over a data set, store every prediction, resume.

The engine is core.sweeps.run.run_sweep (caching, transactional chunks, resume); this page gathers the
configuration, runs the sweep on a background thread (core.sweeps.job.SweepJob) so the page stays
responsive, polls its progress with an auto-refreshing fragment, offers Cancel, and lists the
sweeps stored in the database with a Resume for the unfinished ones. Results are browsed on the
Heatmaps page.

Data sets are offered by the names core.datasets.load_dataset resolves (demo.<lang>, paths under the
data directory), not uploads: a stored sweep is resumed by reloading its data set by name.

Confinement: nothing here takes a path typed in the browser. The database comes from the picker of
components.sweep_db (a new one by file name only, created when its first sweep starts), data sets
and challenge files from what exists under the server's roots (core.config), and data sets are
loaded with ``confined=True``, so a stored sweep naming a file elsewhere cannot be resumed here.
A sweep whose process died is listed as interrupted (core.sweeps.store.effective_status) and offered
for resume like a cancelled one.

Where a sweep runs: this process, a Ray started on this machine, or the Ray cluster named by the
server's QAX_RAY_ADDRESS (core.sweeps.ray; an address is never typed in the browser), with a
worker count; a Ray sweep shows each worker's node, state, calls and restarts while it runs.
"""
from __future__ import annotations

import itertools
import json
import os

import pandas as pd
import streamlit as st

from components import loaders, persist
from components.choice import keep_valid
from components.frame import page_frame
from components.job_progress import running_job
from components.pickers import DEMO_LANGS, language_mismatch_note, model_picker
from components.state import current_data_dir
from components.sweep_db import db_picker, label, md_escape, stored_sweeps_or_stop
from components.text import choose_hint
from core import config
from core.datasets import DatasetError, has_gold, load_dataset, sample_examples
from core.perturb import registry
from core.perturb.spec import PerturbationSpec, chain_steps
from core.sweeps.backends import engines_as_stored
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.job import RayOptions, SweepJob
from core.sweeps.progress import Eta, readable_name
from core.sweeps.ray import RAY_ADDRESS_ENV
from core.sweeps.repair import SETTINGS, repair_specs
from core.sweeps.resolve import pair_file

page_frame()
st.title("Sweeps")
st.caption("Evaluate every selected model under many perturbations over a whole data set (or a seeded "
           "sample). Every prediction is stored; an interrupted or cancelled sweep resumes where it "
           "stopped, and work already done (same variants, same model) is never recomputed. "
           "Browse the results on the **Heatmaps** page.")

JOB = "sweep_job"
WHERE = ("This process", "Ray on this machine", "Ray cluster (server setting)")
# Units (example x perturbation x repeat, each answered by every model) per committed chunk: the
# progress bar moves with every chunk, so a small one keeps it moving (128 left it stuck ~a minute).
CHUNK = 8


@st.cache_data(show_spinner="Reading dataset…", max_entries=8)
def dataset_by_name(name: str, data_dir: str, on_ambiguous: str = "error", lang: str | None = None):
    return load_dataset(name, data_dir or None, confined=True, on_ambiguous=on_ambiguous, lang=lang)


@st.cache_data(show_spinner="Pairing the challenge file with the data set…", max_entries=32)
def file_pairing(spec_id: str, dataset_name: str, data_dir: str, pair_by: str, on_ambiguous: str,
                 _original) -> tuple[str | None, str | None]:
    """(the pairing's one-line summary, None) or (None, why the file does not pair)."""
    try:
        return pair_file(spec_id, _original, data_dir or None, pair_by, on_ambiguous).summary(), None
    except (SweepError, DatasetError, OSError) as e:
        return None, str(e)


@st.cache_data(ttl=10, show_spinner=False)
def other_challenge_files(roots: tuple[str, ...]) -> list[str]:
    """``file:`` specs for the SQuAD-style JSON files under ``roots`` (runs/, the speech trials'
    challenge sets, QAX_EXTRA_ROOTS), a few levels deep, hidden folders and symlinks skipped."""
    import os
    from pathlib import Path

    found: list[str] = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for folder, dirs, names in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            dirs[:] = [] if depth >= 4 else sorted(d for d in dirs if not d.startswith("."))
            for n in sorted(names):
                p = Path(folder) / n
                if n.endswith(".json") and n != "original.json" and config.within(p, roots):
                    found.append(f"file:{p.resolve().with_suffix('')}")
            if len(found) >= 300:
                return found
    return found


def scorable(ds) -> list:
    return [ex for ex in ds.examples if has_gold(ex)]


def load_engines(names: list[str]) -> dict | None:
    engines, errors = {}, []
    for name in names:
        try:
            engines[name] = loaders.engine_for_state(name)
        except Exception as e:  # a model that fails to load is reported, not raised
            errors.append(f"{name}: {e}")
    for e in errors:
        st.error(md_escape(e))
    return None if errors else engines


def ray_options() -> RayOptions | None:
    """The Ray backend chosen below (None: this process), with the sidebar's engine settings."""
    where = st.session_state.get("sw_where", WHERE[0])
    if where == WHERE[0]:
        return None
    from core.qa.engine import EngineSettings

    ss = st.session_state
    settings = EngineSettings(max_answer_tokens=int(ss.get("max_answer_tokens", 30)), backend=ss.get("backend", "default"))
    address = os.environ.get(RAY_ADDRESS_ENV) if where == WHERE[2] else None
    return RayOptions(address=address or None, workers=int(ss.get("sw_workers", 2)), settings=settings)


def start_job(config: SweepConfig, ds, stored: dict[str, str] | None = None) -> None:
    """``stored``: a resumed sweep's {model: fingerprint}; each model answers with the backend it
    was made with, whatever the sidebar says (core.sweeps.backends)."""
    ray = ray_options()
    engines = load_engines(list(config.models)) if ray is None else {}   # on Ray the actors load them
    if engines is None:
        return
    if stored and engines:
        engines, switched = engines_as_stored(engines, stored, loaders.engine_like_state)
        for model, backend in switched.items():
            st.toast(md_escape(f"{model} answers with {backend}, the backend this sweep was made with."))
    d = current_data_dir()
    if db_path is None:   # the Start and Resume buttons are disabled then; checked again here
        st.error(md_escape(db.error or db.hint or "Choose a sweep database."))
        return
    st.session_state[JOB] = SweepJob(config, engines, db_path, dataset=ds, data_dir=str(d) if d else None,
                                     chunk_size=int(st.session_state.get("sw_chunk", CHUNK)), ray=ray).start()
    st.session_state["sw_eta"] = Eta()
    for k in ("sw_job_reported", "sw_banner_shown"):
        st.session_state.pop(k, None)
    st.rerun()


db = db_picker("sw", allow_new=True)
db_path = db.path
if db.error:
    st.error(md_escape(db.error))
elif db.hint:
    st.info(db.hint)
elif db.new:
    st.caption(md_escape(f"{db_path.name} is created in {db_path.parent} when its first sweep starts."))
job: SweepJob | None = st.session_state.get(JOB)
busy = bool(job and job.running)

# ----------------------------------------------------------------------------------- running sweep


@st.fragment(run_every=1.0 if busy else None)
def job_panel() -> None:
    """Under Start: the running sweep's progress (its name, rows, time left), then its result once."""
    job = st.session_state.get(JOB)
    if job is None:
        return
    if job.running:
        running_job(job, "sw", below=worker_table)
        return
    if st.session_state.get("sw_banner_shown"):   # shown once: it goes with the next interaction
        st.session_state.pop(JOB, None)
        return
    if not st.session_state.get("sw_job_reported"):
        st.session_state["sw_job_reported"] = True
        st.rerun()  # the whole page: the stored-sweeps list below changed
    st.session_state["sw_banner_shown"] = True
    if job.error:
        st.error(f"The sweep stopped with an error: {md_escape(job.error)}")
        return
    worker_table(job)
    r = job.result
    verb = "finished" if r.status == "done" else "was cancelled (resume it below)"
    st.success(md_escape(
        f"Sweep '{r.name}' {verb}: {r.done_units:,}/{r.total_units:,} result rows "
        f"({r.resumed_units:,} were already stored), {r.predictions_computed:,} predictions computed and "
        f"{r.predictions_cached:,} taken from the cache in {r.model_calls} model calls, "
        f"{r.variants_computed:,} variants computed, {r.elapsed_s:.1f} s.")
        + " Open the **Heatmaps** page to see it.")


def worker_table(job: SweepJob) -> None:
    """A Ray sweep's workers: where each runs, what it is doing, its share of the predictions."""
    if not job.workers:
        return
    total = sum(w.predictions for w in job.workers) or 1
    st.dataframe(pd.DataFrame([{
        "worker": w.index, "node": w.node or "starting…", "state": w.state, "in flight": w.in_flight,
        "model calls": w.calls, "predictions": w.predictions, "share %": round(100.0 * w.predictions / total, 1),
        "actor restarts": w.restarts} for w in job.workers]), hide_index=True, width="stretch", key="sw_workers_table")


# ------------------------------------------------------------------------------------- new sweep

st.subheader("New sweep")
data_dir = current_data_dir()
options = list(DEMO_LANGS)
challenges: dict[str, list[str]] = {}  # data set name -> challenge files paired with it
if data_dir:
    infos = loaders.discovered(str(data_dir))
    by_path = {str(i.path): i.name for i in infos}
    for info in infos:
        if info.role == "eval":
            options.append(info.name)
    for info in infos:
        if info.role == "challenge" and info.original is not None and str(info.original) in by_path:
            challenges.setdefault(by_path[str(info.original)], []).append(f"file:{info.name}")

persist.keep("sw_dataset", options)   # this page's inputs survive a visit to another page
persist.keep_all(["sw_sample", "sw_repeats", "sw_seed", "sw_name", "sw_chunk", "sw_where", "sw_workers"])
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
usable = scorable(ds)
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
keep_valid("sw_files", challenges.get(dataset_name, []))
files = st.multiselect("Challenge files made from this data set (natural or pre-generated "
                       "noise, compared with the clean questions like a perturbation)",
                       challenges.get(dataset_name, []), key="sw_files")
if not challenges.get(dataset_name):
    st.caption(f"No challenge file in the data directory is paired with {md_escape(dataset_name)} "
               "(NoiseQA's files pair with xquad/xquad.en).")
other_roots = tuple(str(r) for r in config.read_roots(data_dir)[1:])   # the data directory's are above
others = [f for f in other_challenge_files(other_roots) if f not in files]
keep_valid("sw_more_files", others)
files += st.multiselect("Other challenge files (runs/, speech trials, folders the server adds)", others,
                        key="sw_more_files", format_func=lambda f: label(f[len("file:"):]),
                        help="SQuAD files whose question ids match this data set, e.g. written by "
                             "python -m core.translate.natural_mt or python -m core.perturb.make_challenge, found "
                             "in the folders the server allows (QAX_EXTRA_ROOTS adds one).")


def names_a_resource(name: str) -> bool:
    """A parameter naming a model, file or folder (ReplaceRQ's ``mlm_model``): the server's to set
    (QAX_MLM_MODEL, the CLI), never typed in the browser, which would load any folder or hub id.
    Names ending in _model, _path, _file or _dir (tests/test_reliability_confinement.py)."""
    return name.endswith(("_model", "_path", "_file", "_dir"))


def values_widget(pid: str, name: str, default, bounds) -> list:
    """The values a parameter takes in the sweep: a range for integers, a choice of several for
    enumerations, one value otherwise. The sweep runs every combination."""
    key = f"sw_param_{pid}_{name}"
    label = f"{pid} · {name}"
    if isinstance(default, str) and not bounds and names_a_resource(name):
        st.caption(md_escape(f"{label}: {default or 'the server’s setting'} (set on the server, not here)"))
        return [default]
    if isinstance(default, bool):
        return [st.checkbox(label, value=default, key=key)]
    if isinstance(default, int):
        if bounds:
            lo, hi = st.slider(f"{label} (range: one spec per value)", int(bounds[0]), int(bounds[1]),
                               (default, default), key=key)
            return list(range(lo, hi + 1))
        return [int(st.number_input(label, value=default, step=1, key=key))]
    if isinstance(default, float):
        if bounds:
            step = 0.01 if bounds[1] - bounds[0] <= 2 else 0.1
            return [float(st.slider(label, float(bounds[0]), float(bounds[1]), default, step=step, key=key))]
        return [float(st.number_input(label, value=default, key=key))]
    if isinstance(default, str) and bounds:
        picked = st.multiselect(f"{label} (one spec per value)", list(bounds), default=[default], key=key)
        return picked or [default]
    return [st.text_input(label, value=str(default), key=key)]


specs: list[PerturbationSpec] = []
for pid in chosen:
    p = by_id[pid]
    grid: list[list[tuple[str, object]]] = []
    if p.default_params:
        with st.container(border=True):
            st.caption(f"**{pid}** — {md_escape(p.description)}")
            pcols = st.columns(min(3, len(p.default_params)))
            for j, (name, default) in enumerate(p.default_params.items()):
                with pcols[j % len(pcols)]:
                    grid.append([(name, v) for v in values_widget(pid, name, default, p.param_ranges.get(name))])
    for combo in itertools.product(*grid):
        specs.append(PerturbationSpec.make(pid, dict(combo)))
specs += [PerturbationSpec(f) for f in files]
repairs = st.multiselect(
    "Also measure NoiseQA's question repair", list(SETTINGS), key="sw_repair",
    help="For each setting: repair_Q on the clean questions, and chained after every chosen question "
         "perturbation and challenge file (e.g. keyboard_Q+repair_Q), so Heatmaps can show the gain of each "
         "repair with a paired-bootstrap interval. The noise is drawn as without the repair.")
specs += repair_specs(specs, repairs, {pid for pid, p in by_id.items() if p.field == "question"})
specs = list(dict.fromkeys(specs))
unpaired = []  # challenge files that do not pair: the sweep cannot start with them
if files:
    pair_by = st.radio("Pair challenge files", ("auto", "id", "position"), horizontal=True, key="sw_pair_by",
                       format_func={"auto": "auto (by id, else by position, only the same items)",
                                    "id": "by id", "position": "by position"}.get,
                       help="A challenge question is compared with its original only when both have the same "
                            "context (and a gold answer in common). Forcing id or position drops the pairs "
                            "that disagree and counts them; --pair-by on the command line.")
    for f in files:
        summary, error = file_pairing(f, dataset_name, str(data_dir) if data_dir else "", pair_by, on_ambiguous, ds)
        if error:
            unpaired.append(f)
            st.error(md_escape(f"{label(f[len('file:'):])} cannot be used: {error}"))
        else:
            st.caption(md_escape(f"{label(f[len('file:'):])}: {summary}"))
else:
    pair_by = "auto"

c1, c2, c3, c4 = st.columns(4)
repeats = int(c1.number_input("Repeats (randomised)", 1, 100, 3, key="sw_repeats",
                              help="Runs of each randomised perturbation with independent seeds, averaged "
                                   "(the German paper uses 25). Deterministic ones and files run once."))
seed = int(c2.number_input("Seed", 0, 2**31 - 1, 0, key="sw_seed"))
name = c3.text_input("Name (optional)", key="sw_name", help="Default: what the sweep runs and a short hash of its "
                     "configuration; the same configuration under the same name resumes.")
c4.number_input("Chunk size", 8, 4096, CHUNK, step=8, key="sw_chunk",
                help="Units per committed transaction: smaller = more frequent progress and faster cancel.")
models = model_picker("sw", lang=ds.lang)
language_mismatch_note(models, ds.lang)

ray_address = os.environ.get(RAY_ADDRESS_ENV, "").strip()
where_options = list(WHERE if ray_address else WHERE[:2])
keep_valid("sw_where", where_options)
c1, c2 = st.columns([3, 1])
where = c1.radio("Run on", where_options, key="sw_where", horizontal=True,
                 help="This process: the models answer here, one chunk after the other. Ray: perturbations run "
                      "as Ray tasks and each worker loads one copy of every model (core.sweeps.ray); same rows, "
                      "same caches, resumable either way.")
if where != WHERE[0]:
    c2.number_input("Workers", 1, 256, min(2, os.cpu_count() or 1), key="sw_workers",
                    help="Each worker holds one copy of every selected model; perturbation tasks run at most "
                         "this many at once. More workers than CPUs only adds memory.")
    if where == WHERE[2]:
        c1.caption(md_escape(f"The cluster at {ray_address} (the server's {RAY_ADDRESS_ENV}): every node needs "
                             "the project, its models and the data directory."))
    else:
        c1.caption("A local Ray with this machine's CPUs, started with the first Ray sweep and kept for the next.")
elif not ray_address:
    c1.caption(f"A Ray cluster is offered when the server sets {RAY_ADDRESS_ENV}.")

n_examples = len(sample_examples(usable, sample or None, seed)) if usable else 0
runs = sum(repeats if any(by_id[i].randomised for i in chain_steps(s.id) if i in by_id) else 1 for s in specs)
total = n_examples * len(models) * (1 + runs)
if specs and models:
    st.caption(f"{len(specs)} perturbation spec(s) × {n_examples} examples × {len(models)} model(s): "
               f"{total:,} result rows (clean + perturbed).")
else:
    st.caption(choose_hint({"at least one perturbation": not specs, "at least one model": not models},
                           "to start a sweep"))
default_name = readable_name(dataset_name, [str(s) for s in specs], models,
                             n_examples, repeats, seed, sample or None)
if specs and models and not name.strip():
    st.caption(md_escape(f"It will be called “{default_name}”."))
if st.button("Start sweep", type="primary", key="sw_start",
             disabled=busy or db_path is None or not (specs and models and usable) or bool(unpaired)):
    start_job(SweepConfig(dataset_name, specs, models, repeats=repeats, seed=seed, sample=sample or None,
                          name=name.strip() or default_name, pair_by=pair_by, on_ambiguous=on_ambiguous), ds)
if unpaired:
    st.caption("Leave out the challenge files that do not pair (or choose another pairing) to start.")
if busy:
    st.caption("A sweep is running in this session; start another when it ends (or cancel it).")
job_panel()   # under Start, where the presenter's eyes are

# ----------------------------------------------------------------------------------- stored sweeps

st.subheader("Stored sweeps")
if db_path is None:
    st.info("Choose a sweep database above to see its sweeps.")
    st.stop()
sweeps = stored_sweeps_or_stop(db_path, md_escape(f"No sweep database at {db_path} yet: the first sweep "
                                                  "creates it."))

table = pd.DataFrame([{
    "name": s["name"], "dataset": s["dataset"], "status": s["status"], "examples": s["n_examples"],
    "rows done": s["done_units"], "rows total": s["total_units"],
    "done %": round(100.0 * s["done_units"] / s["total_units"], 1) if s["total_units"] else 0.0,
    "models": ", ".join(s["models"]), "perturbations": len(s["perturbations"]),
    "repeats": s["config"].get("repeats"), "seed": s["config"].get("seed"),
    "created": s["created_at"], "updated": s["updated_at"], "owner": s["owner"], "note": s["note"] or "",
} for s in sweeps])
st.dataframe(table, hide_index=True, width="stretch", key="sw_list")

unfinished = [s for s in sweeps if s["status"] != "done" or s["done_units"] < s["total_units"]]
if not unfinished:
    st.caption("Every stored sweep is complete.")
    st.stop()
by_name = {s["name"]: s for s in unfinished}
keep_valid("sw_resume_pick", list(by_name))
c1, c2 = st.columns([3, 1])
pick = c1.selectbox("Resume an unfinished sweep", list(by_name), key="sw_resume_pick")
chosen_sweep = by_name[pick]
c1.caption(md_escape(f"{chosen_sweep['status']} · {chosen_sweep['done_units']:,}/"
                     f"{chosen_sweep['total_units']:,} rows · updated {chosen_sweep['updated_at']}"))
own = job is not None and job.running and job.name == pick   # this session's sweep, named or not
owner = chosen_sweep["owner"] or "a process this server cannot check"
if chosen_sweep["status"] == "running" and not own:
    st.warning(md_escape(f"This sweep is still running ({owner}): in the CLI or another browser tab. "
                         "Resuming it here as well wastes work but loses nothing."))
elif chosen_sweep["status"] == "interrupted":
    st.info(md_escape(f"This sweep was interrupted: the process that ran it ({owner}) is gone. Resume "
                      f"continues from the {chosen_sweep['done_units']:,} rows stored."))
if c2.button("Resume", key="sw_resume", disabled=busy or db_path is None):
    cfg = chosen_sweep["config"]
    resume_specs = [PerturbationSpec.make(pid, json.loads(pj)) for pid, pj, *_ in cfg["specs"]]
    named = [f"{s.id} {k}={v!r}" for s in resume_specs for k, v in s.params if names_a_resource(k) and v]
    if named:   # a model or file chosen with the CLI: loading it is the administrator's call
        st.error(md_escape(f"This sweep names {', '.join(named)}, which only the command line may set: "
                           f"resume it with python -m core.sweeps."))
        st.stop()
    try:
        resume_ds = dataset_by_name(cfg["dataset"], str(data_dir) if data_dir else "",
                                    cfg.get("on_ambiguous", "error"), cfg.get("lang"))
    except (SweepError, DatasetError, OSError) as e:
        st.error(md_escape(f"Cannot reload the data set {cfg['dataset']!r} of this sweep: {e}"))
        st.stop()
    start_job(SweepConfig(cfg["dataset"], resume_specs, [m for m, _fp in cfg["models"]],
                          repeats=int(cfg["repeats"]), seed=int(cfg["seed"]), sample=cfg["sample"],
                          name=pick, pair_by=cfg.get("pair_by", "auto"),
                          on_ambiguous=cfg.get("on_ambiguous", "error"), lang=cfg.get("lang")), resume_ds,
              stored=dict(cfg["models"]))
