"""The Heatmaps page's own components (pages/heatmaps.py is their only user):

==================  ==========================================================================
``heatmap``         the model x perturbation figure (bands, penalties, layouts) and its labels
``summary_tables``  each model's penalty total and clean scores, under the figure
``cell_drill``      a cell's examples, and one example answered by every model of the sweep
``paper_views``     the papers' views: penalty by n, NoiseQA's tables, DuReader-robust's plots
``sweep_figures``   the bucket and breakdown figures those views draw
``error_views``     repair, slices and calibration
``noise_curves``    F1 against measured noise, with break points
``backend_flips``   answers that differ between this sweep and another backend's
``route_view``      translate or answer in the language? (XQuAD's parallel questions)
==================  ==========================================================================

Each section takes the sweep's read handle (core.sweeps.analysis.stored.StoredSweep).
"""
