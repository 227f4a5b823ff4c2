"""QA Robustness Explorer: entry point (page config, shared state, navigation).

Run: streamlit run app.py
"""
import streamlit as st

from components.state import init_state

st.set_page_config(page_title="QA Robustness Explorer", page_icon="🔎", layout="wide")
init_state()

# Only pages that are built appear here.
PAGES = [
    st.Page("pages/ask.py", title="Ask", icon="❓", default=True, url_path="ask"),
    st.Page("pages/variants.py", title="Variants", icon="🧪", url_path="variants"),
    st.Page("pages/sweeps.py", title="Sweeps", icon="🧹", url_path="sweeps"),
    st.Page("pages/heatmaps.py", title="Heatmaps", icon="🟥", url_path="heatmaps"),
    st.Page("pages/beat_the_ai.py", title="Beat the AI", icon="🥊", url_path="beat_the_ai"),
    st.Page("pages/speech_trial.py", title="Speech trial", icon="🎙️", url_path="speech_trial"),
    st.Page("pages/behaviour.py", title="Behaviour tests", icon="✅", url_path="behaviour"),
    st.Page("pages/models.py", title="Models", icon="🧠", url_path="models"),
]

st.navigation(PAGES).run()
