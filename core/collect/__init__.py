"""Collecting data from people: Beat the AI (:mod:`core.collect.beat`, its store
:mod:`core.collect.beat_store` and statistics :mod:`core.collect.beat_stats`) and natural speech
trials (:mod:`core.collect.trials`). No Streamlit here: the pages lay these out."""
