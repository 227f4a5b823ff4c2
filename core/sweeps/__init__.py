"""Sweeps: evaluate models x perturbations over a data set, keep every prediction, resume for free.

Two subpackages over shared foundations. The foundations (this package's top level):

=================  ==========================================================================
``config``         SweepConfig (what to sweep), SweepRun (what a run did), SweepError
``keys``           cache keys: example hash, variant key, prediction key, engine fingerprint
``store``          the SQLite store: every query on it (writes and reads)
``schema``         its tables (the DDL)
``cli``            ``python -m core.sweeps`` (``python -m core.sweep``, the old name, still works)
=================  ==========================================================================

:mod:`core.sweeps.running` fills the store (plan, resolve, runner, run, ray, lifecycle, job,
launch, progress, backends); :mod:`core.sweeps.analysis` reads it (report, tables, aggregates,
calibration, drill, rows, repair, slices, curves, backend_axis, traps, stored). Analysis never imports running
and running imports analysis only for ``aggregates.store`` at the end of a sweep (tests/test_house.py).

The spec language (``keyboard_Q:p=0.5``, ``file:PATH``, chains ``A+B``) and the random generator
of each unit are :mod:`core.perturb.spec`'s; data sets by name are :mod:`core.datasets`'; the
stored identities (format tag, keys, salts) are :mod:`core.compat`'s.
"""
