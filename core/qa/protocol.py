"""What the rest of the project may ask of a QA model: the declared interface (LIT style).

A sweep, the Ask page or an evaluation needs three things from a model and nothing more:

* ``predict(questions, contexts, n_best=..., progress=..., skip_invalid=...)``: one
  :class:`~core.types.Prediction` per (question, context) pair, in input order;
* ``fingerprint()``: a short string that changes whenever the model could answer differently
  (weights, tokenizer, the settings that change answers, the backend): the prediction cache's key;
* ``languages``: the languages it was made for (``None``: not declared, e.g. a folder typed by a
  user).

:class:`core.qa.engine.QAEngine` implements it (and computes its own fingerprint); test doubles and
remote stand-ins (``core.sweeps.running.ray``'s actors) implement it with a few lines. Nothing outside an
implementation reaches into its weights or tokenizer.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from core.types import Prediction

ProgressFn = Callable[[int, int], None]


@runtime_checkable
class QAModel(Protocol):
    """An extractive QA model as the sweeps and pages use it."""

    languages: Sequence[str] | None

    def predict(self, questions: Sequence[str], contexts: Sequence[str], n_best: int = 5,
                progress: ProgressFn | None = None, skip_invalid: bool = False) -> list[Prediction]:
        """One Prediction per pair, in input order; an invalid pair raises (``QAInputError``) or,
        with ``skip_invalid``, gets an empty Prediction."""
        ...

    def fingerprint(self) -> str:
        """Changes whenever the answers could change: the key of this model's cached predictions."""
        ...


def fingerprint_of(model) -> str:
    """``model.fingerprint()``; a plain string attribute ``fingerprint`` is taken as it is (the
    short form for a test double or a stand-in that already knows its fingerprint).

    >>> class Fixed:
    ...     fingerprint = "fixed-1"
    >>> class Computed:
    ...     def fingerprint(self):
    ...         return "computed-1"
    >>> fingerprint_of(Fixed()), fingerprint_of(Computed())
    ('fixed-1', 'computed-1')
    >>> fingerprint_of(object())
    Traceback (most recent call last):
    ...
    TypeError: cannot fingerprint <object>: it has no fingerprint() (core.qa.protocol.QAModel)
    """
    own = getattr(model, "fingerprint", None)
    value = own() if callable(own) else own
    if isinstance(value, str) and value:
        return value
    raise TypeError(f"cannot fingerprint <{type(model).__name__}>: it has no fingerprint() "
                    "(core.qa.protocol.QAModel)")
