"""Beat the AI: adversarial question writing with models in the loop (Bartolo et al. 2020).

A person reads a passage, writes a question and marks its answer span; the chosen models answer
at once. A model **wins** when the word-overlap F1 between its answer and the person's answer is
above a threshold (0.4 in the paper, :data:`WIN_THRESHOLD`, configurable). With several models
in the loop they act as one **ensemble adversary**: the adversary wins if ANY model wins, so the
person wins only by fooling every model (the paper recommends stronger adversaries for harder,
more diverse questions). F1 is the SQuAD v1.1 token F1 (:func:`core.metrics.word_overlap_f1`);
Chinese answers use the character-level F1 of :mod:`core.metrics.chinese` (whitespace tokens
mean nothing there), chosen by :func:`core.metrics.score_answer` from the passage language.

The game is three modules (no Streamlit in any of them):

* this one, the game's logic: :class:`Passage`, :func:`passages` (the distinct contexts of a
  data set, with a stable id: a hash of the text, so the same paragraph has the same id in
  every file and every run); :class:`PassageSampler` (seeded sampling WITHOUT replacement that
  cycles through every passage before repeating any) and :func:`passage_turn`, which keeps a
  player's sampler in their session; span helpers for marking an answer
  (:func:`find_occurrences`, :func:`span_tokens`); :func:`judge` (each model's F1 and win, and
  the overall outcome); the records :class:`Attempt` and :class:`Validation`;
* :mod:`core.collect.beat_store`: the SQLite store of every attempt and every validation,
  committed one at a time, and the SQuAD v1.1 export;
* :mod:`core.collect.beat_stats`: statistics of a collected set against a source data set
  (the paper's Table 3 / Figure 3).

Validation (the paper: a question is kept if another person gives a matching answer): a
validator, not the author, answers a stored question without seeing the author's answer, or
says the passage does not answer it. The validator **agrees** when the F1 between the two
answers is >= :data:`AGREE_THRESHOLD` (0.4, configurable). Per attempt: ``answerable`` when a
strict majority of its validations agree (one agreeing validation is enough; a 1-1 tie is not,
and asks for a third validator), ``flagged`` when any validation disagrees.

Who is "another person" (core/collect/identity.py): an author can never validate their own question.
Each attempt and validation keeps the writer's display name and the hash of their browser's
token; a validation is refused when its browser token matches the author's, or when the names
have the same :func:`core.collect.identity.name_key` (case, accents, invisible characters and
look-alikes such as ``a1ice`` / ``alice`` ignored), and a person (by name key or by browser)
validates a question once. Names are not authentication: this stops honest mistakes and cheap
tricks, not a visitor who clears their cookies and invents a new name.
"""
from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from core.datasets import Dataset
from core.metrics import score_answer
from core.types import Span

__all__ = [
    "WIN_THRESHOLD", "AGREE_THRESHOLD",
    "Passage", "passages", "passage_id", "PassageSampler", "passage_turn",
    "find_occurrences", "span_tokens", "word_tokens", "answer_f1",
    "ModelVerdict", "judge", "Attempt", "Validation",
]

WIN_THRESHOLD = 0.4    # a model wins when F1(model answer, human answer) > this (Bartolo et al.)
AGREE_THRESHOLD = 0.4  # a validator agrees when F1(validator answer, author answer) >= this


# ----------------------------------------------------------------------------------------------
# Passages and the sampler


@dataclass(frozen=True)
class Passage:
    """One context of a data set. ``id`` is :func:`passage_id` of the text."""

    id: str
    context: str
    title: str
    lang: str
    dataset: str


def passage_id(context: str) -> str:
    """A stable id of a passage text: "p" + the first 16 hex digits of its SHA-256.

    >>> passage_id("abc")
    'pba7816bf8f01cfea'
    """
    return "p" + hashlib.sha256(context.encode("utf-8")).hexdigest()[:16]


def passages(dataset: Dataset) -> list[Passage]:
    """The distinct contexts of ``dataset`` in order of first appearance, as Passages (title
    and language from the first example that has the context)."""
    found: dict[str, Passage] = {}
    for ex in dataset.examples:
        if ex.context not in found:
            found[ex.context] = Passage(passage_id(ex.context), ex.context, ex.title, ex.lang,
                                        dataset.name)
    return list(found.values())


@dataclass
class PassageSampler:
    """Random passages without replacement: every passage once per round, in a new order each
    round, so a player does not keep seeing the same few.

    Round ``r`` visits the passages in the order of ``random.Random(f"{seed}:{r}")`` shuffling
    ``range(n)``: a pure function of (seed, round), so the whole state is five integers
    (:meth:`to_state` / :meth:`from_state`, JSON-safe for a Streamlit session). When a new round
    would start with the passage just shown, its first two entries are swapped, so the same
    passage never comes twice in a row (n >= 2).
    """

    n: int
    seed: int
    round: int = 0
    pos: int = 0
    last: int = -1
    _order_cache: tuple[int, list[int]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"a passage sampler needs at least one passage, got n={self.n!r}")

    @classmethod
    def new(cls, n: int, rng: random.Random) -> "PassageSampler":
        """A sampler over ``n`` passages whose seed is drawn from ``rng``."""
        return cls(n=n, seed=rng.getrandbits(63))

    def _order(self) -> list[int]:
        if self._order_cache is None or self._order_cache[0] != self.round:
            self._order_cache = (self.round, self._round_order(self.round))
        return self._order_cache[1]

    def _round_order(self, rnd: int) -> list[int]:
        """Round ``rnd``'s order, a pure function of (seed, round): each round's shuffle, its
        first two swapped when it would start with the previous round's last passage. (Not
        decided from ``last``: a sampler rebuilt from its state in the middle of a round, as
        the page does on every click, would then swap inside the round and repeat a passage.)"""
        prev_last = -1
        for r in range(rnd + 1):
            order = list(range(self.n))
            random.Random(f"{self.seed}:{r}").shuffle(order)
            if self.n > 1 and order[0] == prev_last:
                order[0], order[1] = order[1], order[0]
            prev_last = order[-1]
        return order

    def next(self) -> int:
        """The index of the next passage."""
        if self.pos >= self.n:
            self.round, self.pos = self.round + 1, 0
        idx = self._order()[self.pos]
        self.pos += 1
        self.last = idx
        return idx

    def to_state(self) -> dict[str, int]:
        return {"n": self.n, "seed": self.seed, "round": self.round, "pos": self.pos,
                "last": self.last}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "PassageSampler":
        missing = {"n", "seed", "round", "pos", "last"} - set(state)
        if missing:
            raise ValueError(f"sampler state lacks {sorted(missing)}")
        return cls(n=int(state["n"]), seed=int(state["seed"]), round=int(state["round"]),
                   pos=int(state["pos"]), last=int(state["last"]))


def passage_turn(state: MutableMapping[str, Any], dataset: str, n: int, *, new: bool = False,
                 rng: random.Random | None = None) -> int:
    """The index of the passage a player sees now; the sampler lives in ``state`` (a Streamlit
    session, or any dict) under ``beat_sampler``, ``beat_sampler_for`` and ``beat_passage_idx``.

    A data set not seen before (by ``(dataset, n)``) starts a sampler seeded from ``rng``
    (default: the clock), so each player gets their own order; ``new=True`` moves on to the
    next passage ("New passage"). Otherwise the same passage stays (a Streamlit rerun).

    >>> s = {}
    >>> first = passage_turn(s, "demo", 3, rng=random.Random(0))
    >>> passage_turn(s, "demo", 3) == first
    True
    >>> sorted([first, passage_turn(s, "demo", 3, new=True), passage_turn(s, "demo", 3, new=True)])
    [0, 1, 2]
    """
    if state.get("beat_sampler_for") != (dataset, n):
        sampler = PassageSampler.new(n, rng or random.Random(time.time_ns()))
        state["beat_passage_idx"] = sampler.next()
        state["beat_sampler"], state["beat_sampler_for"] = sampler.to_state(), (dataset, n)
    if new:
        sampler = PassageSampler.from_state(state["beat_sampler"])
        state["beat_passage_idx"] = sampler.next()
        state["beat_sampler"] = sampler.to_state()
    return state["beat_passage_idx"]


# ----------------------------------------------------------------------------------------------
# Tokens and spans

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A word: one CJK ideograph, or a run of other word characters joined by inner - ' ’ . (so
# "best-known", "don't" and "3.5" stay whole); punctuation marks are tokens of their own.
# (Word characters other than CJK are letters, numbers, combining marks and "_": re's \w without
# the marks cut Hindi's words at their vowel signs; regex's V1 sets subtract the ideographs.)
_OTHER = rf"[[\p{{L}}\p{{N}}\p{{M}}_]--[{_CJK}]]"
_WORD = rf"[{_CJK}]|{_OTHER}+(?:[-'’.]{_OTHER}+)*"
_WORD_RE = regex.compile(_WORD, regex.V1)
_TOKEN_RE = regex.compile(rf"{_WORD}|[^\p{{L}}\p{{N}}\p{{M}}_\s]", regex.V1)


def word_tokens(text: str) -> list[str]:
    """The words of ``text`` (punctuation dropped; each CJK ideograph a word of its own).

    >>> word_tokens("Who was the best-known keeper?")
    ['Who', 'was', 'the', 'best-known', 'keeper']
    >>> word_tokens("望川桥建于1907年。")
    ['望', '川', '桥', '建', '于', '1907', '年']
    >>> word_tokens("जेरेड एलन के पास कितने सैक थे?")   # vowel signs inside their words
    ['जेरेड', 'एलन', 'के', 'पास', 'कितने', 'सैक', 'थे']
    """
    return _WORD_RE.findall(text)


def span_tokens(context: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the words and punctuation marks of ``context``: the units
    a person selects an answer from (punctuation apart, so a trailing comma can be left out).

    >>> span_tokens("lit on 14 October 1871, after")
    [(0, 3), (4, 6), (7, 9), (10, 17), (18, 22), (22, 23), (24, 29)]
    """
    return [m.span() for m in _TOKEN_RE.finditer(context)]


def find_occurrences(context: str, text: str) -> list[tuple[int, int]]:
    """Every span [start, end) where ``text`` (stripped) occurs in ``context``, first to last.

    Exact (case-sensitive) matches when there are any, otherwise case-insensitive ones (people
    type "margaret ellison" for "Margaret Ellison"); [] when the text is blank or absent.

    >>> find_occurrences("The tower. the TOWER.", "tower")
    [(4, 9)]
    >>> find_occurrences("The tower. the TOWER.", "the tower")
    [(0, 9), (11, 20)]
    """
    needle = text.strip()
    if not needle:
        return []
    for hay, pat in ((context, needle), (context.casefold(), needle.casefold())):
        if len(hay) != len(context):  # casefold changed lengths (ß -> ss): offsets unusable
            break
        found, i = [], hay.find(pat)
        while i != -1:
            found.append((i, i + len(pat)))
            i = hay.find(pat, i + 1)
        if found:
            return found
    return []


def answer_f1(a: str, b: str, lang: str) -> float:
    """F1 between two answers: SQuAD word-overlap F1, or character-level F1 for Chinese."""
    return score_answer(a, [b], lang)[1]


def check_span(context: str, span: Sequence[int], what: str, lang: str) -> tuple[int, int]:
    if len(span) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in span):
        raise ValueError(f"{what} should be two integer character offsets (start, end), "
                         f"got {span!r}")
    start, end = span
    if not 0 <= start < end <= len(context):
        raise ValueError(f"{what} ({start}, {end}) is not a non-empty range inside the passage "
                         f"of {len(context)} characters")
    text = context[start:end]
    if answer_f1(text, text, lang) == 0.0:
        raise ValueError(f"{what} {text!r} has no words (punctuation and articles alone can "
                         f"never be matched)")
    return start, end


def check_threshold(value: float, what: str, *, allow_zero: bool, allow_one: bool) -> float:
    value = float(value)
    lo_ok = value > 0 or (allow_zero and value == 0)
    hi_ok = value < 1 or (allow_one and value == 1)
    if not (lo_ok and hi_ok):
        lo, hi = ("[0" if allow_zero else "(0"), ("1]" if allow_one else "1)")
        raise ValueError(f"{what} must lie in {lo}, {hi}, got {value}")
    return value


# ----------------------------------------------------------------------------------------------
# Judging an attempt


@dataclass(frozen=True)
class ModelVerdict:
    """One model's answer to an attempt: its span (None offsets = no answer), F1 against the
    person's answer, and whether it won (F1 > threshold)."""

    model: str
    answer: str
    start: int | None
    end: int | None
    score: float | None
    f1: float
    won: bool


def judge(human_answer: str, model_spans: Mapping[str, Span | None], lang: str,
          threshold: float = WIN_THRESHOLD) -> tuple[list[ModelVerdict], str]:
    """Each model's verdict, and the outcome: "model" when ANY model's F1 > ``threshold``
    (the ensemble adversary wins), else "human". A model without an answer (None) has F1 0.

    >>> v, outcome = judge("34 metres", {"a": Span("34 metres tall", 0, 14, 0.9),
    ...                                  "b": Span("granite", 20, 27, 0.5)}, "en")
    >>> [(m.model, round(m.f1, 3), m.won) for m in v], outcome
    ([('a', 0.8, True), ('b', 0.0, False)], 'model')
    """
    threshold = check_threshold(threshold, "the win threshold", allow_zero=True, allow_one=False)
    if not model_spans:
        raise ValueError("at least one model must answer")
    verdicts = []
    for name, span in model_spans.items():
        if span is None:
            verdicts.append(ModelVerdict(name, "", None, None, None, 0.0, False))
            continue
        f1 = answer_f1(span.text, human_answer, lang)
        verdicts.append(ModelVerdict(name, span.text, span.start, span.end, float(span.score),
                                     f1, f1 > threshold))
    return verdicts, ("model" if any(v.won for v in verdicts) else "human")


# ----------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Attempt:
    """A stored attempt, with its model verdicts and a summary of its validations."""

    id: int
    created_at: str
    user: str
    session: str
    passage_id: str
    dataset: str
    title: str
    lang: str
    context: str
    question: str
    answer_start: int
    answer_end: int
    answer_text: str
    threshold: float
    outcome: str  # "human" (every model fooled) or "model" (some model matched)
    models: tuple[ModelVerdict, ...] = ()
    validations: int = 0
    agreements: int = 0
    browser: str = ""  # identity.token_key of the author's browser token ("" before schema 2)

    @property
    def human_won(self) -> bool:
        return self.outcome == "human"

    @property
    def answerable(self) -> bool | None:
        """None before any validation; else True when a strict majority of validators agree."""
        if self.validations == 0:
            return None
        return self.agreements > self.validations - self.agreements

    @property
    def flagged(self) -> bool:
        """Some validator disagreed with the author's answer."""
        return self.agreements < self.validations

    @property
    def validation_status(self) -> str:
        if self.validations == 0:
            return "unvalidated"
        if not self.flagged:
            return "answerable"
        if self.agreements == 0:
            return "not answerable"
        return "answerable (disputed)" if self.answerable else "disputed"


@dataclass(frozen=True)
class Validation:
    """A validator's answer to a stored question. No span (None offsets, empty text) means
    "the passage does not answer it". ``agrees``: F1 with the author's answer >= threshold."""

    id: int
    attempt_id: int
    created_at: str
    validator: str
    session: str
    answer_start: int | None
    answer_end: int | None
    answer_text: str
    f1: float
    threshold: float
    agrees: bool
    browser: str = ""  # identity.token_key of the validator's browser token
