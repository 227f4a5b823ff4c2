"""Slices of a stored sweep: where do the models lose? (LIT's slices, for QA robustness.)

A slice groups the sweep's examples by one property and recomputes each cell (model x spec) per
group, with N per cell, so "keyboard noise costs 12 F1" becomes "... and 25 on who-questions with
a date answer". Slices (name: what groups the examples):

  wh       the question word: what, which, who, when, where, why, how many/much, how, other
           (English, German, Spanish, Russian and Chinese question words; the first one found)
  answer   the gold answer's type from the spaCy tagger of core.perturb.nlp: person, place,
           organisation, other name, date, number, other (no entity labels for the language:
           number / other name / other from POS tags)
  qlen     question length in words (1-6, 7-10, 11-15, 16+; Chinese words as jieba segments them)
  clen     context length in words (1-99, 100-149, 150-199, 200+)
  overlap  lexical overlap: the share of the question's distinct words (lower-cased) that occur in
           the context (<50%, 50-70%, 70-90%, 90%+)
  paragraph  whether the context is one of XQuAD's 240 paragraphs (SQuAD dev questions: the shipped
           English models trained on the rest of SQuAD dev, so only these have uninflated clean scores)
  cer      the perturbation's edit size, CER of the perturbed field against the original
           (unchanged, <=5%, 5-10%, 10-20%, >20%); a per-variant property, so clean has none

Our choices: the first five are properties of the ORIGINAL example (the question as written, not
as perturbed), so an example sits in the same group for every spec and the groups are comparable
across columns; only ``cer`` depends on the variant. The answer type is read from the answer text
alone (the first gold answer). A cell's clean F1 is measured on the same examples as its perturbed
F1 (those of the group the perturbation applied to), as in core.sweeps.analysis.sweep_cells.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.datasets import normalize_context
from core.datasets.natural import xquad_contexts
from core.perturb.nlp import WORD_RE, analyse, word_spans
from core.question_words import WH_CLASSES, wh_class
from core.sweeps.analysis.sweep_cells import cell_examples, reading, sweep_specs
from core.sweeps.store import Store

__all__ = ["SLICES", "SliceError", "wh_word", "answer_type", "length_bucket", "overlap_bucket", "cer_bucket",
           "example_slices", "slice_cells", "slice_examples", "format_slice"]

SLICES = {"wh": "question word", "answer": "answer type", "qlen": "question length (words)",
          "clen": "context length (words)", "overlap": "question-context word overlap",
          "paragraph": "XQuAD paragraph or not",
          "cer": "edit size (CER of the perturbed field as stored: case and punctuation count)"}
PARAGRAPH_GROUPS = ("XQuAD paragraph", "other paragraph")
QLEN_EDGES = (6, 10, 15)
CLEN_EDGES = (99, 149, 199)
OVERLAP_EDGES = (0.5, 0.7, 0.9)
CER_EDGES = (0.05, 0.10, 0.20)

WH_ORDER = WH_CLASSES
ANSWER_ORDER = ("person", "place", "organisation", "other name", "date", "number", "other")
_ENTITY_TYPES = {"PER": "person", "PERSON": "person", "LOC": "place", "GPE": "place", "FAC": "place",
                 "ORG": "organisation", "DATE": "date", "TIME": "date", "CARDINAL": "number",
                 "QUANTITY": "number", "PERCENT": "number", "MONEY": "number", "ORDINAL": "number"}


class SliceError(ValueError):
    """An unknown slice name."""


def wh_word(question: str, lang: str) -> str:
    """The question word group of ``question`` (:func:`core.question_words.wh_class`; "other" in a
    language without a word list).

    >>> wh_word("How many points did the Panthers score?", "en"), wh_word("Name it.", "en")
    ('how many/much', 'other')
    >>> wh_word("望川桥是什么时候建成的？", "zh"), wh_word("Πόσοι πόντοι;", "el")
    ('when', 'other')
    """
    return wh_class(question, lang) or "other"


def answer_type(answer: str, lang: str, context: str = "", start: int | None = None) -> str:
    """person / place / organisation / other name / date / number / other (see module doc).

    With its ``context`` (and the answer's ``start`` in it, else its first occurrence) the entity
    tagger reads the answer where it stands, in the sentence it was trained to tag: a name alone is
    easily taken for another kind, or for none.

    >>> answer_type("Peyton Manning", "en"), answer_type("February 7, 2016", "en"), answer_type("gold", "en")
    ('person', 'date', 'other')
    >>> c = "After studying in Paris he returned to Dunmere, where he opened a forge."
    >>> answer_type("Dunmere", "en"), answer_type("Dunmere", "en", c)
    ('other', 'place')
    >>> answer_type("24", "de")
    'number'
    """
    if context:
        at = context.find(answer) if start is None or context[start:start + len(answer)] != answer else start
        if answer and at >= 0:
            inside = [t.ent for t in analyse(context, lang).tokens
                      if t.ent and t.start < at + len(answer) and t.end > at]
            if inside:
                return _ENTITY_TYPES.get(max(dict.fromkeys(inside), key=inside.count), "other name")
    tokens = analyse(answer, lang).tokens
    labels = [t.ent for t in tokens if t.ent]
    if labels:
        label = max(dict.fromkeys(labels), key=labels.count)   # most frequent, first on ties
        return _ENTITY_TYPES.get(label, "other name")
    words = [t for t in tokens if any(ch.isalnum() for ch in t.text)]
    if words and all(t.pos == "NUM" or t.text.replace(",", "").replace(".", "").isdigit() for t in words):
        return "number"
    if any(t.pos == "PROPN" for t in words):
        return "other name"
    return "other"


def length_bucket(n_words: int, edges: Sequence[int]) -> str:
    """"1-6", "7-10", ..., "16+" for ``edges`` (6, 10, 15).

    >>> [length_bucket(n, (6, 10, 15)) for n in (1, 6, 7, 15, 16)]
    ['1-6', '1-6', '7-10', '11-15', '16+']
    """
    low = 1
    for edge in edges:
        if n_words <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def overlap_bucket(share: float) -> str:
    """"<50%", "50-70%", "70-90%", "90%+".

    >>> [overlap_bucket(x) for x in (0.0, 0.5, 0.75, 0.9, 1.0)]
    ['<50%', '50-70%', '70-90%', '90%+', '90%+']
    """
    if share < OVERLAP_EDGES[0]:
        return "<50%"
    if share < OVERLAP_EDGES[1]:
        return "50-70%"
    if share < OVERLAP_EDGES[2]:
        return "70-90%"
    return "90%+"


def cer_bucket(cer: float | None, changed: bool | None = True) -> str:
    """"unchanged", "<=5%", "5-10%", "10-20%", ">20%" (CER as a fraction).

    >>> [cer_bucket(x) for x in (0.0, 0.05, 0.07, 0.2, 0.5)]
    ['unchanged', '<=5%', '5-10%', '10-20%', '>20%']
    """
    if cer is None:
        return "unknown"
    if not changed or cer == 0:
        return "unchanged"
    if cer <= CER_EDGES[0]:
        return "<=5%"
    if cer <= CER_EDGES[1]:
        return "5-10%"
    if cer <= CER_EDGES[2]:
        return "10-20%"
    return ">20%"


def _words(text: str, lang: str) -> list[str]:
    """The words of ``text``: jieba's for Chinese and PyThaiNLP's for Thai (core.perturb.nlp.word_spans),
    where the regex would count a whole clause as one word; Japanese has no segmenter here, and
    counts so."""
    try:
        return [text[a:b] for a, b in word_spans(text, lang)]
    except ValueError:
        return WORD_RE.findall(text)


def example_slices(question: str, context: str, answer: str, lang: str) -> dict[str, str]:
    """The group of an original example in each example slice (all but ``cer``).

    >>> example_slices("Who won?", "Denver won the game.", "Denver", "en")["overlap"]
    '50-70%'
    >>> zh = example_slices("望川桥是谁修建的？", "望川桥由周明远于1907年修建。", "周明远", "zh")
    >>> zh["qlen"], zh["overlap"]   # 望川桥 / 是 / 谁 / 修建 / 的: 2 of 5 in the context
    ('1-6', '<50%')
    """
    q_tokens, c_tokens = _words(question, lang), _words(context, lang)
    q_words = {w.lower() for w in q_tokens}
    c_words = {w.lower() for w in c_tokens}
    share = len(q_words & c_words) / len(q_words) if q_words else 0.0
    return {"wh": wh_word(question, lang), "answer": answer_type(answer, lang, context),
            "qlen": length_bucket(len(q_tokens), QLEN_EDGES),
            "clen": length_bucket(len(c_tokens), CLEN_EDGES), "overlap": overlap_bucket(share),
            "paragraph": PARAGRAPH_GROUPS[normalize_context(context) not in xquad_contexts()]}


def _order(slice_name: str) -> list[str]:
    if slice_name == "wh":
        return list(WH_ORDER)
    if slice_name == "answer":
        return list(ANSWER_ORDER)
    if slice_name == "qlen":
        return [length_bucket(e, QLEN_EDGES) for e in (*QLEN_EDGES, QLEN_EDGES[-1] + 1)]
    if slice_name == "clen":
        return [length_bucket(e, CLEN_EDGES) for e in (*CLEN_EDGES, CLEN_EDGES[-1] + 1)]
    if slice_name == "overlap":
        return ["<50%", "50-70%", "70-90%", "90%+"]
    if slice_name == "paragraph":
        return list(PARAGRAPH_GROUPS)
    return ["unchanged", "<=5%", "5-10%", "10-20%", ">20%", "unknown"]


def _check(slice_name: str) -> None:
    if slice_name not in SLICES:
        raise SliceError(f"unknown slice {slice_name!r}; slices: {', '.join(SLICES)}")


def _example_groups(store: Store, sid: int, slice_name: str) -> dict[str, str]:
    """{example hash: group} for an example slice."""
    out = {}
    for r in store.examples_in_order(sid):
        answers = json.loads(r["answers_json"])
        answer = answers[0][0] if answers else ""
        if slice_name == "answer":
            out[r["hash"]] = answer_type(answer, r["lang"], r["context"], answers[0][1] if answers else None)
        elif slice_name == "wh":
            out[r["hash"]] = wh_word(r["question"], r["lang"])
        else:
            out[r["hash"]] = example_slices(r["question"], r["context"], answer, r["lang"])[slice_name]
    return out


@dataclass
class SliceCell:
    """One (group, model, spec) cell of a slice; scores in percent."""

    group: str
    model: str
    perturbation: str          # "" for the clean column
    params_json: str
    label: str
    n: int                     # distinct examples scored in this cell
    clean_f1: float | None
    f1: float | None
    f1_drop: float | None
    clean_em: float | None
    em: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"slice group": self.group, "model": self.model, "spec": self.label, "perturbation": self.perturbation,
                "params": self.params_json, "N": self.n, "clean F1": _r(self.clean_f1), "F1": _r(self.f1),
                "F1 drop": _r(self.f1_drop), "clean EM": _r(self.clean_em), "EM": _r(self.em)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def slice_cells(db: Store | str | Path, sweep: int | str, slice_name: str) -> list[SliceCell]:
    """Every (group, model, spec) cell of ``slice_name``, plus a clean column (label "clean") for the
    example slices. Groups in their natural order, only those with at least one example; a spec's
    F1 per example is averaged over its repeats first (as its cell is)."""
    _check(slice_name)
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        models = store.models(sid)
        specs = sweep_specs(store, sid)
        clean = {(r["model"], r["example_hash"]): (r["em"], r["f1"]) for r in store.clean_scores(sid)}
        groups = None if slice_name == "cer" else _example_groups(store, sid, slice_name)
        # (group, model, perturbation, params_json) -> example -> [(em, f1), ...]
        scored: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
        for r in store.scored_with_noise(sid):
            group = cer_bucket(r["cer"], r["changed"]) if groups is None else groups.get(r["example_hash"])
            if group is not None:
                scored[(group, r["model"], r["perturbation"], r["params_json"])][r["example_hash"]].append(
                    (r["em"], r["f1"]))
    out: list[SliceCell] = []
    present = {k[0] for k in scored} | (set(groups.values()) if groups else set())
    for group in [g for g in _order(slice_name) if g in present]:
        for model in models:
            if groups is not None:
                hashes = [h for h, g in groups.items() if g == group and (model, h) in clean]
                ems = [clean[(model, h)][0] for h in hashes]
                f1s = [clean[(model, h)][1] for h in hashes]
                out.append(SliceCell(group, model, "", "", "clean", len(hashes),
                                     100 * _mean(f1s) if f1s else None, 100 * _mean(f1s) if f1s else None,
                                     0.0 if f1s else None, 100 * _mean(ems) if ems else None,
                                     100 * _mean(ems) if ems else None))
            for s in specs:
                per_ex = scored.get((group, model, s["perturbation"], s["params_json"]), {})
                hashes = [h for h in per_ex if (model, h) in clean]
                if not hashes:
                    out.append(SliceCell(group, model, s["perturbation"], s["params_json"], s["label"], 0,
                                         None, None, None, None, None))
                    continue
                f1 = 100 * _mean([_mean([f for _, f in per_ex[h]]) for h in hashes])
                em = 100 * _mean([_mean([e for e, _ in per_ex[h]]) for h in hashes])
                c_f1 = 100 * _mean([clean[(model, h)][1] for h in hashes])
                c_em = 100 * _mean([clean[(model, h)][0] for h in hashes])
                out.append(SliceCell(group, model, s["perturbation"], s["params_json"], s["label"], len(hashes),
                                     c_f1, f1, c_f1 - f1, c_em, em))
    return out


def slice_examples(db: Store | str | Path, sweep: int | str, slice_name: str, group: str, model: str,
                   perturbation: str, params_json: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The examples behind one slice cell (core.sweeps.analysis.sweep_cells.cell_examples rows of that group),
    largest F1 loss first. For the clean column (``perturbation`` ""), the group's examples with
    their clean answers."""
    _check(slice_name)
    with reading(db) as store:
        sid = store.sweep_id(sweep)
        if perturbation == "":
            if slice_name == "cer":
                return []
            groups = _example_groups(store, sid, slice_name)
            rows = [dict(r) for r in store.clean_answers(sid, model) if groups.get(r["example_hash"]) == group]
            for r in rows:
                r["golds"] = [a[0] for a in json.loads(r.pop("answers_json"))]
            return rows[:limit] if limit else rows
        rows = cell_examples(store, sid, model, perturbation, params_json)
        if slice_name == "cer":
            keep = [r for r in rows if cer_bucket(r.get("cer"), r.get("changed")) == group]
        else:
            groups = _example_groups(store, sid, slice_name)
            keep = [r for r in rows if groups.get(r["example_hash"]) == group]
    return keep[:limit] if limit else keep


def format_slice(cell_list: Sequence[SliceCell], slice_name: str, metric: str = "f1") -> str:
    """A slice as plain text: per model, one row per group, one column per spec, "F1 (N)".

    >>> print(format_slice([SliceCell("who", "m", "", "", "clean", 2, 50.0, 50.0, 0.0, 50.0, 50.0),
    ...                     SliceCell("who", "m", "TLQ", "{}", "TLQ", 2, 50.0, 25.0, 25.0, 50.0, 0.0)], "wh"))
    slice: question word (wh); F1 (N), clean measured on the same examples as each column
    model m
    group  clean     TLQ
    who    50.0 (2)  25.0 (2)
    """
    _check(slice_name)
    key = "f1" if metric == "f1" else "em"
    lines = [f"slice: {SLICES[slice_name]} ({slice_name}); {key.upper()} (N), clean measured on the same "
             "examples as each column"]
    for model in dict.fromkeys(c.model for c in cell_list):
        mine = [c for c in cell_list if c.model == model]
        labels = list(dict.fromkeys(c.label for c in mine))
        groups = list(dict.fromkeys(c.group for c in mine))
        table = {(c.group, c.label): c for c in mine}
        texts = [[_cell_text(table.get((g, lab)), key) for lab in labels] for g in groups]
        widths = [max(len(lab), *(len(row[i]) for row in texts)) for i, lab in enumerate(labels)]
        gw = max(len("group"), *(len(g) for g in groups)) if groups else len("group")
        lines.append(f"model {model}")
        lines.append(f"{'group':<{gw}}  " + "  ".join(f"{lab:<{w}}" for lab, w in zip(labels, widths)).rstrip())
        for g, row in zip(groups, texts):
            lines.append(f"{g:<{gw}}  " + "  ".join(f"{t:<{w}}" for t, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _cell_text(c: SliceCell | None, key: str) -> str:
    if c is None or c.n == 0:
        return "- (0)"
    value = c.f1 if key == "f1" else c.em
    return f"{value:.1f} ({c.n})"
