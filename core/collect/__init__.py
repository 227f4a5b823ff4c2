"""Collecting data from people: Beat the AI (:mod:`core.collect.beat`, its store
:mod:`core.collect.beat_store` and statistics :mod:`core.collect.beat_stats`), who is who among
its players (:mod:`core.collect.identity`: display names, look-alike-proof name keys, browser
tokens) and natural speech trials (:mod:`core.collect.trials`). No Streamlit here: the pages lay
these out."""
