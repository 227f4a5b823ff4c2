"""Reading a stored sweep: cells, tables and views, built on one read handle.

=================  ==========================================================================
``stored``         the read handle (StoredSweep, list_sweeps): the one way in from outside
``sweep_cells``    the stored sweep as cells, penalties and drill-downs; ``reading`` opens the store
``rows``           every scored answer as one table (Heatmaps' Rows tab)
``tables``         the Heatmaps page's tables built from the cells
``aggregates``     aggregates stored when a sweep finishes (Heatmaps opens them at once)
``calibration``    answer scores clean vs perturbed, abstention
``drill``          one example's rows across a sweep's models
``repair``         NoiseQA's question-repair table
``slices``         the table per slice (question word, answer type, lengths, overlap, CER)
``curves``         accuracy against measured noise (CER/WER/BLEU), one curve per model
``backend_axis``   where backends of one model disagree (answer flips)
``traps``          trap similarity (DuReader-robust's over-sensitivity views)
=================  ==========================================================================

Nothing here imports :mod:`core.sweeps.running`: a stored sweep is read the same way however it ran.
"""
