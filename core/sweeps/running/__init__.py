"""Running a sweep: from a configuration to predictions in the store.

=================  ==========================================================================
``resolve``        specs -> runnable perturbations (registry, ``file:`` challenge sets, chains)
``plan``           inputs resolved (data, sample, specs), then the sweep's identity and size
``runner``         pending work as chunks of steps (variants, batched predictions, one commit)
``run``            run_sweep (this process) and execute_plan (every backend)
``ray``            the same sweep on a Ray cluster
``lifecycle``      launch: a sweep's whole lifecycle (local or Ray, stored backend, aggregates)
``job``            SweepJob: launch on a background thread (the Sweeps page, the speech trial)
``launch``         what the Sweeps page offers, costs and resumes (challenge files, resume config)
``progress``       progress lines for a running sweep
``backends``       engines as a stored sweep ran them (its backend recognised by fingerprint)
=================  ==========================================================================

:func:`core.sweeps.running.lifecycle.launch` is the one entry point: the command line, the
Sweeps page and the speech trial all start sweeps through it.
"""
