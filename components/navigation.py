"""What the app does with the address a visitor opened: the page it names, or a plain "no such page".

Streamlit runs the default page for any address it does not know (``/ask`` included, because
the default page lives at ``/``) and only flashes "page not found". A presenter who mistypes an
address should be told, with a link to every page; ``/ask`` should simply show Ask.
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["requested_page", "is_unknown", "leave_pages_directory_mode"]


def requested_page() -> str | None:
    """The page name in the address of this run's request ("" for the root, None when unknown or
    when the run was asked for by page hash, as in-app links and AppTest do)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:   # pragma: no cover - Streamlit moved it
        return None
    ctx = get_script_run_ctx()
    if ctx is None or ctx.pages_manager.intended_page_script_hash:
        return None
    return ctx.pages_manager.intended_page_name


def is_unknown(requested: str | None, url_paths: Iterable[str]) -> bool:
    """Whether ``requested`` names no page (the root, and an address that is a page's, are known).

    >>> is_unknown("heatmaps", ["ask", "heatmaps"]), is_unknown("", ["ask"]), is_unknown(None, ["ask"])
    (False, False, False)
    >>> is_unknown("heatmap", ["ask", "heatmaps"])
    True
    """
    return bool(requested) and requested not in set(url_paths)


def leave_pages_directory_mode() -> None:
    """Send a page run outside ``app.py``'s navigation back through it.

    A server's first run (and every run until some visitor loads ``/``) is in Streamlit's old
    ``pages/`` directory mode, because the flag that ``st.navigation`` clears is set from the
    existence of ``pages/`` when the server starts. A first visit straight to ``/models`` then ran
    ``pages/models.py`` on its own, under a sidebar of file names ("app", "ask", "beat the ai"...).
    Every page run on its own calls this first (``components.frame.page_frame``; ``app.py`` does
    not, its own ``st.navigation`` leaves the mode): in that mode it clears the flag and asks for
    a rerun, which runs ``app.py`` and its navigation, which opens the page the address names.
    Known gap: an unknown address as a fresh server's very first request falls to ``app.py`` in
    that mode and shows Ask.
    """
    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx() is None or not PagesManager.uses_pages_directory:
        return
    from streamlit.runtime import Runtime

    # Only on a real server: AppTest starts every run in that mode on purpose (it resets the flag)
    # and runs a page it switched to that way; a rerun there would lose the switch.
    if type(getattr(Runtime, "_instance", None)) is not Runtime:
        return
    PagesManager.uses_pages_directory = False
    st.rerun()
