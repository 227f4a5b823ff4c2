"""The perturbation interface: what a perturbation is, what it declares, what it returns, how edits apply.

Style: nlpaug's base augmenter owns the ritual, LIT declares parameters once (``config_spec``),
CheckList returns variants or ``None``. A perturbation subclass declares its :class:`Param` s and
implements ``_apply(example, rng, params)``; the public :meth:`Perturbation.apply` (also callable
as ``p(example, rng, **params)``) is a fixed template:

1. resolve and validate the parameters once, from the declarations (:meth:`~Perturbation.resolve_params`);
2. ask the one "why can it not run here" question (:meth:`~Perturbation.why_not`: the language,
   a missing tagger, translator, voice or word list); a reason raises :class:`NotApplicable`, so
   callers ask ``why_not`` first and show the reason;
3. call ``_apply`` with the resolved parameters and all randomness drawn from the ``rng`` passed in;
4. check its variants (each of the declared field), drop repeats of one text, and return them, or
   ``None`` when there is nothing to change (no verb, no umlaut, ...). Where the question's text
   alone tells that, :meth:`~Perturbation.nothing_to_change` says so without running anything
   (the Sweeps page asks it of every planned question; a sweep stores it as the row's note).

Offsets: every :class:`Edit` refers to the ORIGINAL text of one field (question or context).
:func:`splice` writes edits into a text; :func:`apply_edits` applies non-overlapping edits to an
example and, for the context, shifts the gold answers' ``answer_start`` exactly (and refuses edits
that touch an answer span).

>>> class Shout(Perturbation):
...     id, family, field, randomised = "shout_Q", "case", "question", False
...     description, source = "Upper-case the question, then add marks", "a doctest"
...     parameters = (Param("marks", 1, "how many '!' to add", min=0, max=3),)
...     def _apply(self, example, rng, params):
...         new = example.question.upper() + "!" * params["marks"]
...         return [make_variant_from_text(self, example, "question", new)]
>>> shout = Shout()
>>> example = QAExample("q1", "Who won?", "Denver won.")
>>> shout.apply(example, random.Random(0), marks=2)[0].text
'WHO WON?!!'
>>> shout(example, random.Random(0))[0].meta
{'id': 'shout_Q', 'changed': True}
>>> shout.default_params, shout.param_ranges
({'marks': 1}, {'marks': (0, 3)})
>>> shout.apply(example, random.Random(0), marks=5)
Traceback (most recent call last):
...
core.perturb.base.PerturbationError: shout_Q: parameter 'marks' must be in [0, 3], got 5
>>> shout.why_not(example) is None, shout.is_compatible(example)
(True, True)
"""
from __future__ import annotations

import abc
import dataclasses
import difflib
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, ClassVar

import jiwer

from core.types import Answer, QAExample

FIELDS = ("question", "context")

FAMILIES = (
    "character", "word", "sentence", "keyboard", "asr", "mt",
    "paraphrase", "artefact", "case", "punctuation", "repair", "disfluency", "natural",
)
PARAM_TYPES = (bool, int, float, str)
# Parameter names that point at a model, file or folder: the server's to set (an environment
# variable, the command line), never typed into a browser form, which could load anything.
RESOURCE_SUFFIXES = ("_model", "_path", "_file", "_dir")


def names_a_resource(name: str) -> bool:
    """Whether a parameter called ``name`` names a model, file or folder (ReplaceRQ's
    ``mlm_model``, or ``ReplaceRQ.mlm_model`` in a chain): the server's to set, never a browser's.

    >>> names_a_resource("mlm_model"), names_a_resource("ReplaceRQ.mlm_model"), names_a_resource("n_words")
    (True, True, False)
    """
    return name.endswith(RESOURCE_SUFFIXES)


class PerturbationError(ValueError):
    """A perturbation was misused: bad parameters, overlapping edits, an edit inside a gold answer."""


class NotApplicable(PerturbationError):
    """``apply`` was called on an example the perturbation cannot run on; the message says why
    (the same sentence :meth:`Perturbation.why_not` gives)."""


# ------------------------------------------------------------------------------------- parameters


# The most values of a bounded int a sweep offers as a range (one spec per value); wider bounds
# get a single number field.
MAX_SWEEP_INTS = 100


@dataclass(frozen=True)
class Param:
    """One declared parameter of a perturbation (LIT's ``config_spec`` entry).

    ``type`` is taken from ``default`` (bool, int, float or str). A number may have inclusive
    bounds ``min``/``max`` and a ``step`` (LIT's ``Scalar.step``: how far its slider or number
    field moves per notch; :attr:`widget_step` gives the one used, declared or not); a str may be
    one of ``choices``. ``help`` is shown beside its widget.
    The declaration is the one source for validation (:meth:`validate`), the Variants page's
    widget and the values the Sweeps page offers (:attr:`sweep_values`).

    >>> p = Param("rate", 0.1, "probability per letter", min=0.0, max=1.0)
    >>> p.type.__name__, p.bounds, p.validate(1, "typo_Q")
    ('float', (0.0, 1.0), 1.0)
    >>> p.validate(1.5, "typo_Q")
    Traceback (most recent call last):
    ...
    core.perturb.base.PerturbationError: typo_Q: parameter 'rate' must be in [0.0, 1.0], got 1.5
    >>> Param("layout", "qwertz", choices=("qwerty", "qwertz")).sweep_values
    ('qwerty', 'qwertz')
    >>> Param("n_words", 1, min=1, max=4).sweep_values, Param("p", 0.25, min=0.0, max=1.0).sweep_values
    ((1, 2, 3, 4), ())
    >>> Param("mlm_model", "").names_a_resource
    True
    >>> Param("min_frequency", 500, min=0, max=10**9, step=100).widget_step, Param("n", 2).widget_step
    (100, 1)
    >>> Param("p", 0.25, min=0.0, max=1.0).widget_step, Param("t", 5.0, min=0.0, max=10.0).widget_step
    (0.01, 0.1)
    >>> Param("p", 0.25, min=0.0, max=1.0, step=2.0)
    Traceback (most recent call last):
    ...
    TypeError: parameter 'p': step must be a number above 0 and at most max - min, got 2.0
    """

    name: str
    default: Any
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    step: float | None = None

    def __post_init__(self) -> None:
        if type(self.default) not in PARAM_TYPES:
            raise TypeError(f"parameter {self.name!r}: default must be a bool, int, float or str, "
                            f"got {self.default!r}")
        if self.choices is not None:
            if self.type is not str or self.min is not None or self.max is not None:
                raise TypeError(f"parameter {self.name!r}: choices are for str parameters, without min/max")
            object.__setattr__(self, "choices", tuple(self.choices))
        if (self.min is None) != (self.max is None):
            raise TypeError(f"parameter {self.name!r}: give both min and max, or neither")
        if self.min is not None and (self.type not in (int, float) or self.min > self.max):
            raise TypeError(f"parameter {self.name!r}: min <= max bounds are for numbers")
        if self.step is not None:
            self._check_step()
        self.validate(self.default, f"parameter {self.name!r} default")

    def _check_step(self) -> None:
        """A step is for numbers: above 0, whole for an int, no wider than the bounds."""
        if self.type not in (int, float):
            raise TypeError(f"parameter {self.name!r}: a step is for numbers")
        number = isinstance(self.step, (int, float)) and not isinstance(self.step, bool)
        whole = self.type is float or isinstance(self.step, int)
        if not (number and whole and self.step > 0 and (self.min is None or self.step <= self.max - self.min)):
            raise TypeError(f"parameter {self.name!r}: step must be a{' whole' if self.type is int else ''} number "
                            f"above 0 and at most max - min, got {self.step!r}")

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def bounds(self) -> tuple | None:
        """``(min, max)``, the ``choices``, or None: what ``param_ranges`` held before declarations."""
        if self.choices is not None:
            return self.choices
        return None if self.min is None else (self.min, self.max)

    @property
    def widget_step(self) -> float | int | None:
        """The step a widget moves by: the declared ``step``, else 1 for an int, 0.01 for a float
        bounded within 2 (probabilities, similarities), 0.1 for a wider one, 0.01 unbounded; None
        for a bool or str."""
        if self.type not in (int, float):
            return None
        if self.step is not None:
            return self.step
        if self.type is int:
            return 1
        return 0.1 if self.min is not None and self.max - self.min > 2 else 0.01

    @property
    def sweep_values(self) -> tuple:
        """The values a sweep offers to pick several of: every int in the bounds (at most
        :data:`MAX_SWEEP_INTS` of them), or the choices; () when one value is set (bools, floats,
        unbounded or widely bounded numbers, free text). A bound like ``max=10**9`` says "any
        count", not "offer a billion values": listing them would exhaust the server's memory.

        >>> Param("min_frequency", 500, min=0, max=10**9).sweep_values
        ()
        >>> Param("senses", 1, min=1, max=9, step=4).sweep_values
        (1, 5, 9)
        """
        if self.choices is not None:
            return self.choices
        if self.type is int and self.min is not None and (self.max - self.min) // self.widget_step < MAX_SWEEP_INTS:
            return tuple(range(int(self.min), int(self.max) + 1, int(self.widget_step)))
        return ()

    @property
    def names_a_resource(self) -> bool:
        """Whether the value names a model, file or folder (set on the server, not in a browser)."""
        return self.type is str and self.choices is None and names_a_resource(self.name)

    def validate(self, value: Any, owner: str) -> Any:
        """``value`` checked against the declaration (an int given for a float becomes a float);
        :class:`PerturbationError` naming ``owner`` (the perturbation id) otherwise."""
        if self.type is bool:
            ok = isinstance(value, bool)
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.type is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        else:
            ok = isinstance(value, str)
        if not ok:
            # "p=0.3+qwen": a "+" starts a chained step only before a perturbation id (a value may
            # hold one: espeak-ng:en-us+f3), so an unknown id after it reads as part of the value
            after = value.rpartition("+")[2] if isinstance(value, str) and "+" in value else ""
            hint = (f" ('+{after}' does not start a chained step: {after!r} is not a perturbation id)"
                    if after else "")
            raise PerturbationError(f"{owner}: parameter {self.name!r} must be {self.type.__name__}, "
                                    f"got {value!r}{hint}")
        if self.choices is not None and value not in self.choices:
            raise PerturbationError(f"{owner}: parameter {self.name!r} must be one of {self.choices}, got {value!r}")
        if self.min is not None and not (self.min <= value <= self.max):
            raise PerturbationError(
                f"{owner}: parameter {self.name!r} must be in [{self.min}, {self.max}], got {value!r}")
        return value


# ----------------------------------------------------------------------------------- perturbations


@dataclass(frozen=True)
class Edit:
    """One change to a field: replace ``text[start:end]`` of the ORIGINAL field text by ``replacement``.

    ``start == end`` is an insertion, an empty ``replacement`` a deletion. ``kind`` names the change
    for display (e.g. ``"delete_char"``, ``"keyboard"``, ``"drop_word"``).
    """

    start: int
    end: int
    replacement: str
    kind: str

    def __post_init__(self) -> None:
        if not (isinstance(self.start, int) and isinstance(self.end, int)):
            raise PerturbationError(f"Edit offsets must be ints, got start={self.start!r} end={self.end!r}")
        if self.start < 0 or self.end < self.start:
            raise PerturbationError(f"Edit needs 0 <= start <= end, got start={self.start} end={self.end}")
        if not isinstance(self.replacement, str):
            raise PerturbationError(f"Edit replacement must be a str, got {type(self.replacement).__name__}")


@dataclass
class Variant:
    """One perturbed version of an example."""

    text: str                 # the perturbed field text
    field: str                # "question" | "context"
    example: QAExample        # the full perturbed example (answer offsets shifted for context edits)
    edits: list[Edit]         # what changed, offsets into the original field text
    meta: dict = dc_field(default_factory=dict)   # perturbation id, params, what was chosen
    cer: float = 0.0          # character error rate vs the original field text (jiwer)
    wer: float = 0.0          # word error rate vs the original field text (jiwer)


class Perturbation(abc.ABC):
    """A named, documented way of corrupting one field of a QA example.

    Subclasses set the class attributes, declare ``parameters`` (a tuple of :class:`Param`), may
    say why they cannot run on an example in :meth:`_why_not`, and implement :meth:`_apply`.
    ``default_params`` and ``param_ranges`` are derived from the declarations (read-only views for
    the code that lists or fills parameters); a subclass that sets them itself is refused.
    """

    id: ClassVar[str]
    family: ClassVar[str]
    field: ClassVar[str]
    languages: ClassVar[tuple[str, ...] | None] = None     # None = any language
    randomised: ClassVar[bool] = True                      # False: sweeps run it once
    # True when _why_not depends on the question itself (natural_Q: only the ids its set holds), so
    # it can run on part of a data set; the others' reasons are their language and resources.
    depends_on_question: ClassVar[bool] = False
    description: ClassVar[str] = ""
    parameters: ClassVar[tuple[Param, ...]] = ()
    source: ClassVar[str] = ""
    default_params: ClassVar[dict[str, Any]] = {}          # derived from ``parameters``
    param_ranges: ClassVar[dict[str, tuple]] = {}          # derived from ``parameters``

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for legacy in ("default_params", "param_ranges"):
            if legacy in cls.__dict__:
                raise TypeError(f"{cls.__name__} sets {legacy}: declare parameters = (Param(...), ...) instead")
        if "apply" in cls.__dict__ or "__call__" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides apply: the template is fixed, implement _apply instead")
        names = [p.name for p in cls.parameters]
        if len(set(names)) != len(names) or not all(isinstance(p, Param) for p in cls.parameters):
            raise TypeError(f"{cls.__name__}.parameters must be Param declarations with distinct names")
        cls.default_params = {p.name: p.default for p in cls.parameters}
        cls.param_ranges = {p.name: p.bounds for p in cls.parameters if p.bounds is not None}

    @classmethod
    def config_spec(cls) -> dict[str, Param]:
        """The declared parameters by name, in declaration order (LIT's ``config_spec``).

        >>> from core.perturb import registry
        >>> {name: (p.default, len(p.bounds)) for name, p in registry.get("typo_Q").config_spec().items()}
        {'rate': (0.1, 2), 'layout': ('qwertz', 8)}
        """
        return {p.name: p for p in cls.parameters}

    @classmethod
    def check_definition(cls) -> None:
        """Raise TypeError if the class attributes are missing or invalid (the registry calls this)."""
        for name in ("id", "family", "field", "description", "source"):
            if not isinstance(getattr(cls, name, None), str):
                raise TypeError(f"{cls.__name__} must define class attribute {name!r} (a str)")
        if cls.field not in FIELDS:
            raise TypeError(f"{cls.__name__}.field must be one of {FIELDS}, got {cls.field!r}")
        if cls.family not in FAMILIES:
            raise TypeError(f"{cls.__name__}.family must be one of {FAMILIES}, got {cls.family!r}")

    def resolve_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The declared defaults updated with ``params``, each validated by its :class:`Param`."""
        spec = self.config_spec()
        unknown = sorted(set(params) - set(spec))
        if unknown:
            raise PerturbationError(f"{self.id}: unknown parameter(s) {unknown}; accepted: {sorted(spec)}")
        return {name: p.validate(params[name], self.id) if name in params else p.default
                for name, p in spec.items()}

    # ------------------------------------------------------------------ "why can it not run here"

    def why_not(self, example: QAExample, params: dict[str, Any] | None = None) -> str | None:
        """None when this perturbation can run on ``example`` with ``params`` (the defaults when
        None), else one sentence saying why not: the one protocol callers ask before ``apply``.

        The language comes first (``languages``), then the subclass's :meth:`_why_not`.
        """
        return self._reason(example, self.resolve_params(params or {}))

    def why_not_before_loading(self, example: QAExample, params: dict[str, Any] | None = None) -> str | None:
        """:meth:`why_not` as far as it can be told without loading a tagger, an encoder or a
        voice: the language, and the subclass's reason only when it ``depends_on_question`` (a
        form asks this while the user is still choosing; the run asks :meth:`why_not`)."""
        return self._before_loading(example, self.resolve_params(params or {}))

    def _before_loading(self, example: QAExample, resolved: dict[str, Any]) -> str | None:
        if self.depends_on_question or (self.languages is not None and example.lang not in self.languages):
            return self._reason(example, resolved)
        return None

    def nothing_to_change(self, example: QAExample, params: dict[str, Any] | None = None) -> str | None:
        """Why ``example``'s own text leaves this perturbation nothing to change (a case change on a
        question without a letter that has case, keyboard noise on one without a letter of the
        keyboard), or None when it may change something.

        Told from the text alone, so a form asks it for every planned question before a sweep (a
        Chinese question gives the case perturbations nothing, whole languages fall out); where it
        gives a reason, :meth:`apply` returns None, and the sweep stores this sentence as the note.
        Unlike :meth:`why_not` it is no refusal: ``apply`` may still be called.
        """
        return self._nothing_to_change(example, self.resolve_params(params or {}))

    def before_running(self, examples: Sequence[QAExample], params: dict[str, Any] | None = None) -> list[str | None]:
        """For each of ``examples``: :meth:`why_not_before_loading`, else :meth:`nothing_to_change`
        (None where it may run and change something), with ``params`` resolved once for them all:
        what the Sweeps page asks of every planned question on every rerun."""
        resolved = self.resolve_params(params or {})
        return [self._before_loading(ex, resolved) or self._nothing_to_change(ex, resolved) for ex in examples]

    def _nothing_to_change(self, example: QAExample, params: dict[str, Any]) -> str | None:
        """The subclass's side of :meth:`nothing_to_change`: cheap, loading nothing; never a reason
        where ``_apply`` could give a variant."""
        return None

    def is_compatible(self, example: QAExample) -> bool:
        """Whether this perturbation can run on ``example`` with its default parameters (LIT's name)."""
        return self.why_not(example) is None

    def _reason(self, example: QAExample, resolved: dict[str, Any]) -> str | None:
        if self.languages is not None and example.lang not in self.languages:
            return f"{self.id} supports languages {', '.join(self.languages)}, not {example.lang!r}"
        return self._why_not(example, resolved)

    def _why_not(self, example: QAExample, params: dict[str, Any]) -> str | None:
        """Why this perturbation cannot run on ``example`` with resolved ``params`` (a missing
        tagger, translator, voice, word list ...), or None. The language is checked already."""
        return None

    # ------------------------------------------------------------------------------- the template

    def prepare(self, examples: Iterable[QAExample], **params: Any) -> None:
        """Get ready for a batch (round-trip translation translates it all at once); by default nothing."""

    def apply(self, example: QAExample, rng: random.Random, **params: Any) -> list[Variant] | None:
        """Perturb ``example`` (never mutated): its variants, or None when there is nothing to change.

        Resolves ``params`` once, raises :class:`NotApplicable` with :meth:`why_not`'s reason when
        the perturbation cannot run here, calls :meth:`_apply`, then checks the variants and drops
        repeats of one text. Subclasses implement ``_apply``, never this.
        """
        resolved = self.resolve_params(params)
        reason = self._reason(example, resolved)
        if reason is not None:
            raise NotApplicable(reason)
        return self._checked(self._apply(example, rng, resolved))

    def __call__(self, example: QAExample, rng: random.Random, **params: Any) -> list[Variant] | None:
        return self.apply(example, rng, **params)

    @abc.abstractmethod
    def _apply(self, example: QAExample, rng: random.Random, params: dict[str, Any]) -> list[Variant] | None:
        """The perturbation itself, with validated ``params``, on an example it can run on."""

    def _checked(self, variants: Sequence[Variant] | None) -> list[Variant] | None:
        if variants is None:
            return None
        out, seen = [], set()
        for v in variants:
            if not isinstance(v, Variant) or v.field != self.field:
                raise TypeError(f"{self.id} must return Variants of its field {self.field!r}, got {v!r}")
            if v.text not in seen:
                seen.add(v.text)
                out.append(v)
        return out or None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r} field={self.field!r}>"


# --------------------------------------------------------------------------------------------- edits


def _check_field(field: str) -> None:
    if field not in FIELDS:
        raise PerturbationError(f"field must be one of {FIELDS}, got {field!r}")


def _sorted_checked(text: str, edits: Iterable[Edit]) -> list[Edit]:
    """Edits sorted by position (stable, so insertions at one point keep their order), checked."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    previous_end = 0
    for edit in ordered:
        if edit.end > len(text):
            raise PerturbationError(f"edit {edit} ends past the end of the text (length {len(text)})")
        if edit.start < previous_end:
            raise PerturbationError(f"edits overlap at offset {edit.start}: {edit}")
        previous_end = edit.end
    return ordered


def splice(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` (offsets into ``text``, not overlapping) written in.

    >>> splice("Who won the game?", [Edit(12, 16, "match", "synonym"), Edit(0, 3, "Which team", "x")])
    'Which team won the match?'
    >>> splice("ab", [Edit(0, 2, "x", "k"), Edit(1, 2, "y", "k")])
    Traceback (most recent call last):
    ...
    core.perturb.base.PerturbationError: edits overlap at offset 1: Edit(start=1, end=2, replacement='y', kind='k')
    """
    pieces, cursor = [], 0
    for edit in _sorted_checked(text, edits):
        pieces.append(text[cursor:edit.start])
        pieces.append(edit.replacement)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def edit_touches_span(edit: Edit, start: int, end: int) -> bool:
    """Whether ``edit`` changes any character of ``[start, end)`` or inserts strictly inside it.

    An insertion exactly at ``start`` or ``end`` leaves the span's text intact (it only moves it).
    """
    if edit.start == edit.end:
        return start < edit.start < end
    return edit.start < end and edit.end > start


def map_offset(offset: int, ordered: list[Edit], *, side: str) -> int:
    """Position in the edited text of original ``offset``, the ``side`` ("start"/"end") of a span.

    An insertion exactly at a span's start goes before the span; one exactly at its end goes after
    it. An offset strictly inside a replaced range snaps to the start (for a span start) or the end
    (for a span end) of that range's replacement.
    """
    shift = 0
    for edit in ordered:
        is_insertion = edit.start == edit.end
        if edit.end < offset or (edit.end == offset and (not is_insertion or side == "start")):
            shift += len(edit.replacement) - (edit.end - edit.start)
        elif edit.start >= offset:
            break
        else:
            return edit.start + shift + (len(edit.replacement) if side == "end" else 0)
    return offset + shift


def apply_edits(example: QAExample, field: str, edits: list[Edit], protect_answers: bool = True) -> QAExample:
    """A copy of ``example`` with ``edits`` applied to ``field`` (``"question"`` or ``"context"``).

    Edits must not overlap; offsets refer to the original field text. For the context, gold answers
    are shifted exactly; with ``protect_answers`` an edit touching an answer span raises
    :class:`PerturbationError`; without it the answer span is mapped through the edits and its text
    re-read from the new context (so answers stay consistent, though possibly changed).
    """
    _check_field(field)
    text = getattr(example, field)
    ordered = _sorted_checked(text, edits)
    new_text = splice(text, ordered)
    if field == "question":
        return dataclasses.replace(example, question=new_text)

    new_answers = []
    for answer in example.answers:
        start, end = answer.answer_start, answer.answer_start + len(answer.text)
        touching = [e for e in ordered if edit_touches_span(e, start, end)]
        if touching and protect_answers:
            raise PerturbationError(
                f"edit {touching[0]} touches gold answer {answer.text!r} at [{start}, {end}) of example {example.id!r}")
        new_start = map_offset(start, ordered, side="start")
        if not touching:
            new_answers.append(Answer(text=answer.text, answer_start=new_start))
        else:
            new_end = map_offset(end, ordered, side="end")
            new_answers.append(Answer(text=new_text[new_start:max(new_start, new_end)], answer_start=new_start))
    return dataclasses.replace(example, context=new_text, answers=tuple(new_answers))


def diff_edits(old: str, new: str, kind: str) -> list[Edit]:
    """Character-level edits turning ``old`` into ``new`` (difflib opcodes), for whole-text rewrites."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return [Edit(i1, i2, new[j1:j2], kind) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


# ------------------------------------------------------------------------------------------- metrics


def error_rates(reference: str, hypothesis: str) -> tuple[float, float]:
    """(CER, WER) of ``hypothesis`` against ``reference`` with jiwer's default transforms.

    WER splits on whitespace (so for Chinese/Thai it counts whole unsegmented runs). An empty
    reference gives 0.0 if the hypothesis is empty too, else ``inf`` (jiwer refuses it).
    """
    cer = _rate(jiwer.cer, reference, hypothesis, reference.strip() == "")
    wer = _rate(jiwer.wer, reference, hypothesis, not reference.split())
    return cer, wer


def _rate(fn, reference: str, hypothesis: str, empty_reference: bool) -> float:
    if empty_reference:
        return 0.0 if hypothesis.strip() == "" else math.inf
    if hypothesis.strip() == "":
        return 1.0  # every reference unit deleted; jiwer agrees, but avoid relying on its empty handling
    return float(fn(reference=reference, hypothesis=hypothesis))


def make_variant(perturbation: Perturbation, example: QAExample, field: str, edits: list[Edit],
                 meta: dict | None = None) -> Variant:
    """Apply ``edits`` to ``field`` of ``example`` and package the result with its CER/WER.

    ``meta`` gets ``"id"`` (the perturbation id) added in front and ``"changed"`` (whether the text
    differs: a randomised perturbation may, by chance, leave it as it was, e.g. swapping "ll").
    """
    new_example = apply_edits(example, field, edits)
    original, text = getattr(example, field), getattr(new_example, field)
    cer, wer = error_rates(original, text)
    full_meta = {"id": perturbation.id, **(meta or {}), "changed": text != original}
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    return Variant(text=text, field=field, example=new_example, edits=ordered, meta=full_meta, cer=cer, wer=wer)


def make_variant_from_text(perturbation: Perturbation, example: QAExample, field: str, new_text: str,
                           meta: dict | None = None, kind: str = "rewrite") -> Variant:
    """Like :func:`make_variant` for a whole-field rewrite: edits are recovered with :func:`diff_edits`."""
    _check_field(field)
    return make_variant(perturbation, example, field, diff_edits(getattr(example, field), new_text, kind), meta)
