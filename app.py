"""QA Robustness Explorer: the frame (page config, shared state, the sidebar settings, navigation).

Run: streamlit run app.py

The frame is drawn here once per run (components/frame.py), then the page the navigation chose
runs inside ``pages_of_the_app()``, so its own ``page_frame()`` call does nothing. A page that runs
without this file (a fresh server's first visit to a page address, AppTest) draws the frame itself.
"""
import streamlit as st

from components.frame import draw_frame, pages_of_the_app
from components.navigation import is_unknown, requested_page
from components.text import md_escape

draw_frame()

# Only pages that are built appear here. The default page is served at "/" but still reserves its
# own address, so Ask reserves "home" and the address /ask is a hidden page that opens it.
ASK = st.Page("pages/ask.py", title="Ask", icon="❓", default=True, url_path="home")
SECTIONS = {
    "Explore": [
        ASK,
        st.Page("pages/variants.py", title="Variants", icon="🧪", url_path="variants"),
        st.Page("pages/gallery.py", title="Gallery", icon="🖼️", url_path="gallery"),
    ],
    "Measure": [
        st.Page("pages/sweeps.py", title="Sweeps", icon="🧹", url_path="sweeps"),
        st.Page("pages/heatmaps.py", title="Heatmaps", icon="🟥", url_path="heatmaps"),
        st.Page("pages/models.py", title="Models", icon="🧠", url_path="models"),
        st.Page("pages/behaviour.py", title="Behaviour tests", icon="✅", url_path="behaviour"),
    ],
    "Collect": [
        st.Page("pages/beat_the_ai.py", title="Beat the AI", icon="🥊", url_path="beat_the_ai"),
        st.Page("pages/speech_trial.py", title="Speech trial", icon="🎙️", url_path="speech_trial"),
    ],
}
PAGES = [page for pages in SECTIONS.values() for page in pages]


def open_ask() -> None:
    st.switch_page(ASK)


def no_such_page() -> None:
    st.title("No such page")
    st.error(f"This app has no page at the address /{md_escape(requested)}. Its pages are:")
    for page in PAGES:
        st.page_link(page)


requested = requested_page()
hidden = [st.Page(open_ask, title="Ask", url_path="ask", visibility="hidden")]
if is_unknown(requested, [p._url_path for p in PAGES] + ["ask"]) and "/" not in requested:
    hidden.append(st.Page(no_such_page, title="No such page", url_path=requested, visibility="hidden"))
page = st.navigation({**SECTIONS, "Explore": SECTIONS["Explore"] + hidden})
with pages_of_the_app():
    page.run()
