"""Loading, validating, pairing and listing extractive-QA data sets (SQuAD v1.1/v2.0 JSON).

One reader covers every file the product uses: SQuAD, XQuAD, MLQA, the NoiseQA challenge sets,
CMRC 2018, TyDi QA GoldP, SQuAD-Shifts, DuReader-style files and the bundled demo set. They all
share the SQuAD layout ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id",
"question", "answers": [{"text", "answer_start"}], "is_impossible"?}]}]}]}``; extra keys (CMRC's
"evidences", NoiseQA's "context_text", ...) are ignored.

Answer offsets are checked against the text, because real files get them wrong:
  * ``answer_start == -1`` (DuReader style: offset unknown) -> the answer text is searched in the
    context. One occurrence: taken. Several: ambiguous, DatasetError unless
    ``on_ambiguous="first"``. None: see "unlocatable" below.
  * an offset where ``context[start:start+len(text)] != text`` (CMRC 2018 train has 21, dev 7)
    -> repaired to the occurrence nearest the given offset, and counted in the report.
  * unlocatable answers (text not in the context at all): dropped when the question keeps at
    least one locatable answer (CMRC 2018 dev has 193 such extra annotator answers, mostly with
    a final "。" the context lacks), otherwise DatasetError naming the question id.
  * answers with an empty text carry no gold (the rebuilt MLQA test files have only
    ``{"text": "", "answer_start": 0}``): dropped; questions left without any answer (and not
    ``is_impossible``) are kept, counted as "no_gold" in ``stats`` and the report.

Language of the examples, first rule that gives one wins:
  1. the ``lang`` argument;  2. a ``"lang"`` field on the article (the demo set has one);
  3. the file name (``xquad.de.json`` -> de, ``...-context-zh-question-zh...`` -> zh, the context
     language wins in cross-lingual MLQA names because answers are spans of the context;
     ``cmrc``/``dureader`` -> zh);
  4. the script of the text (:func:`core.langid.detect_lang`): a CJK share of >= 30 % of the letters -> zh,
     otherwise the majority script (Arabic, Devanagari, Thai, Cyrillic, Greek, Hangul, Kana).
     Latin script cannot tell English from German or Spanish, so Latin text is taken as "en"
     and the guess is noted in the report.
"""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable

from core import config, safe_json
from core.langid import detect_lang, is_cjk, lang_from_filename
from core.types import Answer, QAExample

__all__ = [
    "DatasetError", "Dataset", "Pairing", "DatasetInfo", "EVAL_ONLY",
    "load_squad", "pair_challenge", "discover_datasets",
    "ON_AMBIGUOUS", "PAIR_RULES", "FORMATS", "contexts_agree", "disagreement", "nearest_occurrence",
    "normalize_context", "eval_contexts", "find_eval_overlap", "squad_dev_minus_xquad",
    "load_demo", "demo_dataset", "DEMO_PATH", "FILE_PREFIX",
    "has_gold", "resolve_data_file", "load_dataset", "sample_examples",
]

DEMO_PATH = Path(__file__).resolve().parents[1] / "assets" / "demo" / "demo.json"

# Data-dir-relative globs of evaluation-only sets: never train on any context found in them.
EVAL_ONLY: tuple[str, ...] = ("xquad/xquad.*.json", "noiseqa/Synthetic/*.json", "eval/mlqa/*.json")

# A data set name (or a sweep spec) ``file:<path under the data directory>`` (core.perturb.spec).
FILE_PREFIX = "file:"

XQUAD_PARAGRAPHS = 240  # XQuAD = 240 SQuAD v1.1 dev paragraphs (Artetxe et al. 2020)


class DatasetError(ValueError):
    """A data file that cannot be read as extractive QA data; the message names the problem."""


# ----------------------------------------------------------------------------------------------
# Dataset


@dataclass
class Dataset:
    """A loaded data set: its examples in file order, plus what the loader had to fix.

    ``report`` holds human-readable warnings (repairs, dropped answers, guessed language);
    ``stats`` the same as counts. ``by_id`` is built once at construction: treat ``examples``
    as read-only afterwards.
    """

    name: str
    lang: str
    examples: list[QAExample]
    report: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    # What the loader recognised (:data:`FORMATS`) and where ``lang`` came from ("given",
    # "articles", "file name", "script of the text"): the one-line report, :meth:`load_line`.
    format: str = "SQuAD v1.1"
    lang_source: str = ""
    by_id: dict[str, QAExample] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.by_id = {}
        for ex in self.examples:
            if ex.id in self.by_id:
                raise DatasetError(f"{self.name}: duplicate question id {ex.id!r}")
            self.by_id[ex.id] = ex

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self):
        return iter(self.examples)

    def load_line(self) -> str:
        """One line saying what was loaded: the format recognised, the size, where the language
        came from, and what the loader repaired, guessed, dropped or cannot score.

        >>> ds = Dataset("demo", "en", [QAExample("1", "Who?", "Ann sang.", (Answer("Ann", 0),))],
        ...              lang_source="given")
        >>> ds.load_line()
        'demo: SQuAD v1.1, 1 question; language en (given); nothing repaired, guessed or dropped'
        """
        n = len(self.examples)
        head = f"{self.name}: {self.format}, {n:,} question{'s' if n != 1 else ''}; language {self.lang}"
        if self.lang_source:
            head += f" ({self.lang_source})"
        parts = []
        groups = (("repaired", ("offsets_recovered", "offsets_repaired")),
                  ("guessed", ("ambiguous_first", "ambiguous_nearest")),
                  ("dropped", ("answers_dropped", "answers_empty")))
        for verb, kinds in groups:
            said = [f"{self.stats[k]} {_Fixes.SHORT[k]}" for k in kinds if self.stats.get(k)]
            if said:
                parts.append(f"{verb}: {', '.join(said)}")
        impossible = sum(ex.is_impossible for ex in self.examples)
        cannot = [f"{impossible} unanswerable (SQuAD 2.0)"] if impossible else []
        if self.stats.get("no_gold"):
            cannot.append(f"{self.stats['no_gold']} without a gold answer")
        if cannot:
            parts.append(f"cannot be scored: {', '.join(cannot)}")
        return f"{head}; {'; '.join(parts) if parts else 'nothing repaired, guessed or dropped'}"

    def contexts(self) -> list[str]:
        """The distinct contexts, in order of first appearance."""
        return list(dict.fromkeys(ex.context for ex in self.examples))

    def to_squad_json(self, path: str | Path | None = None) -> dict[str, Any]:
        """The data set as SQuAD v1.1 JSON (a dict; also written to ``path`` when given).

        Consecutive examples with the same title and language form an article, consecutive
        examples with the same context a paragraph, so a file loaded with :func:`load_squad`
        comes back with its structure. Each article carries a ``"lang"`` field and impossible
        questions an ``"is_impossible": true`` (both ignored by SQuAD readers), so that loading
        the output gives back exactly these examples.
        """
        articles: list[dict[str, Any]] = []
        for ex in self.examples:
            if not articles or (articles[-1]["title"], articles[-1]["lang"]) != (ex.title, ex.lang):
                articles.append({"title": ex.title, "lang": ex.lang, "paragraphs": []})
            paragraphs = articles[-1]["paragraphs"]
            if not paragraphs or paragraphs[-1]["context"] != ex.context:
                paragraphs.append({"context": ex.context, "qas": []})
            qa: dict[str, Any] = {
                "id": ex.id,
                "question": ex.question,
                "answers": [{"text": a.text, "answer_start": a.answer_start} for a in ex.answers],
            }
            if ex.is_impossible:
                qa["is_impossible"] = True
            paragraphs[-1]["qas"].append(qa)
        doc = {"version": "1.1", "data": articles}
        if path is not None:
            Path(path).write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        return doc


# ----------------------------------------------------------------------------------------------
# Loading


def _read_json(source: str | Path | IO, where: str) -> Any:
    try:
        if isinstance(source, (str, Path)):
            raw: str | bytes = Path(source).read_bytes()
        else:
            raw = source.read()
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8-sig")
        # Nesting is checked before parsing: json.loads recurses per level, and a small file
        # nested 100,000 deep would end in a RecursionError instead of a message.
        return safe_json.loads(raw, where="the file")
    except FileNotFoundError:
        raise DatasetError(f"{where}: file not found") from None
    except IsADirectoryError:
        raise DatasetError(f"{where}: is a folder, not a file") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{where}: not UTF-8 text (byte {e.start} cannot be decoded; save the "
                           f"file as UTF-8)") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{where}: not valid JSON ({e})") from None
    except safe_json.JSONLimitError as e:
        raise DatasetError(f"{where}: {e}") from None
    except RecursionError:  # a backstop: the depth check above should make this unreachable
        raise DatasetError(f"{where}: JSON nested too deeply to read") from None


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, path: str) -> Any:
    """obj[key], checked to exist and to have the expected JSON type."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: {path} is not an object (got {type(obj).__name__})")
    if key not in obj:
        raise DatasetError(f"{where}: {path} has no '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        names = " or ".join(k.__name__ for k in _as_tuple(kind))
        raise DatasetError(f"{where}: {path}.{key} should be {names}, got {type(value).__name__}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _occurrences(context: str, text: str) -> list[int]:
    """Every start offset of ``text`` in ``context`` (overlapping ones included)."""
    found, i = [], context.find(text)
    while i != -1:
        found.append(i)
        i = context.find(text, i + 1)
    return found


class _Fixes:
    """Collects what the loader repaired, for Dataset.report / Dataset.stats."""

    LABELS = {
        "offsets_recovered": "answer_start -1 recovered from the unique occurrence of the answer",
        "ambiguous_first": "answer_start -1 with several occurrences: first occurrence taken",
        "ambiguous_nearest": "answer_start -1 with several occurrences: the occurrence with most "
                             "question words nearby taken",
        "offsets_repaired": "answer offsets that did not match the answer text, moved to the "
                            "nearest occurrence",
        "answers_dropped": "answers whose text does not occur in the context, dropped (the "
                           "question kept other answers)",
        "answers_empty": "answers with an empty text, dropped",
        "no_gold": "questions without any gold answer (EM/F1 cannot be scored on them)",
    }

    SHORT = {"offsets_recovered": "answer_start -1 found (one occurrence)",
             "ambiguous_first": "answer_start -1 set to the first of several occurrences",
             "ambiguous_nearest": "answer_start -1 set to the occurrence nearest the question's words",
             "offsets_repaired": "wrong offsets moved to the text",
             "answers_dropped": "answers not in the context",
             "answers_empty": "empty answers",
             "no_gold": "without gold"}

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {k: [] for k in self.LABELS}

    def add(self, kind: str, qid: str) -> None:
        self.ids[kind].append(qid)

    def stats(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.ids.items() if v}

    def lines(self) -> list[str]:
        out = []
        for kind, ids in self.ids.items():
            if ids:
                unique = list(dict.fromkeys(ids))
                more = f" and {len(unique) - 5} more" if len(unique) > 5 else ""
                out.append(f"{len(ids)} {self.LABELS[kind]}; question ids: "
                           f"{', '.join(unique[:5])}{more}")
        return out


ON_AMBIGUOUS = ("error", "first", "nearest")
# "nearest": the occurrence with the most question words within this many characters of it.
NEAREST_WINDOW = 150


def _word_set(text: str) -> set[str]:
    """Lower-cased words (runs of letters/digits; each CJK character its own word)."""
    return {w for w in re.findall(r"[^\W_]", text.lower()) if is_cjk(w)} | {
        w for w in re.findall(r"[^\W\d_]{2,}|\d+", text.lower()) if not any(map(is_cjk, w))}


def nearest_occurrence(context: str, found: list[int], length: int, question: str) -> int:
    """Of several occurrences of an answer, the one with the most question words within
    NEAREST_WINDOW characters on either side (ties: the first).

    >>> ctx = "In 1990 it rained for weeks. " + "x " * 100 + "The bridge opened in 1990."
    >>> [i for i in range(len(ctx)) if ctx.startswith("1990", i)]
    [3, 250]
    >>> nearest_occurrence(ctx, [3, 250], 4, "When did the bridge open?")
    250
    """
    words = _word_set(question)

    def overlap(i: int) -> int:
        near = context[max(0, i - NEAREST_WINDOW): i + length + NEAREST_WINDOW]
        return len(words & _word_set(near))

    return max(found, key=lambda i: (overlap(i), -i))


def _locate(context: str, text: str, start: int, qid: str, where: str, path: str,
            on_ambiguous: str, fixes: _Fixes, question: str = "") -> int | None:
    """The checked offset of one answer, or None when its text is not in the context."""
    if start >= 0 and context[start:start + len(text)] == text:
        return start
    found = _occurrences(context, text)
    if not found:
        return None
    if start < 0:
        if len(found) == 1:
            fixes.add("offsets_recovered", qid)
            return found[0]
        if on_ambiguous == "first":
            fixes.add("ambiguous_first", qid)
            return found[0]
        if on_ambiguous == "nearest":
            fixes.add("ambiguous_nearest", qid)
            return nearest_occurrence(context, found, len(text), question)
        raise DatasetError(
            f"{where}: {path} (question id {qid!r}): answer_start is -1 and the answer "
            f"{text!r} occurs {len(found)} times in the context, so its position is ambiguous; "
            f"choose on_ambiguous='first' (the first occurrence) or 'nearest' (the one nearest "
            f"the question's words): --on-ambiguous first|nearest on the command line")
    fixes.add("offsets_repaired", qid)
    return min(found, key=lambda i: (abs(i - start), i))


def load_squad(source: str | Path | IO, lang: str | None = None, *, name: str | None = None,
               on_ambiguous: str = "error") -> Dataset:
    """Read a SQuAD v1.1/v2.0-style JSON file (path or open file) into a :class:`Dataset`.

    ``lang``: the language of every example; None = per-article ``"lang"`` field, else the file
    name, else the script of the text (see the module docstring). ``name``: the data set name
    (default: the file name without ``.json``). ``on_ambiguous``: "error" (default), "first" or
    "nearest" (:func:`nearest_occurrence`), what to do with an ``answer_start`` of -1 whose text
    occurs several times in the context. Raises DatasetError naming the file and the JSON path of
    the problem. The result's :meth:`Dataset.load_line` says what was recognised and repaired.
    """
    if on_ambiguous not in ON_AMBIGUOUS:
        raise ValueError(f"on_ambiguous must be one of {', '.join(ON_AMBIGUOUS)}, not {on_ambiguous!r}")
    if lang is not None and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z]{2,4})?", lang):
        raise ValueError(f"lang should be a language code like en, de or zh, not {lang!r}")
    src_name = str(source) if isinstance(source, (str, Path)) else getattr(source, "name", None)
    where = src_name if isinstance(src_name, str) else "<stream>"
    if name is None:
        name = Path(where).name.removesuffix(".json") if isinstance(src_name, str) else "dataset"

    doc = _read_json(source, where)
    if not isinstance(doc, dict):
        raise DatasetError(f"{where}: top level should be an object with 'data', got "
                           f"{type(doc).__name__}")
    data = _get(doc, "data", list, where, "top level")

    file_lang = lang or (lang_from_filename(src_name) if isinstance(src_name, str) else None)
    detected: list[str] = []  # filled lazily: the whole file's script guess, computed once

    def text_lang() -> str:
        if not detected:  # the first ~50,000 characters of context are plenty for a script
            sample, size = [], 0
            for a in data:
                for p in a.get("paragraphs", []) if isinstance(a, dict) else []:
                    if size < 50_000 and isinstance(p, dict) and isinstance(p.get("context"), str):
                        sample.append(p["context"])
                        size += len(p["context"])
            detected.append(detect_lang("".join(sample)))
        return detected[0]

    fixes = _Fixes()
    examples: list[QAExample] = []
    seen: dict[str, str] = {}
    for ai, article in enumerate(data):
        apath = f"data[{ai}]"
        paragraphs = _get(article, "paragraphs", list, where, apath)
        title = article.get("title", "")
        if not isinstance(title, str):
            raise DatasetError(f"{where}: {apath}.title should be str, got {type(title).__name__}")
        art_lang = article.get("lang")
        if art_lang is not None and not isinstance(art_lang, str):
            raise DatasetError(f"{where}: {apath}.lang should be str, got "
                               f"{type(art_lang).__name__}")
        ex_lang = lang or art_lang or file_lang or text_lang()
        for pi, paragraph in enumerate(paragraphs):
            ppath = f"{apath}.paragraphs[{pi}]"
            context = _get(paragraph, "context", str, where, ppath)
            qas = _get(paragraph, "qas", list, where, ppath)
            for qi, qa in enumerate(qas):
                qpath = f"{ppath}.qas[{qi}]"
                qid = str(_get(qa, "id", (str, int), where, qpath))
                if qid in seen:
                    raise DatasetError(f"{where}: {qpath}: duplicate question id {qid!r} "
                                       f"(first at {seen[qid]})")
                seen[qid] = qpath
                question = _get(qa, "question", str, where, qpath)
                raw_answers = _get(qa, "answers", list, where, qpath)
                impossible = qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise DatasetError(f"{where}: {qpath}.is_impossible should be true or false")
                if impossible and raw_answers:
                    raise DatasetError(f"{where}: {qpath} (question id {qid!r}) is marked "
                                       f"is_impossible but has {len(raw_answers)} answers")
                answers: list[Answer] = []
                for ni, ans in enumerate(raw_answers):
                    npath = f"{qpath}.answers[{ni}]"
                    if not isinstance(ans, dict):
                        raise DatasetError(f"{where}: {npath} should be an object with 'text' "
                                           f"and 'answer_start', got {type(ans).__name__}")
                    text = _get(ans, "text", str, where, npath)
                    start = _get(ans, "answer_start", int, where, npath)
                    if not text:  # MLQA's rebuilt test files: {"text": "", "answer_start": 0}
                        fixes.add("answers_empty", qid)
                        continue
                    found = _locate(context, text, start, qid, where, npath, on_ambiguous, fixes,
                                    question)
                    if found is not None:
                        answers.append(Answer(text, found))
                texts = [a["text"] for a in raw_answers if a["text"]]
                if texts and not answers:
                    raise DatasetError(
                        f"{where}: {qpath} (question id {qid!r}): no answer text occurs in the "
                        f"context (first answer: {texts[0]!r})")
                for _ in range(len(texts) - len(answers)):
                    fixes.add("answers_dropped", qid)
                if not answers and not impossible:
                    fixes.add("no_gold", qid)
                examples.append(QAExample(id=qid, question=question, context=context,
                                          answers=tuple(answers), title=title, lang=ex_lang,
                                          is_impossible=impossible))

    langs = {ex.lang for ex in examples}
    ds_lang = langs.pop() if len(langs) == 1 else ("mul" if langs else (file_lang or "und"))
    if lang:
        lang_source = "given"
    elif any(isinstance(a, dict) and isinstance(a.get("lang"), str) for a in data):
        lang_source = "from the articles"
    elif file_lang:
        lang_source = "from the file name"
    else:
        lang_source = "guessed from the script of the text"
    report = fixes.lines()
    if detected and not lang:
        report.append(f"language not given: guessed {detected[0]!r} from the script of the "
                      f"text" + (" (Latin script is always taken as 'en')"
                                 if detected[0] == "en" else ""))
    fmt = _recognise_format(doc, src_name if isinstance(src_name, str) else name, examples, fixes)
    return Dataset(name=name, lang=ds_lang, examples=examples, report=report,
                   stats=fixes.stats(), format=fmt, lang_source=lang_source)


FORMATS = ("SQuAD v1.1", "SQuAD 2.0", "NoiseQA", "DuReader-robust", "CMRC 2018")


def _recognise_format(doc: dict, source: str, examples: list[QAExample], fixes: _Fixes) -> str:
    """Which of :data:`FORMATS` a file is (all share SQuAD's layout): from its name, its version
    field, SQuAD 2.0's is_impossible flags and DuReader's unknown offsets (-1)."""
    base = Path(source).name.lower()
    if "dureader" in base:
        return "DuReader-robust"
    if "cmrc" in base:
        return "CMRC 2018"
    if "noiseqa" in source.lower() or re.search(r"(keyboard|asr|translation)-(synthetic|natural)", base):
        return "NoiseQA"
    if any(ex.is_impossible for ex in examples) or str(doc.get("version", "")).lstrip("v").startswith("2"):
        return "SQuAD 2.0"
    minus_one = fixes.ids["offsets_recovered"] + fixes.ids["ambiguous_first"] + fixes.ids["ambiguous_nearest"]
    if minus_one:
        return "DuReader-robust" if any(ex.lang == "zh" for ex in examples) else "SQuAD v1.1 (offsets -1)"
    return "SQuAD v1.1"


# ----------------------------------------------------------------------------------------------
# Pairing original and challenge sets

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
    hint = "" if pair_by != "auto" or not forceable else "; --pair-by id|position forces a rule and drops the pairs that disagree"
    raise DatasetError(f"{where}: {' | '.join(why_not)}{hint}")


def legacy_rule(original: Dataset, challenge: Dataset) -> str | None:
    """The rule pairing used before pairs were checked (id when any id is shared, else position
    for equal sizes): a sweep whose pairing is unchanged keeps its stored cache keys."""
    if original.by_id.keys() & challenge.by_id.keys():
        return "id"
    return "position" if len(original) == len(challenge) else None


# ----------------------------------------------------------------------------------------------
# What lives in the data directory


@dataclass(frozen=True)
class DatasetInfo:
    """A known data file: ``role`` is "eval", "challenge" (pairs with ``original``) or "train"."""

    name: str
    path: Path
    lang: str
    role: str
    original: Path | None = None


_ENGLISH_TRAIN_DIRS = {"squad", "squadshifts", "tydiqa"}


def _require_data_dir(data_dir: str | Path | None) -> Path:
    path = Path(data_dir) if data_dir is not None else config.data_dir()
    if path is None:
        raise DatasetError("no data directory: set QAX_DATA_DIR to the folder holding xquad/, "
                           "squad/, noiseqa/ ...")
    if not path.is_dir():
        raise DatasetError(f"data directory {str(path)!r} does not exist")
    return path


def discover_datasets(data_dir: str | Path | None = None) -> list[DatasetInfo]:
    """The known data files under ``data_dir`` (default: config.data_dir()), for a picker.

    Evaluation sets first, then challenge sets, then training files; by name within each.
    Languages come from the file names (nothing is opened); training files without a language
    in their name are the English SQuAD/SQuAD-Shifts/TyDi files, others are "und".
    """
    root = _require_data_dir(data_dir)
    infos: list[DatasetInfo] = []

    def add(path: Path, role: str, lang: str | None = None, original: Path | None = None):
        rel = path.relative_to(root).as_posix().removesuffix(".json")
        infos.append(DatasetInfo(rel, path, lang or lang_from_filename(path) or "und", role,
                                 original))

    for p in root.glob("xquad/xquad.*.json"):
        add(p, "eval")
    xquad_en = root / "xquad" / "xquad.en.json"
    for p in root.glob("noiseqa/Synthetic/*.json"):
        if p.name.endswith("-synthetic.json"):
            add(p, "challenge", "en", xquad_en if xquad_en.exists() else None)
        else:  # xquad-context-en-question-en.json: the clean set, identical to xquad.en
            add(p, "eval")
    for p in root.glob("squad/*.json"):
        add(p, "train" if p.name.startswith("train") else "eval", "en")
    for p in root.glob("eval/mlqa/*.json"):
        add(p, "eval")
    for p in root.glob("train/**/*.json"):
        english = p.relative_to(root / "train").parts[0] in _ENGLISH_TRAIN_DIRS
        add(p, "train", lang_from_filename(p) or ("en" if english else None))
    order = {"eval": 0, "challenge": 1, "train": 2}
    return sorted(infos, key=lambda i: (order[i.role], i.name))


# ----------------------------------------------------------------------------------------------
# Keeping evaluation data out of training


def normalize_context(text: str) -> str:
    """A context in the form used to match paragraphs across files: NFC, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def eval_contexts(data_dir: str | Path | None = None) -> frozenset[str]:
    """Normalised contexts of every evaluation-only file (:data:`EVAL_ONLY`: XQuAD in all
    languages, NoiseQA, MLQA), so a trainer can refuse training data that contains them."""
    root = _require_data_dir(data_dir)
    found: set[str] = set()
    for pattern in EVAL_ONLY:
        for path in sorted(root.glob(pattern)):
            found.update(normalize_context(c) for c in load_squad(path).contexts())
    if not found:
        raise DatasetError(f"no evaluation files ({', '.join(EVAL_ONLY)}) under {root}")
    return frozenset(found)


def find_eval_overlap(dataset: Dataset, contexts: Iterable[str]) -> list[str]:
    """Ids of ``dataset`` examples whose context is one of ``contexts`` (from eval_contexts)."""
    contexts = contexts if isinstance(contexts, (set, frozenset)) else set(contexts)
    return [ex.id for ex in dataset.examples if normalize_context(ex.context) in contexts]


def squad_dev_minus_xquad(data_dir: str | Path | None = None) -> Dataset:
    """SQuAD v1.1 dev without the 240 paragraphs XQuAD took from it (matched by normalised
    context), usable as training data. Raises DatasetError unless exactly 240 are removed."""
    root = _require_data_dir(data_dir)
    dev = load_squad(root / "squad" / "dev-v1.1.json", "en")
    xquad = {normalize_context(c) for c in load_squad(root / "xquad" / "xquad.en.json").contexts()}
    kept = [ex for ex in dev.examples if normalize_context(ex.context) not in xquad]
    removed = {normalize_context(ex.context) for ex in dev.examples} & xquad
    if len(removed) != XQUAD_PARAGRAPHS:
        raise DatasetError(f"expected to remove {XQUAD_PARAGRAPHS} XQuAD paragraphs from SQuAD "
                           f"dev, found {len(removed)}: are these the original files?")
    note = (f"removed {len(removed)} paragraphs ({len(dev) - len(kept)} questions) shared with "
            f"XQuAD; {len(dev.contexts()) - len(removed)} paragraphs, {len(kept)} questions left")
    return Dataset(name="squad-dev-minus-xquad", lang="en", examples=kept,
                   report=dev.report + [note], stats=dict(dev.stats))


# ----------------------------------------------------------------------------------------------
# The bundled demo set (assets/demo/demo.json, original text written for this project)


def load_demo() -> list[Dataset]:
    """The bundled demo set, one Dataset per language (en, de, zh), named ``demo.<lang>``."""
    full = load_squad(DEMO_PATH, name="demo")
    by_lang: dict[str, list[QAExample]] = {}
    for ex in full.examples:
        by_lang.setdefault(ex.lang, []).append(ex)
    return [Dataset(f"demo.{lang}", lang, exs) for lang, exs in by_lang.items()]


def demo_dataset(lang: str) -> Dataset:
    """The demo set of one language ("en", "de" or "zh")."""
    for ds in load_demo():
        if ds.lang == lang:
            return ds
    raise DatasetError(f"the demo set has no {lang!r} part (it has en, de, zh)")


def has_gold(example: QAExample) -> bool:
    """Whether ``example`` can be scored: it has a gold answer and is not marked impossible.

    >>> has_gold(QAExample("q", "Who?", "Ann ran.", (Answer("Ann", 0),))), has_gold(QAExample("q", "Who?", "Ann ran."))
    (True, False)
    """
    return bool(example.answers) and not example.is_impossible


# ------------------------------------------------------------------------ data sets by name


def resolve_data_file(name: str, data_dir: str | Path | None = None, *, what: str = "file") -> Path:
    """The SQuAD file a ``file:`` spec (or a confined data set name) means, kept inside the roots.

    A relative name is looked up under the data directory (``data_dir``, else the configured one),
    with or without ``.json``, and may not climb out of it (``..``, a symlink pointing outside).
    An absolute name must lie inside :func:`core.config.read_roots` (the data directory, the runs
    folder, the speech trials' folder, QAX_EXTRA_ROOTS): core.translate.natural_mt and the speech trials
    print such paths. Anything else is a DatasetError naming the allowed folders; nothing is read.
    """
    rel = name.strip().removesuffix(".json")
    if not rel:
        raise DatasetError(f"{what}: needs a path under the data directory")
    root = Path(data_dir).expanduser().resolve() if data_dir is not None else config.data_dir()
    try:
        if Path(rel).expanduser().is_absolute():
            roots = config.read_roots(root)
            candidates = [config.confine(Path(rel + ".json").expanduser(), roots, "the file"),
                          config.confine(Path(rel).expanduser(), roots, "the file")]
        elif root is None:
            raise DatasetError(f"no data directory to find {rel}.json in (set QAX_DATA_DIR)")
        else:
            candidates = [config.under(root, rel + ".json", "the path"),
                          config.under(root, rel, "the path")]
    except ValueError as e:   # ConfinementError; a NUL byte in the name
        raise DatasetError(f"{what}: {e}") from None
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise DatasetError(f"{what}: no file {rel}.json under the data directory {root}"
                         if not Path(rel).is_absolute() else f"{what}: no file {rel}.json")
    return path


def load_dataset(name: str, data_dir: str | Path | None = None, *, confined: bool = False,
                 lang: str | None = None, on_ambiguous: str = "error") -> Dataset:
    """A data set by name: ``demo.<lang>`` (the bundled demo set), ``file:<path>`` or a path under
    the data directory with or without ``.json`` (``xquad/xquad.en``), both kept inside the
    roots (:func:`resolve_data_file`), or, unless ``confined`` (the web UI), any existing file
    path (the CLI is the administrator's tool). ``lang`` and ``on_ambiguous``: see
    :func:`core.datasets.load_squad` (the demo set has its own languages)."""
    opts = {"lang": lang, "on_ambiguous": on_ambiguous}
    if name.startswith(FILE_PREFIX):
        path = resolve_data_file(name[len(FILE_PREFIX):], data_dir, what=f"dataset {name!r}")
        return load_squad(path, name=name[len(FILE_PREFIX):].strip().removesuffix(".json"), **opts)
    if name.startswith("demo.") and "/" not in name:
        return demo_dataset(name.split(".", 1)[1])
    path = Path(name).expanduser()
    if not confined and path.is_file():
        return load_squad(path, **opts)
    if path.is_absolute():
        if not confined:
            raise DatasetError(f"dataset {name!r}: no such file")
        return load_squad(resolve_data_file(name, data_dir, what=f"dataset {name!r}"), **opts)
    root = Path(data_dir) if data_dir is not None else config.data_dir()
    if root is None:
        raise DatasetError(f"dataset {name!r}: no such file, and no data directory "
                         "(set QAX_DATA_DIR)")
    for rel in (name, f"{name}.json"):
        try:
            candidate = config.under(root, rel, "the path")
        except ValueError as e:   # ConfinementError; a NUL byte in the name
            raise DatasetError(f"dataset {name!r}: {e}") from None
        if candidate.is_file():
            return load_squad(candidate, name=name.removesuffix(".json"), **opts)
    raise DatasetError(f"dataset {name!r}: neither a file nor found under the data directory {root}")


def sample_examples(examples: Sequence[QAExample], n: int | None, seed: int) -> list[QAExample]:
    """``n`` examples chosen by seed, in data set order (all of them when n is None or too big).

    Each example is ranked by sha256(seed, id) and the n lowest ranks are kept, so the sample of
    size n is a subset of the sample of size n + k with the same seed: extending a sweep's sample
    reuses everything already computed.
    """
    if n is None or n >= len(examples):
        return list(examples)
    if n < 1:
        raise DatasetError(f"sample size must be at least 1, got {n}")
    ranked = sorted(range(len(examples)), key=lambda i: _sample_rank(seed, examples[i].id))
    keep = set(ranked[:n])
    return [ex for i, ex in enumerate(examples) if i in keep]


def _sample_rank(seed: int, example_id: str) -> str:
    """sha256 of ("sample", seed, id) joined by the unit separator (the sweeps' sampling order)."""
    return hashlib.sha256("\x1f".join(("sample", str(seed), example_id)).encode("utf-8")).hexdigest()
