"""The demo sweep: a small sweep of the bundled demo set (assets/demo, demo.en's 12 questions), so
that Heatmaps and Gallery show something real on a fresh clone (issue 43).

It is an ordinary sweep in the chosen database, run with the public sweep API
(core.sweeps.running.run.run_sweep), named :data:`DEMO_NAME` so the pages can label it as a demo and put the
user's own sweeps before it. Its models are the English default's models whose card measured their
CPU time (core.qa.registry.models_for_language; a model measured on a GPU only may be slow here):
with the shipped models, mpnet-squad-v2 and minilm-squad-v2, a strong and a small model. Its
perturbations touch every view that applies to a question sweep: interface noise (keyboard,
misspelling), the German paper's n-parameterised character deletion, a paraphrase (DuReader's DPR)
and a case change; two repeats each.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.qa import registry

DEMO_NAME = "demo · demo.en (bundled)"
DEMO_SPECS = "keyboard_Q,misspell_Q,DCRQ:n_chars=1|2,paraphrase_rules_Q,TLQ"
DEMO_REPEATS = 2
DEMO_MODELS_MAX = 2


def is_demo(sweep: dict) -> bool:
    """A stored sweep (core.sweeps.analysis.report.list_sweeps) that is the demo sweep."""
    return sweep.get("name") == DEMO_NAME


def user_first(sweep_ids: list, by_id: dict) -> list:
    """``sweep_ids`` (newest first) with the demo sweep moved after the user's own sweeps.

    >>> user_first([3, 2, 1], {3: {"name": "mine"}, 2: {"name": DEMO_NAME}, 1: {"name": "older"}})
    [3, 1, 2]
    """
    return [i for i in sweep_ids if not is_demo(by_id[i])] + [i for i in sweep_ids if is_demo(by_id[i])]


def demo_models(installed: list[registry.ModelEntry]) -> list[str]:
    """The demo sweep's models: the English default's with a measured CPU time, at most two (all
    of the default when none is measured: tests' tiny models have no card)."""
    best = registry.models_for_language("en", installed)
    by_name = {m.name: m for m in installed}
    measured = [n for n in best if registry.cpu_ms_per_question(by_name[n], "en") is not None]
    return (measured or best)[:DEMO_MODELS_MAX]


def build_demo_sweep(db: str | Path, engine_for: Callable[[str], object], models: list[str],
                     progress: Callable[[int, int], None] | None = None):
    """Run the demo sweep into ``db`` with ``engine_for(name)`` engines; returns the SweepRun.
    Running it again resumes it (or finds it done): the same configuration, the same name."""
    from core import datasets
    from core.perturb.spec import parse_specs
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.lifecycle import launch

    demo = datasets.demo_dataset("en")
    config = SweepConfig("demo.en", parse_specs(DEMO_SPECS), list(models), repeats=DEMO_REPEATS, seed=0,
                         name=DEMO_NAME)
    return launch(config, db, engines={m: engine_for(m) for m in models}, dataset=demo, progress=progress)
