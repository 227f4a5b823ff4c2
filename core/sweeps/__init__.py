"""Sweeps: evaluate models x perturbations over a data set, keep every prediction, resume for free.

One concept per module:

=================  ==========================================================================
``config``         SweepConfig (what to sweep), SweepRun (what a run did), SweepError
``keys``           cache keys: example hash, variant key, prediction key, engine fingerprint
``resolve``        specs -> runnable perturbations (registry, ``file:`` challenge sets, chains)
``plan``           inputs resolved (data, sample, specs), then the sweep's identity and size
``runner``         pending work as chunks of steps (variants, batched predictions, one commit)
``run``            run_sweep (this process) and execute_plan (every backend)
``ray``            the same sweep on a Ray cluster
``lifecycle``      launch: a sweep's whole lifecycle (local or Ray, stored backend, aggregates)
``job``            SweepJob: launch on a background thread (the Sweeps page, the speech trial)
``progress``       progress lines for a running sweep
``store``          the SQLite store: every query on it (writes and reads)
``schema``         its tables (the DDL)
``report``         the stored sweep as cells, tables and drill-downs; ``reading``, its read handle
``tables``         the Heatmaps page's tables built from the cells
``aggregates``     aggregates stored when a sweep finishes (Heatmaps opens them at once)
``calibration``    answer scores clean vs perturbed, abstention
``drill``          one example's rows across a sweep's models
``rows``           every scored answer as one table: filter, sort, page (Heatmaps' Rows tab)
``repair``         NoiseQA's question-repair table
``slices``         the table per slice (question word, answer type, lengths, overlap, CER)
``traps``          trap similarity (DuReader-robust's over-sensitivity views)
``cli``            ``python -m core.sweeps`` (``python -m core.sweep``, the old name, still works)
=================  ==========================================================================

The spec language (``keyboard_Q:p=0.5``, ``file:PATH``, chains ``A+B``) and the random generator
of each unit are :mod:`core.perturb.spec`'s; data sets by name are :mod:`core.datasets`'; the
stored identities (format tag, keys, salts) are :mod:`core.compat`'s.
"""
