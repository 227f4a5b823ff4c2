"""A visitor's uploads and results leave memory soon after they are parsed, and after their tab closes.

Streamlit (1.67) keeps two things of an upload that it never lets go of by itself:

* the uploaded bytes, in its in-memory upload manager, per session, until that session is shut
  down; a widget that disappears does not remove them. :func:`drop_uploaded_file` removes a
  file once the app has parsed it (what the browser's "remove file" button does).
* a disconnected session (its whole ``st.session_state``), kept for reconnection in a TTL cache
  (``server.disconnectedSessionTTL``, 120 s) that drops expired entries only when another
  session is stored, and drops them without shutting them down, so their uploaded files stay
  in the upload manager for good. Measured here: the parsed 19 MB upload of a closed tab was
  still held 150 s after the tab closed.

So every script run registers its session (:func:`watch_session`, from the frame), the dataset
picker registers the session's dict of parsed uploads with :func:`watch`, and a daemon thread
looks every :data:`PERIOD_SECONDS` at which of those sessions still have a browser connected
(``Runtime.is_active_session``). A session without one for :data:`GRACE_SECONDS` (a network
blip reconnects well within that) has its parsed uploads and its uploaded files dropped, and is
closed (``Runtime.clear_user_info_for_session``: a stored session is shut down on the server's
event loop and can no longer be resumed), which lets go of its whole ``st.session_state``: its
answers, variants and attributions. Then the process gives the freed memory back to the system
(:func:`core.memory.trim`). When the last one goes, the models go back to those the warm start
loaded (:func:`core.qa.warm.rest`: a German or Chinese item's model, torch weights an attribution
brought back) and the speech recognisers are let go of (:func:`core.speech.asr.release_all`), so
an idle server holds what it held once warm. A visitor who comes back later gets
a fresh session: the pages open on their defaults (a copied link brings a view back).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from core import memory

__all__ = ["GRACE_SECONDS", "PERIOD_SECONDS", "watch", "watch_session", "sweep", "drop_uploaded_file",
           "session_id", "runtime", "watched_sessions"]

GRACE_SECONDS = 30.0
PERIOD_SECONDS = 10.0

_lock = threading.Lock()
_watched: dict[str, dict] = {}
_inactive_since: dict[str, float] = {}
_thread: threading.Thread | None = None


def session_id() -> str | None:
    """This script run's Streamlit session id, or None outside a Streamlit server's session."""
    return _session_id()


def runtime():
    """Streamlit's runtime when a server runs (``is_active_session`` tells a live browser), else None."""
    return _runtime()


def _session_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:
        return None
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def _runtime():
    from streamlit import runtime

    return runtime.get_instance() if runtime.exists() else None


def drop_uploaded_file(file_id: str) -> None:
    """Remove this session's uploaded file ``file_id`` from Streamlit's upload manager (the
    widget showing it must not be rendered again: give it a new key)."""
    sid, rt = _session_id(), _runtime()
    if sid is not None and rt is not None:
        rt.uploaded_file_mgr.remove_file(sid, file_id)


def watch(uploads: dict) -> None:
    """Drop the contents of ``uploads`` (this session's parsed uploads) once this session has
    had no browser for :data:`GRACE_SECONDS`. Without a Streamlit server (AppTest), nothing."""
    _register(uploads)


def watch_session() -> None:
    """Close this session once it has had no browser for :data:`GRACE_SECONDS` (its results go
    with it). Without a Streamlit server (AppTest), nothing."""
    _register(None)


def watched_sessions() -> int:
    """How many sessions the janitor follows now (the Models page shows it)."""
    with _lock:
        return len(_watched)


def _register(uploads: dict | None) -> None:
    global _thread
    sid = _session_id()
    if sid is None or _runtime() is None:
        return
    with _lock:
        if uploads is not None or sid not in _watched:
            _watched[sid] = uploads if uploads is not None else {}
        if _thread is None or not _thread.is_alive():
            memory.limit_arenas(2)  # once, before more session threads allocate
            _thread = threading.Thread(target=_loop, name="qax-upload-janitor", daemon=True)
            _thread.start()


def sweep(now: float, is_active: Callable[[str], bool], grace: float = GRACE_SECONDS,
          on_drop: Callable[[str], None] = lambda sid: None) -> int:
    """One pass: clear the uploads of sessions inactive for ``grace`` seconds (and call
    ``on_drop`` with each one's id); how many.

    >>> saved = dict(_watched); _watched.clear()  # sessions of a running app stay out of it
    >>> a, b = {"x.json": 1}, {"y.json": 2}
    >>> _watched.update({"s1": a, "s2": b})
    >>> sweep(100.0, lambda sid: sid == "s1"), sweep(120.0, lambda sid: sid == "s1")
    (0, 0)
    >>> sweep(130.0, lambda sid: sid == "s1"), a, b, sorted(_watched)
    (1, {'x.json': 1}, {}, ['s1'])
    >>> _watched.clear(); _watched.update(saved)
    """
    freed = 0
    with _lock:
        for sid, uploads in list(_watched.items()):
            if is_active(sid):
                _inactive_since.pop(sid, None)
                continue
            since = _inactive_since.setdefault(sid, now)
            if now - since >= grace:
                uploads.clear()
                on_drop(sid)
                del _watched[sid]
                del _inactive_since[sid]
                freed += 1
    return freed


def _loop() -> None:
    while True:
        time.sleep(PERIOD_SECONDS)
        rt = _runtime()
        if rt is None:
            continue
        if sweep(time.monotonic(), rt.is_active_session, on_drop=lambda sid: _close(rt, sid)):
            if not watched_sessions():   # nobody left: the models back to the warm start's
                from core.qa import warm
                from core.speech import asr

                warm.rest(collect=False)   # freed by the trim below, with the sessions' state
                asr.release_all()
            # thawed: a session that lived through a model load had its state frozen with the heap
            memory.trim(thaw=True)
            memory.trim_later(2.0, thaw=True)   # the closes run on the event loop: free a moment later


def _close(rt, sid: str) -> None:
    """Drop a gone session's uploaded files and close it (thread-safe: the close itself runs on
    the server's event loop)."""
    rt.uploaded_file_mgr.remove_session_files(sid)
    rt.clear_user_info_for_session(sid)
