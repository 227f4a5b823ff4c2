"""The Models page's "Loaded now": the engines this server holds, what each measured, the budget."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from components.session_memory import watched_sessions
from components.text import md_escape
from core.qa import engine_cache, registry, warm


def loaded_now() -> None:
    """The engine cache as it is now: each loaded model's backend and measured size, the loads
    under way (the warm start's among them), the budget and the server's resident memory."""
    cache = registry.engines()
    st.subheader("Loaded now")
    try:
        budget = f"{cache.budget_mb():,.0f} MB"
    except ValueError as e:   # a malformed QAX_MODEL_MEMORY_MB is the administrator's to fix
        st.error(md_escape(str(e)))
        return
    held = cache.loaded()
    st.caption(md_escape(
        f"{cache.total_mb():,.0f} MB of the {budget} model memory budget (QAX_MODEL_MEMORY_MB) in "
        f"{len(held)} loaded model{'s' if len(held) != 1 else ''}; the server process holds "
        f"{engine_cache.rss_mb():,.0f} MB in all, with {watched_sessions()} browser session(s) followed. "
        "A model's size is what its card measured it to hold (else the growth of the server's memory "
        "when it loaded, never less than its weights' bytes); loading one more that would pass the "
        "budget lets go of the least recently used first. Models answering with ONNX keep no torch "
        "copy unless an attribution asked for it."))
    for state in cache.loading():
        st.caption(md_escape(f"⏳ {state.line()}"))
    started = warm.current()
    if started is not None:
        st.caption(md_escape(f"Server start: {started.summary()}."))
    if not held:
        st.info("No model is loaded yet: the first answer loads the ticked ones.")
        return
    now = time.time()
    table = pd.DataFrame([{
        "model": h.name,
        "backend": h.backend,
        "MB": round(h.mb_now()),
        "measured by": h.measured_by,
        "grew at load, MB": round(h.grew_mb),
        "load s": round(h.seconds, 1),
        "uses": h.uses,
        "last used, s ago": round(now - h.last_used),
        "torch weights held": bool(getattr(h.engine, "holds_torch", True)),
    } for h in reversed(held)])   # most recently used first
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"model": st.column_config.TextColumn(pinned=True)})
    if cache.evicted:
        st.caption(md_escape(f"Let go of since the server started, to stay within the budget: "
                             f"{len(cache.evicted)} ({', '.join(cache.evicted[-8:])}"
                             f"{', …' if len(cache.evicted) > 8 else ''})."))


def card_memory_mb(entry) -> float | None:
    """The resident MB the model's card measured on its default backend (None: not measured)."""
    try:
        return engine_cache.card_mb(entry, entry.default_backend())
    except Exception:   # a card that cannot be read is reported by the page's card section
        return None
