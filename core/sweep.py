"""``python -m core.sweep``: the old name of ``python -m core.sweeps``, and of its module.

Kept because users' scripts run ``python -m core.sweep`` and import ``from core.sweep import
SweepConfig, run_sweep`` (tests/test_sweep_fixture.py runs the old name against a store the old
code wrote). It re-exports the names the single-module ``core/sweep.py`` had before it became
the ``core/sweeps`` package; new code imports from the package's modules (docs/ARCHITECTURE.md).
"""
import sys

from core.datasets import load_dataset, resolve_data_file, sample_examples
from core.perturb.spec import PerturbationSpec, chain_steps, parse_specs, spec_label
from core.sweeps.cli import main
from core.sweeps.config import FORMAT, SweepConfig, SweepError, SweepRun
from core.sweeps.keys import engine_fingerprint, example_hash
from core.sweeps.running.resolve import pair_file, resolve_spec
from core.sweeps.running.run import run_sweep

__all__ = [
    "FORMAT", "SweepError", "PerturbationSpec", "SweepConfig", "SweepRun", "parse_specs", "chain_steps",
    "spec_label", "load_dataset", "resolve_data_file", "sample_examples", "example_hash", "engine_fingerprint",
    "resolve_spec", "run_sweep", "main", "pair_file",
]

if __name__ == "__main__":
    sys.exit(main())
