"""What a known data file is: its name, path, language and role in the data directory
(:func:`core.datasets.files.discover_datasets`, :func:`core.datasets.natural.discover_natural`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DatasetInfo"]


@dataclass(frozen=True)
class DatasetInfo:
    """A known data file: ``role`` is "eval", "challenge" (pairs with ``original``) or "train"."""

    name: str
    path: Path
    lang: str
    role: str
    original: Path | None = None
