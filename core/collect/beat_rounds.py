"""Rounds and leaderboards of Beat the AI, as Dynabench organises its tasks (issue 43).

A round is a set of models in play and the rule that judged them (the F1 above which a model
matched the author), plus the dates it was played on: every attempt made against the same models
under the same rule (the picker's choice and the Rules' threshold when it was submitted) belongs to
the same round, which runs from its first attempt's day to its last's. A player who changes the rule
plays a round of their own: a win under a stricter rule is not counted beside the class's. Rounds
are numbered in the order they started.

Per round and per author (names compared as core.collect.identity.name_key does):

* **attempts**, and **fooled**: attempts where no model matched the author's answer;
* **validated fooled**: fooled attempts whose validators agreed, by a strict majority, that the
  passage answers the question with the author's answer (Attempt.answerable): the model was wrong
  and people agree; **validated fooling rate** = validated fooled / attempts, None while the
  author's fooling attempts all wait for their first validation (0 % would read as none held);
* **inter-validator agreement**: over the author's attempts with two or more validations, the share
  of pairs of validators who agree with each other (both found no answer, or the word F1 of their
  answers reaches the agreement threshold the validations were made with); None without such an
  attempt.

>>> from core.collect.beat import Attempt, ModelVerdict, Validation
>>> def att(i, user, day, models, won, n_val=0, agree=0):
...     verdicts = tuple(ModelVerdict(m, "", None, None, 0.0, 0.0, not won) for m in models)
...     return Attempt(i, f"2026-11-{day}T10:00:00", user, "s", "p", "d", "t", "en", "c", "q", 0, 1, "a",
...                    0.4, "human" if won else "model", verdicts, n_val, agree)
>>> atts = [att(1, "Ann", 20, ["m1"], True, 2, 2), att(2, "ann", 21, ["m1"], False),
...         att(3, "Bob", 22, ["m1", "m2"], True, 1, 0)]
>>> [(r.number, r.models, r.threshold, r.start, r.end, len(r.attempts)) for r in rounds(atts)]
[(1, ('m1',), 0.4, '2026-11-20', '2026-11-21', 2), (2, ('m1', 'm2'), 0.4, '2026-11-22', '2026-11-22', 1)]
>>> from dataclasses import replace
>>> strict = replace(att(4, "Cy", 22, ["m1"], True), threshold=0.99)
>>> [(r.number, r.threshold, len(r.attempts)) for r in rounds([*atts, strict])]
[(1, 0.4, 2), (2, 0.4, 1), (3, 0.99, 1)]
>>> rounds(atts)[0].label
'Round 1 · a model wins above F1 0.40 · m1 (2026-11-20 – 2026-11-21)'
>>> v = lambda i, who, text: Validation(i, 1, "", who, "s", 0 if text else None, 1 if text else None, text, 1.0,
...                                     0.4, True)
>>> rows = leaderboard(rounds(atts)[0].attempts, {1: [v(1, "Cy", "Paris"), v(2, "Di", "Paris")]})
>>> [(r["author"], r["attempts"], r["fooled"], r["validated fooled"], r["validated fooling rate"],
...   r["inter-validator agreement"]) for r in rows]
[('Ann', 2, 1, 1, 0.5, 1.0)]
>>> [(r["author"], r["fooled"], r["validated fooling rate"])   # Bob's one win waits for a validator
...  for r in leaderboard([att(5, "Bob", 22, ["m1"], True), att(6, "Eve", 22, ["m1"], False)], {})]
[('Bob', 1, None), ('Eve', 0, 0.0)]
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from core.collect.beat import Attempt, Validation, answer_f1
from core.collect.identity import name_key

__all__ = ["Round", "leaderboard", "opening_round", "rounds", "validator_agreement"]


@dataclass
class Round:
    number: int
    models: tuple[str, ...]
    threshold: float      # a model matched the author when its F1 was above this
    start: str            # first attempt's day (YYYY-MM-DD)
    end: str              # last attempt's day
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def label(self) -> str:
        # the number and the rule first: a narrow picker cuts the end of the label
        return (f"Round {self.number} · a model wins above F1 {self.threshold:.2f} · {', '.join(self.models)} "
                f"({self.start} – {self.end})")


def rounds(attempts: Sequence[Attempt]) -> list[Round]:
    """The rounds of ``attempts``, numbered in the order they started."""
    by_rule: dict[tuple[tuple[str, ...], float], list[Attempt]] = {}
    for a in sorted(attempts, key=lambda a: (a.created_at, a.id)):
        by_rule.setdefault((tuple(sorted(m.model for m in a.models)), round(a.threshold, 4)), []).append(a)
    return [Round(i, models, threshold, atts[0].created_at[:10], atts[-1].created_at[:10], atts)
            for i, ((models, threshold), atts) in enumerate(by_rule.items(), start=1)]


def opening_round(played: Sequence[Round], models: Sequence[str], threshold: float) -> Round:
    """The round a leaderboard opens on: the one of the models and rule now chosen, else the one
    with the most attempts (a single player on another language or rule does not hide the class's).

    >>> from core.collect.beat import Attempt, ModelVerdict
    >>> def att(i, models, threshold=0.4):
    ...     v = tuple(ModelVerdict(m, "", None, None, 0.0, 0.0, True) for m in models)
    ...     return Attempt(i, "2026-11-20T10:00:00", "u", "s", "p", "d", "t", "en", "c", "q", 0, 1, "a",
    ...                    threshold, "model", v, 0, 0)
    >>> played = rounds([att(1, ["m1"]), att(2, ["m1"]), att(3, ["de"])])
    >>> opening_round(played, ["de"], 0.4).number, opening_round(played, ["x"], 0.4).number
    (2, 1)
    >>> opening_round(played, ["m1"], 0.9).number
    1
    """
    chosen = (tuple(sorted(models)), round(threshold, 4))
    for r in played:
        if (r.models, round(r.threshold, 4)) == chosen:
            return r
    return max(played, key=lambda r: (len(r.attempts), r.number))


def validator_agreement(validations: Sequence[Validation], lang: str) -> tuple[int, int]:
    """(agreeing pairs, pairs) among the validators of one attempt."""
    agree = pairs = 0
    for a, b in combinations(validations, 2):
        pairs += 1
        if not a.answer_text and not b.answer_text:
            agree += 1
        elif a.answer_text and b.answer_text:
            agree += answer_f1(a.answer_text, b.answer_text, lang) >= min(a.threshold, b.threshold)
    return agree, pairs


def leaderboard(attempts: Sequence[Attempt], validations: Mapping[int, Sequence[Validation]]) -> list[dict[str, Any]]:
    """One row per author of ``attempts`` (a round's), most validated fooled first; ``validations``:
    attempt id -> its validations."""
    per: dict[str, dict[str, Any]] = {}
    for a in attempts:
        row = per.setdefault(name_key(a.user) or a.user, {
            "author": a.user, "attempts": 0, "fooled": 0, "validated fooled": 0, "_agree": 0, "_pairs": 0,
            "_waiting": 0})
        row["attempts"] += 1
        row["fooled"] += a.human_won
        row["_waiting"] += bool(a.human_won and not a.validations)
        row["validated fooled"] += bool(a.human_won and a.answerable)
        vs = validations.get(a.id, ())
        if len(vs) >= 2:
            agree, pairs = validator_agreement(vs, a.lang)
            row["_agree"] += agree
            row["_pairs"] += pairs
    rows = []
    for row in per.values():
        agree, pairs, waiting = row.pop("_agree"), row.pop("_pairs"), row.pop("_waiting")
        unknown = row["fooled"] and waiting == row["fooled"]   # every fooling attempt still unvalidated
        row["validated fooling rate"] = None if unknown else row["validated fooled"] / row["attempts"]
        row["inter-validator agreement"] = agree / pairs if pairs else None
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["validated fooled"], -(r["validated fooling rate"] or 0), r["author"]))
