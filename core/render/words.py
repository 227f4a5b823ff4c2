"""Counts in words, for what the command lines print and the pages show (components/text.py
re-exports :func:`count` for the pages)."""
from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """A number with its noun in the right form, thousands separated.

    >>> count(1, "attempt"), count(3, "attempt"), count(1190, "question"), count(0, "query", "queries")
    ('1 attempt', '3 attempts', '1,190 questions', '0 queries')
    """
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"
