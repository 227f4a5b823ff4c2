"""An empty sweep database, on Heatmaps and Gallery: say so, and build the demo sweep in one click
(core.explore.demo_sweep: the bundled demo set, two measured-fast default models, a few
perturbations; about half a minute on a 2-core CPU)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from components import loaders
from components.text import md_escape
from core import config
from core.explore import demo_sweep


def offer_demo_sweep(key: str, db_path: Path | None, why: str) -> None:
    """``why`` (the page's reason there is nothing to show), then a button that runs the demo sweep
    into ``db_path`` and reruns the page on it."""
    installed, _, err = loaders.model_entries()
    models = demo_sweep.demo_models(installed) if installed and not err else []
    with st.container(border=True):
        st.markdown(md_escape(why))
        if db_path is None or not models:
            st.caption("Run a sweep on the Sweeps page (no installed model or sweep database for the demo).")
            return
        st.markdown(md_escape(
            f"Build the demo sweep: the bundled demo set (12 English questions) answered by {', '.join(models)} "
            f"under {demo_sweep.DEMO_SPECS.replace(',', ', ')} ({demo_sweep.DEMO_REPEATS} repeats), stored in "
            f"{config.shown_path(db_path)} as “{demo_sweep.DEMO_NAME}”. Your own sweeps (Sweeps page) are shown "
            "before it."))
        if st.button("Build the demo sweep", type="primary", key=f"{key}_demo_sweep"):
            bar = st.progress(0.0, text="Loading the models…")
            try:
                run = demo_sweep.build_demo_sweep(
                    db_path, loaders.engine_for_state, models,
                    progress=lambda done, total: bar.progress(min(1.0, done / max(total, 1)),
                                                              text=f"{done:,}/{total:,} result rows"))
            except Exception as e:  # a model that cannot load, a read-only folder: say why, keep the page
                st.error(md_escape(f"The demo sweep could not be built: {e}"))
                return
            st.session_state[f"{key}_demo_built"] = run.name
            st.rerun()
