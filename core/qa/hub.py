"""Whether the Hugging Face hub can be reached, asked quickly and remembered for a minute.

A hub model loaded without a network makes ``transformers`` retry for about a minute before it
gives up (measured here: 59 s for one model). The pickers offer hub entries to users who have
internet, so an offline user who ticks one must hear why at once: the loader asks this module
first and, when the hub cannot be reached, loads only what the local Hugging Face cache holds.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from urllib.parse import urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"
_TTL_S = 60.0
_lock = threading.Lock()
_seen: dict[tuple[str, int], tuple[float, bool]] = {}


def endpoint() -> tuple[str, int]:
    """The hub's host and port: ``HF_ENDPOINT`` (a mirror) or huggingface.co.

    >>> os.environ.pop("HF_ENDPOINT", None) and None
    >>> endpoint()
    ('huggingface.co', 443)
    >>> os.environ["HF_ENDPOINT"] = "http://127.0.0.1:8080/"; endpoint()
    ('127.0.0.1', 8080)
    >>> del os.environ["HF_ENDPOINT"]
    """
    url = urlparse(os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def offline_reason(timeout_s: float = 3.0) -> str | None:
    """None when the hub answers a TCP connection; otherwise why a hub model cannot download."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    host, port = endpoint()
    now = time.monotonic()
    with _lock:
        seen = _seen.get((host, port))
        if seen and now - seen[0] < _TTL_S:
            return None if seen[1] else f"{host}:{port} cannot be reached from this machine"
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
        ok = True
    except OSError:
        ok = False
    with _lock:
        _seen[(host, port)] = (time.monotonic(), ok)
    return None if ok else f"{host}:{port} cannot be reached from this machine"
