"""The perturbation interface: what a perturbation is, what it returns, and how edits are applied.

Style: LIT's small abstract interface (``is_compatible`` + a generator method) and CheckList's
perturb functions (return a list of variants, or ``None`` when the perturbation does not apply),
with all randomness drawn from an explicit ``random.Random`` passed in by the caller.

Offsets: every :class:`Edit` refers to the ORIGINAL text of one field (question or context).
:func:`apply_edits` applies a set of non-overlapping edits at once and, for the context, shifts the
gold answers' ``answer_start`` exactly (and refuses edits that touch an answer span).
"""
from __future__ import annotations

import abc
import dataclasses
import difflib
import math
import random
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, ClassVar

import jiwer

from core.types import Answer, QAExample

FIELDS = ("question", "context")

FAMILIES = (
    "character", "word", "sentence", "keyboard", "asr", "mt",
    "paraphrase", "artefact", "case", "punctuation", "repair",
)


class PerturbationError(ValueError):
    """A perturbation was misused: bad parameters, overlapping edits, an edit inside a gold answer."""


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

    Subclasses set the class attributes and implement :meth:`apply`. Parameters are passed as
    keyword arguments to ``apply``; :meth:`resolve_params` merges them with ``default_params`` and
    validates them (unknown names, wrong types and values outside ``param_ranges`` raise
    :class:`PerturbationError`).
    """

    id: ClassVar[str]
    family: ClassVar[str]
    field: ClassVar[str]
    languages: ClassVar[tuple[str, ...] | None] = None     # None = any language
    randomised: ClassVar[bool] = True                      # False: sweeps run it once
    description: ClassVar[str] = ""
    default_params: ClassVar[dict[str, Any]] = {}
    # Optional inclusive (min, max) bounds for numeric params, or a tuple of allowed values for str params.
    param_ranges: ClassVar[dict[str, tuple]] = {}
    source: ClassVar[str] = ""

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
        unknown = set(cls.param_ranges) - set(cls.default_params)
        if unknown:
            raise TypeError(f"{cls.__name__}.param_ranges names unknown params {sorted(unknown)}")

    def is_compatible(self, example: QAExample) -> bool:
        """Whether this perturbation can run on ``example`` (by default: the language is supported)."""
        return self.languages is None or example.lang in self.languages

    def resolve_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``default_params`` updated with ``params``, validated."""
        unknown = sorted(set(params) - set(self.default_params))
        if unknown:
            raise PerturbationError(
                f"{self.id}: unknown parameter(s) {unknown}; accepted: {sorted(self.default_params)}")
        resolved = dict(self.default_params)
        resolved.update(params)
        for name, value in resolved.items():
            default = self.default_params[name]
            if isinstance(default, bool):
                ok = isinstance(value, bool)
            elif isinstance(default, int):
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif isinstance(default, float):
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
                if ok:
                    value = resolved[name] = float(value)
            else:
                ok = isinstance(value, type(default))
            if not ok:
                raise PerturbationError(
                    f"{self.id}: parameter {name!r} must be {type(default).__name__}, got {value!r}")
            bounds = self.param_ranges.get(name)
            if bounds is None:
                continue
            if isinstance(value, str):
                if value not in bounds:
                    raise PerturbationError(f"{self.id}: parameter {name!r} must be one of {bounds}, got {value!r}")
            elif not (bounds[0] <= value <= bounds[1]):
                raise PerturbationError(
                    f"{self.id}: parameter {name!r} must be in [{bounds[0]}, {bounds[1]}], got {value!r}")
        return resolved

    @abc.abstractmethod
    def apply(self, example: QAExample, rng: random.Random, **params: Any) -> list[Variant] | None:
        """Perturb ``example``; ``None`` when it does not apply (no verb, no umlaut...). Never mutates it."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r} field={self.field!r}>"


# --------------------------------------------------------------------------------------------- edits


def _check_field(field: str) -> None:
    if field not in FIELDS:
        raise PerturbationError(f"field must be one of {FIELDS}, got {field!r}")


def _sorted_checked(text: str, edits: list[Edit]) -> list[Edit]:
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


def edit_touches_span(edit: Edit, start: int, end: int) -> bool:
    """Whether ``edit`` changes any character of ``[start, end)`` or inserts strictly inside it.

    An insertion exactly at ``start`` or ``end`` leaves the span's text intact (it only moves it).
    """
    if edit.start == edit.end:
        return start < edit.start < end
    return edit.start < end and edit.end > start


def _map_offset(offset: int, ordered: list[Edit], *, side: str) -> int:
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
    ordered = _sorted_checked(text, list(edits))
    pieces, cursor = [], 0
    for edit in ordered:
        pieces.append(text[cursor:edit.start])
        pieces.append(edit.replacement)
        cursor = edit.end
    pieces.append(text[cursor:])
    new_text = "".join(pieces)
    if field == "question":
        return dataclasses.replace(example, question=new_text)

    new_answers = []
    for answer in example.answers:
        start, end = answer.answer_start, answer.answer_start + len(answer.text)
        touching = [e for e in ordered if edit_touches_span(e, start, end)]
        if touching and protect_answers:
            raise PerturbationError(
                f"edit {touching[0]} touches gold answer {answer.text!r} at [{start}, {end}) of example {example.id!r}")
        new_start = _map_offset(start, ordered, side="start")
        if not touching:
            new_answers.append(Answer(text=answer.text, answer_start=new_start))
        else:
            new_end = _map_offset(end, ordered, side="end")
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
