"""QA Robustness Explorer: entry point (page config, shared state, navigation).

Run: streamlit run app.py
"""
import streamlit as st

from components.navigation import is_unknown, requested_page
from components.state import init_state
from components.text import md_escape

st.set_page_config(page_title="QA Robustness Explorer", page_icon="🔎", layout="wide")
init_state(entry=True)

# Only pages that are built appear here. The default page is served at "/" but still reserves its
# own address, so Ask reserves "home" and the address /ask is a hidden page that opens it.
PAGES = [
    st.Page("pages/ask.py", title="Ask", icon="❓", default=True, url_path="home"),
    st.Page("pages/variants.py", title="Variants", icon="🧪", url_path="variants"),
    st.Page("pages/sweeps.py", title="Sweeps", icon="🧹", url_path="sweeps"),
    st.Page("pages/heatmaps.py", title="Heatmaps", icon="🟥", url_path="heatmaps"),
    st.Page("pages/gallery.py", title="Gallery", icon="🖼️", url_path="gallery"),
    st.Page("pages/beat_the_ai.py", title="Beat the AI", icon="🥊", url_path="beat_the_ai"),
    st.Page("pages/speech_trial.py", title="Speech trial", icon="🎙️", url_path="speech_trial"),
    st.Page("pages/behaviour.py", title="Behaviour tests", icon="✅", url_path="behaviour"),
    st.Page("pages/models.py", title="Models", icon="🧠", url_path="models"),
]


def open_ask() -> None:
    st.switch_page(PAGES[0])


def no_such_page() -> None:
    st.title("No such page")
    st.error(f"This app has no page at the address /{md_escape(requested)}. Its pages are:")
    for page in PAGES:
        st.page_link(page)


requested = requested_page()
extra = [st.Page(open_ask, title="Ask", url_path="ask", visibility="hidden")]
if is_unknown(requested, [p._url_path for p in PAGES] + ["ask"]) and "/" not in requested:
    extra.append(st.Page(no_such_page, title="No such page", url_path=requested, visibility="hidden"))
st.navigation(PAGES + extra).run()
