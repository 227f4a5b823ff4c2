"""Striking examples for a live demo, found in stored sweeps and Beat-the-AI attempts.

Three kinds, each a :class:`Finding` that the Gallery page opens on Ask or Variants:

* **disagree** - the models of a sweep answer the same clean question differently, and one of
  them is right (F1 >= 0.5 against gold) where another is wrong (F1 < 0.5). Ranked by the gap
  between the best and the worst model's F1.
* **flip** - one keystroke (a question variant at Levenshtein distance 1 from the question, case
  included) turns a model's right answer (clean F1 >= 0.5) into a wrong one (F1 < 0.5). Ranked by
  the F1 lost.
* **beaten** - a Beat-the-AI attempt where every model was fooled (``outcome = 'human'``),
  validated ones first.

Everything is read from the stores (read-only: a sweep through its read handle,
core.sweeps.analysis.stored.StoredSweep), nothing is recomputed.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from core.config import shown_dataset
from core.sweeps.analysis.stored import StoredSweep

__all__ = ["Finding", "RIGHT", "disagreements", "one_keystroke_flips", "beaten", "find_all", "export_rows"]

RIGHT = 0.5   # F1 at or above which an answer counts as right


@dataclass(frozen=True)
class Finding:
    kind: str                      # "disagree" | "flip" | "beaten" (or "row": a sweep row opened from Heatmaps)
    title: str                     # one line for the list
    dataset: str                   # the data set name as the pickers offer it ("" for Beat the AI)
    example_id: str
    lang: str
    context: str
    question: str                  # what to ask on Ask (the flipped question for a flip)
    original_question: str         # the item's own question
    golds: tuple[str, ...]
    answers: dict[str, str] = field(default_factory=dict)   # who answered what (model, or "you")
    perturbation: str = ""         # the perturbation of a flip (Variants opens with it chosen)
    strength: float = 0.0          # the ranking key (larger = more striking)
    source: str = ""               # the sweep's name, or "Beat the AI on <its data set>"


def _golds(answers_json: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a[0] for a in json.loads(answers_json)))


def disagreements(sweep: StoredSweep, limit: int = 20) -> list[Finding]:
    """Clean questions of ``sweep`` where one model is right and another wrong."""
    by_example: dict[str, list] = defaultdict(list)
    for r in sweep.clean_answers_by_model():
        by_example[r["example_hash"]].append(r)
    name, dataset = sweep.name, sweep.info["dataset"]
    out = []
    for rows in by_example.values():
        f1s = [r["f1"] for r in rows]
        if len(rows) < 2 or max(f1s) < RIGHT or min(f1s) >= RIGHT:
            continue
        r0 = rows[0]
        best = max(rows, key=lambda r: r["f1"])
        worst = min(rows, key=lambda r: r["f1"])
        out.append(Finding(
            "disagree", f"{best['model']} says “{best['answer']}”, {worst['model']} says “{worst['answer'] or '∅'}”",
            dataset, r0["id"], r0["lang"], r0["context"], r0["question"], r0["question"],
            _golds(r0["answers_json"]), {r["model"]: r["answer"] for r in rows},
            strength=max(f1s) - min(f1s), source=name))
    out.sort(key=lambda f: (-f.strength, f.example_id))
    return out[:limit]


def one_keystroke_flips(sweep: StoredSweep, limit: int = 20) -> list[Finding]:
    """Question variants one character away from the question that turn a right answer wrong."""
    out: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    name, dataset = sweep.name, sweep.info["dataset"]
    for r in sweep.near_question_flips(RIGHT):
        original, variant = r["original_question"], r["variant_question"] or ""
        if Levenshtein.distance(original, variant) != 1:
            continue
        key = (r["example_id"], variant, r["model"])
        if key in seen:
            continue
        seen.add(key)
        out.append(Finding(
            "flip", f"{r['model']}: “{r['clean_answer']}” → “{r['answer'] or '∅'}” after one keystroke "
                    f"({r['perturbation']})",
            dataset, r["example_id"], r["lang"], r["context"], variant, original, _golds(r["gold_json"]),
            {f"{r['model']} (original question)": r["clean_answer"], f"{r['model']} (one keystroke)": r["answer"]},
            perturbation=r["perturbation"], strength=r["clean_f1"] - r["f1"], source=name))
    out.sort(key=lambda f: (-f.strength, f.example_id, f.question))
    return out[:limit]


def beaten(attempts: Iterable, limit: int = 20) -> list[Finding]:
    """Beat-the-AI attempts (core.collect.beat.Attempt) where every model was fooled, validated first."""
    wins = [a for a in attempts if a.human_won and a.answerable is not False]
    wins.sort(key=lambda a: (a.answerable is not True, a.created_at), reverse=False)
    out = []
    for a in wins[:limit]:
        answers = {"you": a.answer_text} | {m.model: m.answer for m in a.models}
        out.append(Finding(
            "beaten", f"{a.user or 'someone'} beat {len(a.models)} model(s): “{a.question}”",
            "", f"attempt {a.id}", a.lang, a.context, a.question, a.question, (a.answer_text,), answers,
            strength=1.0 if a.answerable else 0.5,
            source=f"Beat the AI on {shown_dataset(a.dataset)}" if a.dataset else "Beat the AI"))
    return out


def find_all(db: str | Path | None, sweeps: Iterable[int], attempts: Iterable = (),
             limit: int = 20) -> dict[str, list[Finding]]:
    """Every kind, over the given sweeps of ``db`` and the given attempts, strongest first."""
    found: dict[str, list[Finding]] = {"disagree": [], "flip": [], "beaten": beaten(attempts, limit)}
    for sid in sweeps if db is not None else ():
        sweep = StoredSweep(db, sid)
        found["disagree"] += disagreements(sweep, limit)
        found["flip"] += one_keystroke_flips(sweep, limit)
    for kind in ("disagree", "flip"):
        found[kind] = _once(sorted(found[kind], key=lambda f: -f.strength))[:limit]
    return found


def _once(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once: two sweeps over the same data set and models find the same disagreement
    (and flip); the first (strongest) is kept.

    >>> import dataclasses
    >>> f = Finding("disagree", "t", "d", "q1", "en", "c", "Q?", "Q?", ("A",), {"m": "A", "n": "B"}, source="s1")
    >>> [g.source for g in _once([f, dataclasses.replace(f, source="s2")])]
    ['s1']
    """
    seen, out = set(), []
    for f in findings:
        key = (f.kind, f.dataset, f.example_id, f.question, tuple(sorted(f.answers.items())))
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def export_rows(findings: Iterable[Finding]) -> list[dict]:
    """The findings as flat rows, for the Gallery's CSV and JSON downloads: golds joined by " | ",
    each answerer's answer in a column of its own (``answer: NAME``).

    >>> f = Finding("flip", "t", "demo.en", "q1", "en", "ctx", "Waht?", "What?", ("Paris",),
    ...             {"m1": "Paris", "m2": ""}, "DCRQ", 1.0, "toy")
    >>> export_rows([f])[0]   # doctest: +NORMALIZE_WHITESPACE
    {'kind': 'flip', 'source': 'toy', 'dataset': 'demo.en', 'example_id': 'q1', 'lang': 'en',
     'question': 'Waht?', 'original_question': 'What?', 'perturbation': 'DCRQ', 'gold': 'Paris',
     'strength': 1.0, 'answer: m1': 'Paris', 'answer: m2': '', 'context': 'ctx'}
    """
    return [{"kind": f.kind, "source": f.source, "dataset": f.dataset, "example_id": f.example_id, "lang": f.lang,
             "question": f.question, "original_question": f.original_question, "perturbation": f.perturbation,
             "gold": " | ".join(f.golds), "strength": round(f.strength, 4),
             **{f"answer: {who}": a for who, a in f.answers.items()}, "context": f.context}
            for f in findings]
