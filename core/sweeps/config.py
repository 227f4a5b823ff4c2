"""What a sweep is asked to do (:class:`SweepConfig`), what it did (:class:`SweepRun`), its error.

A sweep is
  * a data set, or a seeded sample of ``n`` of its examples (:func:`core.datasets.sample_examples`:
    the sample for n=200 contains the one for n=100, so growing a sample reuses the work done);
  * perturbation specs in the spec language of :mod:`core.perturb.spec`: a registered
    perturbation id with parameters (``DCRQ:n_chars=2``), a natural challenge set
    ``file:<path under the data dir>`` paired with the data set by id, else by position, only
    where both are the same item (:func:`core.datasets.pair_challenge`; the config's ``pair_by``
    forces a rule), or a chain ``A+B``; randomised perturbations run ``repeats`` times with
    independent seeds, deterministic ones and files once;
  * models, passed in as ``{name: engine}`` (anything with ``QAEngine.predict``'s signature), so
    the CLI loads them from the model registry and tests inject tiny ones.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.perturb.spec import FORMAT, PerturbationSpec, SpecError

__all__ = ["FORMAT", "DEFAULT_DB", "ProgressFn", "SweepError", "SweepConfig", "SweepRun"]

DEFAULT_DB = "runs/sweeps.sqlite"

ProgressFn = Callable[[int, int], None]


class SweepError(SpecError):
    """A sweep that cannot run as configured; the message names the problem. A spec that does not
    parse raises its base, :class:`core.perturb.spec.SpecError`: catch that for both."""


@dataclass
class SweepConfig:
    """What to sweep. ``dataset`` names the data (see :func:`core.datasets.load_dataset`) or labels an injected one."""

    dataset: str
    perturbations: Sequence[PerturbationSpec | str]
    models: Sequence[str]
    repeats: int = 1
    seed: int = 0
    sample: int | None = None
    name: str | None = None
    # Loader and pairing options (core.datasets); stored in the configuration only when they
    # differ from these defaults, so sweeps stored before they existed keep their hashes.
    pair_by: str = "auto"
    on_ambiguous: str = "error"
    lang: str | None = None


@dataclass
class SweepRun:
    """What :func:`run_sweep` did."""

    sweep_id: int
    name: str
    status: str                    # done | cancelled
    total_units: int               # result rows of the complete sweep (clean + perturbed, all models)
    done_units: int                # rows present at the end
    resumed_units: int             # rows that were already there at the start
    model_calls: int = 0           # engine.predict calls
    predictions_computed: int = 0  # (question, context) pairs answered by a model in this run
    predictions_cached: int = 0    # pairs found in the cache
    variants_computed: int = 0
    variants_cached: int = 0
    elapsed_s: float = 0.0

