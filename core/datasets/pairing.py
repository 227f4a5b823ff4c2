"""Pairing a challenge set with its original data set: by id, else by position, only where both
are the same item (:func:`pair_challenge`), as sweeps and make_challenge read challenge files."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from core.datasets.squad import Dataset, DatasetError
from core.types import QAExample

__all__ = ["PAIR_RULES", "CONTEXT_SIMILARITY", "Pairing", "contexts_agree", "disagreement", "pair_challenge",
           "legacy_rule", "normalize_context"]


def normalize_context(text: str) -> str:
    """A context in the form used to match paragraphs across files: NFC, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


PAIR_RULES = ("auto", "id", "position")
# An edited copy of a context (a context perturbation) still "agrees" with its original down to
# this rapidfuzz similarity (0-1); two different paragraphs of one article score far lower.
CONTEXT_SIMILARITY = 0.8


@dataclass
class Pairing:
    """Original/challenge example pairs, and the proof that they are the same items.

    ``rule``: "id" or "position" (how they were paired). ``mismatched``: (original id,
    challenge id, why) of the candidate pairs the rule found but refused to join (different
    contexts or gold answers); ``unmatched_original`` / ``unmatched_challenge``: ids the rule
    found no partner for. ``context_mismatches`` lists original ids whose (agreeing) challenge
    example has an edited context (a question-only set such as NoiseQA has none).
    ``verified`` is False only for cross-language pairing (:func:`pair_challenge` ``verify``).
    """

    pairs: list[tuple[QAExample, QAExample]]
    unmatched_original: list[str]
    unmatched_challenge: list[str]
    rule: str
    context_mismatches: list[str] = field(default_factory=list)
    mismatched: list[tuple[str, str, str]] = field(default_factory=list)
    verified: bool = True

    @property
    def counts(self) -> dict[str, int]:
        return {"paired": len(self.pairs), "mismatched": len(self.mismatched),
                "unpaired": len(self.unmatched_original) + len(self.unmatched_challenge)}

    def summary(self) -> str:
        """One line: the rule and the counts, e.g. ``paired by position: 3 paired, 0
        mismatched, 0 unpaired``."""
        c = self.counts
        line = (f"paired by {self.rule}{'' if self.verified else ' (not checked: contexts in another language)'}"
                f": {c['paired']:,} paired, {c['mismatched']:,} mismatched, {c['unpaired']:,} unpaired")
        if c["unpaired"]:
            line += (f" ({len(self.unmatched_original):,} original, "
                     f"{len(self.unmatched_challenge):,} challenge)")
        return line

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, **self.counts, "verified": self.verified,
                "first_mismatches": [list(m) for m in self.mismatched[:5]]}


def _norm_answer(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def contexts_agree(a: str, b: str) -> bool:
    """The same paragraph: equal up to whitespace, or an edited copy (rapidfuzz similarity at
    least CONTEXT_SIMILARITY).

    >>> contexts_agree("The cat sat on the mat.", "The cat sat  on teh mat.")
    True
    >>> contexts_agree("The cat sat on the mat.", "Paris is the capital of France.")
    False
    """
    if a == b or normalize_context(a) == normalize_context(b):
        return True
    from rapidfuzz.fuzz import ratio

    return ratio(a, b, score_cutoff=100 * CONTEXT_SIMILARITY) > 0


def disagreement(original: QAExample, challenge: QAExample) -> str | None:
    """Why two examples are not the same item (None when they are): their contexts differ, or
    both have gold answers and share none (compared lower-cased, without punctuation)."""
    if not contexts_agree(original.context, challenge.context):
        return "different contexts"
    if original.answers and challenge.answers:
        mine = {_norm_answer(a.text) for a in original.answers}
        if not mine & {_norm_answer(a.text) for a in challenge.answers}:
            return (f"different gold answers ({original.answers[0].text[:40]!r} vs "
                    f"{challenge.answers[0].text[:40]!r})")
    return None


def _candidates(original: Dataset, challenge: Dataset, rule: str):
    """(candidate pairs, unmatched original ids, unmatched challenge ids) of one rule, or None
    when the rule cannot apply (no shared id; different sizes)."""
    if rule == "id":
        shared = original.by_id.keys() & challenge.by_id.keys()
        if not shared:
            return None
        return ([(o, challenge.by_id[o.id]) for o in original.examples if o.id in shared],
                [o.id for o in original.examples if o.id not in shared],
                [c.id for c in challenge.examples if c.id not in shared])
    if len(original) != len(challenge):
        return None
    return list(zip(original.examples, challenge.examples)), [], []


def _first(mismatched: list[tuple[str, str, str]], rule: str, n: int = 3) -> str:
    shown = "; ".join(f"{o}" + (f" / {c}" if c != o else "") + f": {why}" for o, c, why in mismatched[:n])
    return f"{len(mismatched):,} {'shared ids' if rule == 'id' else 'positions'} join different items (first: {shown})"


def pair_challenge(original: Dataset, challenge: Dataset, pair_by: str = "auto", *,
                   verify: bool = True) -> Pairing:
    """Pair each original example with its challenge (perturbed) version, and prove the pairs
    are the same items: a pair is joined only when :func:`disagreement` finds nothing.

    ``pair_by="auto"``: by id when ids are shared and every id-pair agrees; else by position
    (the i-th with the i-th) when both sets have the same size and every position agrees; else
    DatasetError naming the first mismatches of each rule. ``"id"`` / ``"position"`` force a
    rule: pairs that disagree are dropped and counted in ``mismatched``; DatasetError when the
    rule cannot apply or no pair is left. ``verify=False`` (cross-language sets whose contexts
    are translations, core.translate.natural_mt) pairs by id without the check.
    """
    if pair_by not in PAIR_RULES:
        raise ValueError(f"pair_by must be one of {', '.join(PAIR_RULES)}, not {pair_by!r}")
    where = (f"cannot pair {original.name!r} ({len(original)} questions) with {challenge.name!r} "
             f"({len(challenge)} questions)")
    if not verify:
        found = _candidates(original, challenge, "id")
        if found is None:
            raise DatasetError(f"{where}: no question id in common")
        pairs, uo, uc = found
        return Pairing(pairs, uo, uc, "id", verified=False)
    why_not: list[str] = []
    forceable = False  # some rule found pairs, only disagreeing ones: forcing it keeps the rest
    for rule in (("id", "position") if pair_by == "auto" else (pair_by,)):
        found = _candidates(original, challenge, rule)
        if found is None:
            why_not.append(f"by {rule}: " + ("no question id in common" if rule == "id" else
                                             "the files have different numbers of questions"))
            continue
        candidates, uo, uc = found
        good, bad = [], []
        for o, c in candidates:
            why = disagreement(o, c)
            if why is None:
                good.append((o, c))
            else:
                bad.append((o.id, c.id, why))
        forceable = forceable or bool(good)
        if bad and (pair_by == "auto" or not good):
            why_not.append(f"by {rule}: {_first(bad, rule)}")
            continue
        return Pairing(good, uo, uc, rule, [o.id for o, c in good if o.context != c.context], bad)
    hint = ("" if pair_by != "auto" or not forceable
            else "; --pair-by id|position forces a rule and drops the pairs that disagree")
    raise DatasetError(f"{where}: {' | '.join(why_not)}{hint}")


def legacy_rule(original: Dataset, challenge: Dataset) -> str | None:
    """The rule pairing used before pairs were checked (id when any id is shared, else position
    for equal sizes): a sweep whose pairing is unchanged keeps its stored cache keys."""
    if original.by_id.keys() & challenge.by_id.keys():
        return "id"
    return "position" if len(original) == len(challenge) else None
