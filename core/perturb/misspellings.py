"""Wikipedia's list of common misspellings, filtered to *interface* (typing) errors.

NoiseQA's second synthetic keyboard generator replaces words by human misspellings, keeping only
errors a keyboard interface produces - a single deletion, a single insertion, a swap of two
adjacent characters, or a substitution by an adjacent key - and not errors that keep the
pronunciation ("definately" for "definitely": a non-adjacent substitution, so it is dropped).

The data file is ``<data_dir>/misspellings/wikipedia.json``, ``{misspelling: [correction, ...]}``;
:func:`load_interface_misspellings` inverts it to ``{correction: [misspelling, ...]}`` with only the
interface errors (single-word corrections; comparison ignores case).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from core import config
from core.perturb import keyboards

RELATIVE_PATH = Path("misspellings") / "wikipedia.json"

DELETION = "deletion"
INSERTION = "insertion"
TRANSPOSITION = "transposition"
ADJACENT_SUBSTITUTION = "adjacent_substitution"
INTERFACE_ERRORS = (DELETION, INSERTION, TRANSPOSITION, ADJACENT_SUBSTITUTION)


def classify_interface_error(correct: str, typo: str, layout: str = "qwerty") -> str | None:
    """Which interface error turns ``correct`` into ``typo`` (case-insensitive), or None if none does.

    One of :data:`INTERFACE_ERRORS`: one character deleted, one character inserted, two adjacent
    characters swapped, or one character replaced by a neighbouring key on ``layout`` (full
    adjacency, :func:`core.perturb.keyboards.neighbours`).
    """
    a, b = correct.lower(), typo.lower()
    if a == b:
        return None
    if len(b) == len(a) - 1:
        return DELETION if any(a[:i] + a[i + 1:] == b for i in range(len(a))) else None
    if len(b) == len(a) + 1:
        return INSERTION if any(b[:i] + b[i + 1:] == a for i in range(len(b))) else None
    if len(a) != len(b):
        return None
    diffs = [i for i in range(len(a)) if a[i] != b[i]]
    if len(diffs) == 1:
        i = diffs[0]
        return ADJACENT_SUBSTITUTION if keyboards.are_adjacent(a[i], b[i], layout) else None
    if len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]]:
        return TRANSPOSITION
    return None


def data_path() -> Path | None:
    """Where the Wikipedia misspellings file is, or None when there is no data directory / file."""
    root = config.data_dir()
    if root is None:
        return None
    path = root / RELATIVE_PATH
    return path if path.is_file() else None


def missing_data_reason() -> str | None:
    """None when the Wikipedia misspellings file is there, else where it was expected."""
    if data_path() is not None:
        return None
    return (f"Wikipedia misspellings not found: expected {RELATIVE_PATH} under the data directory "
            f"({config.data_dir() or 'none set; set QAX_DATA_DIR'})")


def invert_interface_misspellings(raw: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """``{misspelling: [correction]}`` -> ``{correction: sorted misspellings}``, interface errors only.

    Corrections with a space are skipped (a multi-word replacement is not a typo of one token).
    """
    inverted: dict[str, set[str]] = {}
    for misspelling, corrections in raw.items():
        if not isinstance(corrections, list):
            raise ValueError(f"misspellings file: value for {misspelling!r} must be a list, got {corrections!r}")
        for correction in corrections:
            if " " in correction or " " in misspelling:
                continue
            if classify_interface_error(correction, misspelling) is not None:
                inverted.setdefault(correction, set()).add(misspelling)
    return {k: tuple(sorted(v)) for k, v in sorted(inverted.items())}


@functools.lru_cache(maxsize=4)
def _load(path: str) -> dict[str, tuple[str, ...]]:
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a JSON object {{misspelling: [correction, ...]}}")
    return invert_interface_misspellings(raw)


def load_interface_misspellings(path: Path | str | None = None) -> dict[str, tuple[str, ...]]:
    """The inverted, filtered table (cached). ``path`` defaults to :func:`data_path`."""
    if path is None:
        path = data_path()
        if path is None:
            raise FileNotFoundError(missing_data_reason())
    return _load(str(path))
