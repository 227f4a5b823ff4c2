"""What a running sweep tells its audience: a readable name, and the time left.

* :func:`readable_name` - the default name of a sweep started on the Sweeps page: what it runs,
  then a short hash of its configuration (the same configuration gets the same name, so starting
  it again resumes it), instead of a bare hash.
* :class:`Eta` - time left from the rows done since the job started (rows already stored by an
  earlier run, counted in ``done`` from the first report, do not make the rate look faster).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["readable_name", "Eta", "format_seconds"]


def readable_name(dataset: str, spec_labels: Sequence[str], models: Sequence[str], n_examples: int,
                  repeats: int, seed: int, sample: int | None) -> str:
    """``xquad/xquad.en · TUQ, DCRQ · 3 models · 10 ex · 5f9a83`` (at most three perturbations named).

    >>> readable_name("demo.en", ["TUQ", "DRQ(n_words=1)"], ["a", "b"], 5, 2, 3, 5)
    'demo.en · TUQ, DRQ(n_words=1) · 2 models · 5 ex · cfcf5c'
    >>> readable_name("demo.en", ["A", "B", "C", "D"], ["a"], 1, 1, 0, None).split(" · ")[1:3]
    ['A, B, C +1', '1 model']
    """
    config = json.dumps([dataset, sorted(spec_labels), list(models), repeats, seed, sample], sort_keys=True)
    digest = hashlib.sha256(config.encode()).hexdigest()[:6]
    named = ", ".join(spec_labels[:3]) + (f" +{len(spec_labels) - 3}" if len(spec_labels) > 3 else "")
    return (f"{dataset} · {named} · {len(models)} model{'s' if len(models) != 1 else ''} · "
            f"{n_examples} ex · {digest}")


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``.

    >>> format_seconds(41.6), format_seconds(185), format_seconds(3725)
    ('42 s', '3 min 05 s', '1 h 02 min')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Eta:
    """Seconds left, from the rows done since the first rows were stored.

    The clock starts when the first rows land, not at the first report: before them the models
    load (minutes for an LLM beside two encoders), and a rate over the loading read "about 23 min
    left" a minute before the end (the LLM researcher's audit, 2026-11-29).

    >>> eta = Eta()
    >>> eta.update(100, 600, now=10.0) is None       # resumed at 100: no rate yet
    True
    >>> eta.update(100, 600, now=170.0) is None      # still loading the models
    True
    >>> eta.update(150, 600, now=180.0) is None      # the first rows: the clock starts
    True
    >>> eta.update(200, 600, now=190.0)              # 50 rows in 10 s, 400 to go
    80.0
    """

    def __init__(self) -> None:
        self._first: int | None = None               # rows done at the first report
        self._start: tuple[int, float] | None = None  # rows done and time when rows first landed

    def update(self, done: int, total: int, now: float) -> float | None:
        if self._first is None or done < self._first:   # a first report, or a sweep started again
            self._first, self._start = done, None
            return None
        if self._start is None:
            if done > self._first:
                self._start = (done, now)
            return None
        rows, seconds = done - self._start[0], now - self._start[1]
        if rows <= 0 or seconds <= 0:
            return None
        return (total - done) * seconds / rows


def worker_rows(workers: Sequence[Any]) -> list[dict[str, Any]]:
    """A Ray sweep's workers (core.sweeps.running.ray.WorkerState) as a table: node, state, calls, and each
    worker's share of the predictions.

    >>> from types import SimpleNamespace as W
    >>> worker_rows([W(index=0, node="n1", state="busy", in_flight=1, calls=3, predictions=30, restarts=0),
    ...              W(index=1, node=None, state="starting", in_flight=0, calls=0, predictions=10, restarts=1)])[1]
    ... # doctest: +NORMALIZE_WHITESPACE
    {'worker': 1, 'node': 'starting…', 'state': 'starting', 'in flight': 0, 'model calls': 0, 'predictions': 10,
    'share %': 25.0, 'actor restarts': 1}
    """
    total = sum(w.predictions for w in workers) or 1
    return [{"worker": w.index, "node": w.node or "starting…", "state": w.state, "in flight": w.in_flight,
             "model calls": w.calls, "predictions": w.predictions, "share %": round(100.0 * w.predictions / total, 1),
             "actor restarts": w.restarts} for w in workers]
