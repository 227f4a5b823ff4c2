"""A clean and a perturbed text aligned by the perturbation's edits, word against word.

Each character of the perturbed text comes either from an unchanged stretch of the original (it
maps to that one character) or from an edit's replacement (it maps to the whole replaced range
``[edit.start, edit.end)``; an insertion maps to the empty range at its position). A perturbed
word maps to the union of its characters' ranges, and is paired with every original word that
range overlaps; words so connected form one row (a split word is one original against two
perturbed, a merged pair two against one). An original word no perturbed word maps to was
deleted (its row has no perturbed side); a perturbed word that maps to nothing was inserted.
Rows are in the original's order. Without edits, they are recovered from the two texts
(core.perturb.base.diff_edits).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.explain.words import WordScore
from core.perturb.base import Edit, diff_edits


@dataclass(frozen=True)
class AlignedWord:
    """One row: the clean word(s) and the perturbed word(s) they became, with summed scores
    (None where that side has no word or no score)."""

    clean: str
    clean_score: float | None
    perturbed: str
    perturbed_score: float | None

    @property
    def changed(self) -> bool:
        return self.clean != self.perturbed


def origin_ranges(original: str, edits: Sequence[Edit]) -> list[tuple[int, int]]:
    """For each character of the edited text, the range of ``original`` it comes from.

    >>> origin_ranges("abc", [Edit(1, 2, "XY", "t")])
    [(0, 1), (1, 2), (1, 2), (2, 3)]
    """
    out: list[tuple[int, int]] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        out += [(i, i + 1) for i in range(pos, e.start)]
        out += [(e.start, e.end)] * len(e.replacement)
        pos = max(pos, e.end)
    out += [(i, i + 1) for i in range(pos, len(original))]
    return out


def _sum(scores: list[float | None]) -> float | None:
    known = [s for s in scores if s is not None]
    return sum(known) if known else None


def align_words(original: str, clean: Sequence[WordScore], perturbed_text: str, perturbed: Sequence[WordScore],
                edits: Sequence[Edit] | None = None) -> list[AlignedWord]:
    """Rows pairing ``clean`` (words of ``original``) with ``perturbed`` (words of
    ``perturbed_text``) by ``edits`` (offsets into ``original``; None: diffed from the texts).

    >>> from core.explain.words import word_scores
    >>> clean = [WordScore("What", 0, 4, 1.0), WordScore("animal?", 5, 12, 2.0)]
    >>> pert = [WordScore("Whqt", 0, 4, 0.5), WordScore("animal?", 5, 12, 1.5)]
    >>> [(r.clean, r.perturbed, r.changed) for r in align_words("What animal?", clean, "Whqt animal?", pert)]
    [('What', 'Whqt', True), ('animal?', 'animal?', False)]
    """
    if edits is None:
        edits = diff_edits(original, perturbed_text, "diff")
    ranges = origin_ranges(original, edits)
    if len(ranges) != len(perturbed_text):
        raise ValueError("the edits do not turn the original into the perturbed text")
    # union-find over clean words (0..n-1) and perturbed words (n..n+m-1)
    n, m = len(clean), len(perturbed)
    parent = list(range(n + m))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    anchor: dict[int, int] = {}   # perturbed word -> original position (for ordering inserted words)
    for j, w in enumerate(perturbed):
        spans = ranges[w.start:w.end]
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        anchor[j] = lo
        for i, c in enumerate(clean):
            if lo < hi and c.start < hi and lo < c.end:
                parent[find(n + j)] = find(i)
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i in range(n):
        groups.setdefault(find(i), ([], []))[0].append(i)
    for j in range(m):
        groups.setdefault(find(n + j), ([], []))[1].append(j)

    def position(g: tuple[list[int], list[int]]) -> tuple[float, int]:
        cs, ps = g
        return (clean[cs[0]].start, 1) if cs else (anchor[ps[0]] - 0.5, 0)

    rows = []
    for cs, ps in sorted(groups.values(), key=position):
        rows.append(AlignedWord(" ".join(clean[i].text for i in cs), _sum([clean[i].score for i in cs]) if cs else None,
                                " ".join(perturbed[j].text for j in ps),
                                _sum([perturbed[j].score for j in ps]) if ps else None))
    return rows


def answer_move(clean: tuple[str, int, int] | None, perturbed: tuple[str, int, int] | None) -> str:
    """One sentence saying where the answer went: (text, start, end) before and after.

    >>> answer_move(("cat", 12, 15), ("truck", 22, 27))
    "moved: 'cat' (12-15) -> 'truck' (22-27)"
    >>> answer_move(("cat", 12, 15), ("cat", 12, 15))
    "same: 'cat' (12-15)"
    """
    def show(a):
        return f"{a[0]!r} ({a[1]}-{a[2]})"

    if clean is None and perturbed is None:
        return "no answer before or after"
    if clean is None:
        return f"found: no answer -> {show(perturbed)}"
    if perturbed is None:
        return f"lost: {show(clean)} -> no answer"
    if tuple(clean[1:]) == tuple(perturbed[1:]):
        return f"same: {show(clean)}"
    a, b = clean[1:], perturbed[1:]
    how = "moved" if b[1] <= a[0] or a[1] <= b[0] else ("grew" if b[0] <= a[0] and a[1] <= b[1] else
                                                      "shrank" if a[0] <= b[0] and b[1] <= a[1] else "shifted")
    return f"{how}: {show(clean)} -> {show(perturbed)}"
