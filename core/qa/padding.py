"""Counting wasted work: how many of the tokens a forward pass reads are padding.

A batch of windows is one rectangle: every window is padded to the batch's width, and the model
computes on the padding like on real tokens (attention masks it out of the answer, not out of the
work). The engine (core.qa.engine) sorts its windows by length and pads each batch only to its own
longest window; :class:`PaddingCount` counts what that still pads, per engine, and
:func:`count_padding` what another way of batching would pad (benchmarks/padding.py compares).
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["PaddingCount", "STRATEGIES", "batches", "count_padding"]

# How windows can be batched: padded to the window size (the naive way), per batch in input order,
# or per batch after sorting by length (what the engine does).
STRATEGIES = ("max_length", "per_batch", "sorted")


@dataclass
class PaddingCount:
    """Real and padding tokens of every batch added so far (thread-safe: Streamlit sessions share
    an engine).

    >>> c = PaddingCount(); c.add([3, 5, 2]); c.add([4])
    >>> c.real, c.padded, c.total, round(c.share, 3)
    (14, 5, 19, 0.263)
    """

    real: int = 0
    padded: int = 0
    batches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, lengths: Sequence[int], width: int | None = None) -> None:
        """One batch of windows of these real ``lengths``, padded to ``width`` (default: the longest)."""
        if not lengths:
            return
        width = max(lengths) if width is None else width
        real = sum(lengths)
        with self._lock:
            self.real += real
            self.padded += width * len(lengths) - real
            self.batches += 1

    @property
    def total(self) -> int:
        return self.real + self.padded

    @property
    def share(self) -> float:
        """Padding as a share of every token computed (0 when nothing was)."""
        return self.padded / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        return {"real": self.real, "padded": self.padded, "batches": self.batches, "share": self.share}


def batches(lengths: Sequence[int], batch_size: int, strategy: str) -> list[list[int]]:
    """Window indices per batch as ``strategy`` forms them (max_length and per_batch: input order;
    sorted: by length, as core.qa.engine does).

    >>> batches([5, 1, 4, 2], 2, "per_batch"), batches([5, 1, 4, 2], 2, "sorted")
    ([[0, 1], [2, 3]], [[1, 3], [2, 0]])
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown padding strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    order = list(range(len(lengths)))
    if strategy == "sorted":
        order.sort(key=lambda k: lengths[k])   # stable, like the engine's sorted()
    return [order[b:b + batch_size] for b in range(0, len(order), batch_size)]


def count_padding(lengths: Sequence[int], batch_size: int, strategy: str, max_length: int) -> PaddingCount:
    """What batching windows of these ``lengths`` by ``strategy`` pads.

    >>> count_padding([5, 1, 4, 2], 2, "max_length", 6).padded, count_padding([5, 1, 4, 2], 2, "per_batch", 6).padded
    (12, 6)
    >>> count_padding([5, 1, 4, 2], 2, "sorted", 6).padded
    2
    """
    count = PaddingCount()
    for batch in batches(lengths, batch_size, strategy):
        count.add([lengths[k] for k in batch], max_length if strategy == "max_length" else None)
    return count
