"""Where things live: the repository, the (external, never copied) data directory, the cache.

Environment variables:
  QAX_DATA_DIR   the data directory (default: ``<repo_root>/../shared/data`` when that exists)
  QAX_CACHE_DIR  a writable cache directory (default: ``<repo_root>/.cache``)
"""
from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The repository root (the folder holding app.py, core/, tests/)."""
    return Path(__file__).resolve().parents[1]


def data_dir() -> Path | None:
    """The data directory, or None when there is none.

    QAX_DATA_DIR wins when set, and must then name an existing directory (a typo there should
    fail loudly rather than silently fall back). Otherwise ``<repo_root>/../shared/data`` is used
    when it exists.
    """
    env = os.environ.get("QAX_DATA_DIR")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"QAX_DATA_DIR={env!r} is not an existing directory")
        return path.resolve()
    default = repo_root().parent / "shared" / "data"
    return default.resolve() if default.is_dir() else None


def cache_dir() -> Path:
    """A writable cache directory (QAX_CACHE_DIR, default ``<repo_root>/.cache``), created on demand."""
    env = os.environ.get("QAX_CACHE_DIR")
    path = Path(env).expanduser() if env else repo_root() / ".cache"
    path.mkdir(parents=True, exist_ok=True)
    return path
