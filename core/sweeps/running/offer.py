"""What the Sweeps page offers: the data sets and challenge files, what a sweep will cost, and a
stored sweep's configuration rebuilt for Resume (the Sweeps page draws only the widgets).

* :func:`challenge_files` - ``file:`` specs for the SQuAD-style files under the server's roots;
* :func:`cli_only_params` - parameters naming a model, file or folder (``names_a_resource``),
  which only the command line may set (never typed in a browser, nor resumed from one);
* :func:`planned_rows` - the result rows of a planned sweep (clean + perturbed, every model);
* :func:`coverage` - how many of the planned questions each perturbation can run on, and why not
  on the others (its language; natural noise exists only for the ids its set holds; a question
  whose text leaves it nothing to change, as case in Chinese), so an empty column is known before
  the sweep, not after (a missing voice or translator is found by the run);
* :func:`resume_config` - a stored sweep's :class:`SweepConfig`, as it was started;
* :func:`resume_note` - what to tell the user about a stored sweep before resuming it (still
  running elsewhere, or interrupted: its process is gone);
* :func:`stored_rows` / :func:`unfinished` - the stored sweeps as the page's table.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import config
from core.perturb.base import names_a_resource
from core.perturb.spec import PerturbationSpec, chain_step_specs, chain_steps, spec_label
from core.sweeps.config import SweepConfig

MAX_CHALLENGE_FILES = 300


def challenge_files(roots: Sequence[str | Path], depth: int = 4, limit: int = MAX_CHALLENGE_FILES) -> list[str]:
    """``file:`` specs for the SQuAD-style JSON files under ``roots`` (runs/, the speech trials'
    challenge sets, QAX_EXTRA_ROOTS), at most ``depth`` folders deep, hidden folders skipped,
    nothing outside the roots (a symlink out of them is dropped), at most about ``limit``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for rel in ("a/keyboard.json", "a/original.json", ".hidden/x.json", "notes.txt"):
    ...         (Path(d) / rel).parent.mkdir(parents=True, exist_ok=True); _ = (Path(d) / rel).write_text("{}")
    ...     [f.rsplit("/", 2)[-2:] for f in challenge_files([d])]
    [['a', 'keyboard']]
    """
    found: list[str] = []
    roots = [str(r) for r in roots]
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for folder, dirs, names in os.walk(root):
            below = len(Path(folder).relative_to(root).parts)
            dirs[:] = [] if below >= depth else sorted(d for d in dirs if not d.startswith("."))
            for n in sorted(names):
                p = Path(folder) / n
                if n.endswith(".json") and n != "original.json" and config.within(p, roots):
                    found.append(f"file:{p.resolve().with_suffix('')}")
            if len(found) >= limit:
                return found
    return found


def cli_only_params(specs: Iterable[PerturbationSpec]) -> list[str]:
    """``"ID name='value'"`` for every parameter of ``specs`` that names a resource and is set.

    >>> cli_only_params([PerturbationSpec.make("ReplaceRQ", {"mlm_model": "/srv/bert", "n": 1})])
    ["ReplaceRQ mlm_model='/srv/bert'"]
    """
    return [f"{s.id} {k}={v!r}" for s in specs for k, v in s.params if names_a_resource(k) and v]


def planned_rows(n_examples: int, n_models: int, specs: Sequence[PerturbationSpec], repeats: int,
                 randomised: Mapping[str, bool]) -> int:
    """Result rows of a sweep: every example clean, and under each spec once, or ``repeats`` times
    when any step of the spec is randomised (``randomised``: perturbation id -> bool), per model.

    >>> specs = [PerturbationSpec("keyboard_Q"), PerturbationSpec("TLQ"), PerturbationSpec("TLQ+keyboard_Q")]
    >>> planned_rows(10, 2, specs, 3, {"keyboard_Q": True, "TLQ": False})   # 10 x 2 x (1 + 3 + 1 + 3)
    160
    """
    runs = sum(repeats if any(randomised.get(i, False) for i in chain_steps(s.id)) else 1 for s in specs)
    return n_examples * n_models * (1 + runs)


MAX_COVERAGE_CHECKS = 5_000   # questions checked per perturbation (a why_not is a lookup or less)


@dataclass(frozen=True)
class Coverage:
    """One perturbation of a planned sweep: it can run on ``runs`` of the ``checked`` questions;
    ``reason``: why not, for the first question it cannot run on."""

    label: str
    runs: int
    checked: int
    reason: str | None


def coverage(specs: Sequence[PerturbationSpec], examples: Sequence[Any], catalogue=None,
             limit: int = MAX_COVERAGE_CHECKS) -> list[Coverage]:
    """For each catalogue spec (a chain: its first step; files pair by themselves) that cannot run
    on every one of the first ``limit`` ``examples``: how many it can, and the first reason, as far
    as it is known before loading anything (the language, the questions natural noise holds, and
    :meth:`~core.perturb.base.Perturbation.nothing_to_change`).

    >>> from core.types import QAExample
    >>> de = QAExample("q1", "Wer kam?", "Anna kam.", lang="de")
    >>> en = QAExample("q2", "Who came?", "Anna came.", lang="en")
    >>> zh = QAExample("q3", "谁来了？", "安娜来了。", lang="zh")
    >>> [(c.label, c.runs, c.checked, c.reason) for c in coverage([PerturbationSpec("drop_qmark_Q"),
    ...     PerturbationSpec("misspell_Q"), PerturbationSpec("TUQ")], [de, en, zh])]   # doctest: +NORMALIZE_WHITESPACE
    [('misspell_Q', 1, 3, "misspell_Q supports languages en, not 'de'"),
     ('TUQ', 2, 3, 'TUQ changes letter case, and this question has no letter with case')]
    """
    if catalogue is None:
        from core.perturb import registry

        catalogue = registry.get
    found = []
    checked = list(examples[:limit])
    for spec in specs:
        if spec.is_file:
            continue
        first = chain_step_specs(spec, catalogue)[0] if spec.is_chain else spec
        try:
            p = catalogue(first.id)
            params = p.resolve_params(first.params_dict)
        except (KeyError, ValueError):   # the sweep itself says so, with the page's other checks
            continue
        reasons = p.before_running(checked, params)
        runs = sum(r is None for r in reasons)
        if runs < len(checked):
            found.append(Coverage(spec_label(spec.id, spec.params_dict) if not spec.is_chain else str(spec), runs,
                                  len(checked), next(r for r in reasons if r is not None)))
    return found


def resume_config(sweep: Mapping[str, Any]) -> SweepConfig:
    """The configuration a stored sweep (a row of ``sweep_cells.list_sweeps``) was started with, under
    its stored name: running it again continues where it stopped."""
    cfg = sweep["config"]
    return SweepConfig(cfg["dataset"], [PerturbationSpec.make(pid, json.loads(pj)) for pid, pj, *_ in cfg["specs"]],
                       [m for m, _fingerprint in cfg["models"]], repeats=int(cfg["repeats"]), seed=int(cfg["seed"]),
                       sample=cfg["sample"], name=sweep["name"], pair_by=cfg.get("pair_by", "auto"),
                       on_ambiguous=cfg.get("on_ambiguous", "error"), lang=cfg.get("lang"))


def stored_fingerprints(sweep: Mapping[str, Any]) -> dict[str, str]:
    """{model: fingerprint} a stored sweep was made with: resuming it, each model answers with the
    backend that gives that fingerprint (core.sweeps.running.backends.engines_as_stored).

    >>> stored_fingerprints({"config": {"models": [["a", "9320d06fa19f917707c6"]]}})
    {'a': '9320d06fa19f917707c6'}
    """
    return {m: fp for m, fp in sweep["config"]["models"]}


def resume_note(sweep: Mapping[str, Any], running_here: bool) -> tuple[str, str] | None:
    """("warning" | "info", message) about resuming ``sweep``, or None when there is nothing to say.
    ``running_here``: this session is running it (its own job).

    >>> resume_note({"status": "interrupted", "owner": "pid 7 on h", "done_units": 1200}, False)
    ... # doctest: +NORMALIZE_WHITESPACE
    ('info', 'This sweep was interrupted: the process that ran it (pid 7 on h) is gone. Resume continues from the
    1,200 rows stored.')
    >>> resume_note({"status": "running", "owner": None, "done_units": 0}, True) is None
    True
    >>> resume_note({"status": "running", "owner": "pid 7 on h", "done_units": 0}, False)
    ... # doctest: +NORMALIZE_WHITESPACE
    ('warning', 'This sweep is still running (pid 7 on h): in the CLI or another browser tab. It can be resumed
    here once that process stops (Ctrl-C in the CLI, or Cancel where it was started); what it stored is kept.')
    """
    owner = sweep["owner"] or "a process this server cannot check"
    if sweep["status"] == "running" and not running_here:
        return "warning", (f"This sweep is still running ({owner}): in the CLI or another browser tab. "
                           "It can be resumed here once that process stops (Ctrl-C in the CLI, or Cancel "
                           "where it was started); what it stored is kept.")
    if sweep["status"] == "interrupted":
        return "info", (f"This sweep was interrupted: the process that ran it ({owner}) is gone. Resume "
                        f"continues from the {sweep['done_units']:,} rows stored.")
    return None


def stored_rows(sweeps: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stored sweeps as a table: name, data set (a server path by its file name: a CLI sweep may
    name one), status, progress, models, configuration, owner."""
    return [{
        "name": s["name"], "dataset": config.shown_dataset(s["dataset"]), "status": s["status"],
        "examples": s["n_examples"],
        "rows done": s["done_units"], "rows total": s["total_units"],
        "done %": round(100.0 * s["done_units"] / s["total_units"], 1) if s["total_units"] else 0.0,
        "models": ", ".join(s["models"]), "perturbations": len(s["perturbations"]),
        "repeats": s["config"].get("repeats"), "seed": s["config"].get("seed"),
        "created": s["created_at"], "updated": s["updated_at"], "owner": s["owner"], "note": s["note"] or "",
    } for s in sweeps]


def unfinished(sweeps: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The stored sweeps that can be resumed: not done, or done with rows missing."""
    return [s for s in sweeps if s["status"] != "done" or s["done_units"] < s["total_units"]]


def offered_datasets(infos: Iterable[Any]) -> tuple[list[str], dict[str, list[str]]]:
    """From the data directory's discovered files (core.datasets' infos: name, path, role,
    original): the evaluation sets by name, and for each the ``file:`` challenge sets made from it.

    >>> from types import SimpleNamespace as I
    >>> offered_datasets([I(name="xquad/xquad.en", path="/d/xquad/xquad.en.json", role="eval", original=None),
    ...                   I(name="noiseqa/kb", path="/d/noiseqa/kb.json", role="challenge",
    ...                     original="/d/xquad/xquad.en.json")])
    (['xquad/xquad.en'], {'xquad/xquad.en': ['file:noiseqa/kb']})
    """
    infos = list(infos)
    by_path = {str(i.path): i.name for i in infos}
    challenges: dict[str, list[str]] = {}
    for info in infos:
        if info.role == "challenge" and info.original is not None and str(info.original) in by_path:
            challenges.setdefault(by_path[str(info.original)], []).append(f"file:{info.name}")
    return [i.name for i in infos if i.role == "eval"], challenges
