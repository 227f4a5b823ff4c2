"""Giving memory back to the system once a visitor's large upload is gone.

CPython frees a parsed upload once nothing refers to it, but the C allocator (glibc malloc)
keeps the freed pages for reuse, so the server's resident memory (RSS) stays at its peak.
``malloc_trim(0)`` returns the free pages at the top of each heap and the free whole pages
inside it (measured in one process: parse a 19 MB SQuAD file, 31 -> 156 MB; drop it and trim,
43 MB).

:func:`release_when_collected` ties that to the object's life: when ``obj`` (an uploaded
Dataset) is garbage-collected, a daemon timer runs :func:`trim` a moment later, outside the
collector (a finalizer must not run a collection itself).

:func:`freeze` and :func:`freeze_survivors` keep the collector's full passes off the long-lived heap. Streamlit
collects every generation after each script run (``runner.postScriptGC``), and a page that
polls a background job reruns a fragment every half second. With the three English defaults
loaded the heap holds about 460,000 tracked objects (the libraries, the tokenizers, the
engines) and each full pass took 430-480 ms holding the GIL, so an attribution thread, which
needs the GIL between torch operations, took 16 s in the server against 2.4 s alone (py-spy:
the script threads' ``gc.collect(2)`` held the GIL). Frozen (``gc.freeze``), those objects
are skipped: the same pass takes under a millisecond. A model load ends with :func:`freeze`;
letting a model or a session go thaws, collects and freezes again (:func:`freeze_survivors`), so
nothing frozen that is let go of stays.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import weakref

__all__ = ["trim", "trim_later", "release_when_collected", "limit_arenas", "freeze", "freeze_survivors"]

M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)

_libc = None


def _malloc_trim():
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
            _libc = False
    return _libc.malloc_trim if _libc else None


def limit_arenas(n: int = 2) -> bool:
    """At most ``n`` malloc arenas from now on (glibc ``mallopt(M_ARENA_MAX, n)``, like the
    environment variable ``MALLOC_ARENA_MAX``). glibc gives each thread that allocates at once
    an arena of its own (up to 8 per core); Streamlit runs every session's script in a thread,
    so a large upload's freed memory ends up scattered over arenas where other threads' live
    objects pin it. Measured (three 19 MB uploads in a row, each tab closed, RSS over the 369 MB
    of a fresh server once the upload was dropped): +26, +82, +118 MB as it is; +25, +63, +82 MB
    with this call (arenas made before it stay); +14, +25, +36 MB with ``MALLOC_ARENA_MAX=2`` in
    the server's environment, the setting docs/SECURITY.md recommends. True when it took."""
    if _malloc_trim() is None:
        return False
    try:
        return bool(_libc.mallopt(M_ARENA_MAX, int(n)))
    except AttributeError:
        return False


def trim(thaw: bool = False) -> bool:
    """Collect garbage, then hand free heap pages back to the system (glibc only). True when
    malloc_trim ran and released something. ``thaw``: collect what was frozen too, then freeze
    the survivors again (:func:`freeze_survivors`): for objects that lived through a model load
    and are let go of now (a closed session's state)."""
    if thaw:
        freeze_survivors()
    else:
        gc.collect()
    fn = _malloc_trim()
    return bool(fn(0)) if fn else False


_freeze_lock = threading.Lock()


def freeze_survivors() -> int:
    """Give every frozen object back to the collector, collect, and freeze what survives (the
    objects in use now); the number frozen. Called when the long-lived heap changes: a model
    loaded or let go of (an engine let go of may sit in reference cycles, which only a
    collection frees, so what was frozen is thawed first). Objects made later are collected as
    always; freezing costs one full pass (about half a second with three models loaded).

    >>> import gc
    >>> freeze_survivors() >= 0 and gc.get_freeze_count() >= 0
    True
    """
    with _freeze_lock:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return gc.get_freeze_count()


def freeze() -> int:
    """Freeze the objects alive now (no collection: call it right after one, as a model load ends
    with :func:`trim`); the number frozen. Cheap: the tracked objects move to the permanent
    generation in one step. What is frozen and later let go of waits for :func:`freeze_survivors`."""
    with _freeze_lock:
        gc.freeze()
        return gc.get_freeze_count()


def trim_later(delay: float = 1.0, thaw: bool = False) -> None:
    """Run :func:`trim` in ``delay`` seconds on a daemon thread (e.g. once a parse's temporary
    objects and the uploaded bytes are gone)."""
    t = threading.Timer(delay, trim, kwargs={"thaw": thaw})
    t.daemon = True
    t.start()


def release_when_collected(obj: object, delay: float = 1.0) -> None:
    """Run :func:`trim` ``delay`` seconds after ``obj`` is garbage-collected."""
    weakref.finalize(obj, trim_later, delay)
