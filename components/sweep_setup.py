"""Three parts of the Sweeps page's form: specs typed in the command line's spec language (chains
``A+B``, value ranges and lists), how the chosen challenge files pair with the data set, and
where the sweep runs (this process, a local Ray, or the server's Ray cluster).

No path or address is typed in the browser: the files are those the page offers from the
server's roots, a typed spec may not name a ``file:`` or a model folder, and a cluster address
only ever comes from the server's QAX_RAY_ADDRESS.
"""
from __future__ import annotations

import os

import streamlit as st

from components import persist
from components.choice import keep_valid
from components.sweep_db_picker import label
from components.text import md_escape
from core.budgets import MAX_RAY_WORKERS, Budget, BudgetError
from core.datasets import DatasetError
from core.perturb import registry
from core.perturb.spec import FILE_PREFIX, PerturbationSpec, SpecError, chain_steps, parse_specs
from core.sweeps.config import SweepError
from core.sweeps.running.job import RayOptions
from core.sweeps.running.offer import cli_only_params
from core.sweeps.running.ray_cluster import RAY_ADDRESS_ENV
from core.sweeps.running.resolve import pair_file, resolve_spec


def typed_specs(key: str) -> list[PerturbationSpec]:
    """The specs typed in the command line's spec language (``python -m core.sweeps --perturbations``):
    chains like ``TLQ+keyboard_Q:p=0.5``, ranges ``DCRQ:n_chars=1..3``, lists ``x|y``, ``family:NAME``.
    Each is resolved at once, so a typo is named here rather than when the sweep starts; nothing
    is returned while any of them is wrong. ``file:`` specs and model folders are refused: the
    browser never names a path (challenge files are chosen above)."""
    text = st.text_input(
        "More specs, typed (the command line's spec language)", key=f"{key}_spec_text",
        placeholder="TLQ+keyboard_Q:p=0.5, DCRQ:n_chars=1..3",
        help="Comma-separated, as python -m core.sweeps --perturbations takes them: ID:key=value, a range "
             "1..3 or a list a|b (one spec per value), family:NAME, and chains A+B (B applied to what A made; "
             "parameters after their step). Parameters not given take their defaults.")
    if not text.strip():
        return []
    try:
        specs = parse_specs(text)
    except SpecError as e:
        st.error(md_escape(f"Typed specs: {e}"))
        return []
    problems = [f"{s}: challenge files are chosen above, not typed" for s in specs
                if any(step.startswith(FILE_PREFIX) for step in chain_steps(s.id))]
    problems += [f"{named}: only the command line may set it" for named in cli_only_params(specs)]
    for s in specs:
        if not problems:
            try:
                resolve_spec(s, 1, registry.get, None)
            except (SweepError, SpecError) as e:
                problems.append(str(e))
    if problems:
        st.error("Typed specs:\n\n" + "\n".join(f"- {md_escape(p)}" for p in problems))
        return []
    return specs


WHERE = ("This process", "Ray on this machine", "Ray cluster (server setting)")


@st.cache_data(show_spinner="Pairing the challenge file with the data set…", max_entries=32)
def file_pairing(spec_id: str, dataset_name: str, data_dir: str, pair_by: str, on_ambiguous: str,
                 _original) -> tuple[str | None, str | None]:
    """(the pairing's one-line summary, None) or (None, why the file does not pair)."""
    try:
        return pair_file(spec_id, _original, data_dir or None, pair_by, on_ambiguous).summary(), None
    except (SweepError, DatasetError, OSError) as e:
        return None, str(e)


def challenge_pairing(files: list[str], dataset_name: str, data_dir: str, on_ambiguous: str,
                      ds) -> tuple[str, list[str]]:
    """The pairing rule chosen (``--pair-by``) and the files that do not pair with ``ds`` (the
    sweep cannot start with them); each file's pairing, or why it fails, is shown under it."""
    if not files:
        return "auto", []
    pair_by = st.radio("Pair challenge files", ("auto", "id", "position"), horizontal=True, key="sw_pair_by",
                       format_func={"auto": "auto (by id, else by position, only the same items)",
                                    "id": "by id", "position": "by position"}.get,
                       help="A challenge question is compared with its original only when both have the same "
                            "context (and a gold answer in common). Forcing id or position drops the pairs "
                            "that disagree and counts them; --pair-by on the command line.")
    unpaired = []
    for f in files:
        summary, error = file_pairing(f, dataset_name, data_dir, pair_by, on_ambiguous, ds)
        if error:
            unpaired.append(f)
            st.error(md_escape(f"{label(f[len('file:'):])} cannot be used: {error}"))
        else:
            st.caption(md_escape(f"{label(f[len('file:'):])}: {summary}"))
    return pair_by, unpaired


def count_input(where, label: str, budget: Budget, default: int, key: str, help: str) -> tuple[int, str | None]:
    """A number box for a count the server bounds (``budget``): any whole number from 1 may be
    typed, and one over the budget is answered under the box with the limit and the server
    setting that sets it (a ``max_value`` would only mark it red). Returns the value and that
    refusal (None when within the budget); the page keeps Start disabled while there is one."""
    value = int(where.number_input(label, min_value=1, value=default, step=1, key=key, help=help))
    try:
        budget.check(value, "the sweep", "asks for")
    except BudgetError as e:
        where.error(md_escape(str(e)))
        return value, str(e)
    return value, None


def run_on_picker(key: str) -> str | None:
    """"Run on" (``{key}_where``) and, for Ray, the worker count (``{key}_workers``); the worker
    count's refusal when it is over the server's budget (else None)."""
    ray_address = os.environ.get(RAY_ADDRESS_ENV, "").strip()
    where_options = list(WHERE if ray_address else WHERE[:2])
    keep_valid(f"{key}_where", where_options)
    c1, c2 = st.columns([3, 1])
    where = c1.radio("Run on", where_options, key=f"{key}_where", horizontal=True,
                     help="This process: the models answer here, one chunk after the other. Ray: perturbations "
                          "run as Ray tasks and each worker loads one copy of every model (core.sweeps.running.ray); "
                          "same rows, same caches, resumable either way.")
    if where != WHERE[0]:
        persist.keep(f"{key}_workers")   # kept only where it is drawn: see components/persist.py
        most = MAX_RAY_WORKERS.value()
        _, refused = count_input(c2, "Workers", MAX_RAY_WORKERS, min(2, most), f"{key}_workers",
                                 f"Each worker holds one copy of every selected model; perturbation tasks run at "
                                 f"most this many at once. At most {most} (the server's {MAX_RAY_WORKERS.env}).")
        if where == WHERE[2]:
            c1.caption(md_escape(f"The cluster at {ray_address} (the server's {RAY_ADDRESS_ENV}): every node "
                                 "needs the project, its models and the data directory."))
        else:
            c1.caption("A local Ray with this machine's CPUs, started with the first Ray sweep and kept for the next.")
        return refused
    if not ray_address:
        c1.caption(f"A Ray cluster is offered when the server sets {RAY_ADDRESS_ENV}.")
    return None


def ray_options(key: str) -> RayOptions | None:
    """The Ray backend chosen with :func:`run_on_picker` (None: this process), with the sidebar's
    engine settings for the actors' engines."""
    ss = st.session_state
    where = ss.get(f"{key}_where", WHERE[0])
    if where == WHERE[0]:
        return None
    from core.qa.engine import EngineSettings

    settings = EngineSettings(max_answer_tokens=int(ss.get("max_answer_tokens", 30)),
                              backend=ss.get("backend", "default"))
    address = os.environ.get(RAY_ADDRESS_ENV) if where == WHERE[2] else None
    workers = int(ss.get(f"{key}_workers", min(2, MAX_RAY_WORKERS.value())))
    return RayOptions(address=address or None, workers=workers, settings=settings)
