"""Reading and validating extractive-QA data sets (SQuAD v1.1/v2.0 JSON): :func:`load_squad`.

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

import gzip
import io
import json
import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from core.io import safe_json
from core.langid import detect_lang, is_cjk, lang_from_filename
from core.types import Answer, QAExample

__all__ = ["DatasetError", "Dataset", "load_squad", "ON_AMBIGUOUS", "ON_UNSCORABLE", "FORMATS", "nearest_occurrence",
           "data_name", "MAX_UNPACKED_BYTES"]


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
    # the ids of the questions left out (none of their answers is in the context): the load line names them
    left_out: list[str] = field(default_factory=list)
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
        groups = (("repaired", ("offsets_recovered", "offsets_repaired", "whitespace_repaired", "unicode_repaired")),
                  ("guessed", ("ambiguous_first", "ambiguous_nearest")),
                  ("dropped", ("answers_dropped", "answers_empty", "questions_dropped")))
        for verb, kinds in groups:
            said = [f"{self.stats[k]} {_Fixes.SHORT[k]}" for k in kinds if self.stats.get(k)]
            if verb == "dropped" and self.left_out:   # each question left out, by id (the report says why)
                more = f" and {len(self.left_out) - 20} more" if len(self.left_out) > 20 else ""
                said[-1] += f" (question ids {', '.join(self.left_out[:20])}{more})"
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
            from core.io.outputs import write_text_atomic

            write_text_atomic(path, json.dumps(doc, ensure_ascii=False, indent=1))
        return doc


# ----------------------------------------------------------------------------------------------
# Loading


# A gzip-compressed file is unpacked to at most this many bytes (a 1 MB bomb unpacks to 1 GB): an
# upload to the upload limit (core.io.safe_json.max_upload_bytes), a file named on the server to this.
MAX_UNPACKED_BYTES = 1024 ** 3
# What a binary file's first bytes say it is: the message names it instead of "not UTF-8".
_FIRST = "decompress it first (a gzip-compressed .json.gz is read as it is)"
_MAGIC = ((b"PK\x03\x04", "a zip archive, not JSON: unzip it and give the JSON file inside (a gzip-compressed "
                          ".json.gz is read as it is)"),
          (b"BZh", f"bzip2-compressed, not JSON: {_FIRST}"),
          (b"\xfd7zXZ\x00", f"xz-compressed, not JSON: {_FIRST}"),
          (b"7z\xbc\xaf\x27\x1c", f"a 7z archive, not JSON: {_FIRST}"),
          (b"%PDF", "a PDF document, not JSON"),
          (b"SQLite format 3\x00", "an SQLite database, not JSON"))


def _unpacked(raw: bytes, where: str, limit: int) -> bytes:
    """``raw`` gunzipped when it is gzip (its magic bytes, whatever the file is called), to at most
    ``limit`` bytes; other binary files are refused with what they are."""
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
                data = f.read(limit + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"{where}: a damaged gzip file ({e})") from None
        if len(data) > limit:
            raise DatasetError(f"{where}: gzip-compressed JSON that unpacks to more than "
                               f"{limit / 1024 / 1024:,.0f} MB, the limit") from None
        raw = data
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            raise DatasetError(f"{where}: {what}")
    nul = raw.find(b"\x00", 0, 4096)
    if nul >= 0:   # JSON text never holds a NUL byte (UTF-16 would: it is not read either)
        raise DatasetError(f"{where}: a binary file, not JSON text (a NUL byte at byte {nul})")
    return raw


def _read_json(source: str | Path | IO, where: str) -> Any:
    try:
        if isinstance(source, (str, Path)):
            raw: str | bytes = _unpacked(Path(source).read_bytes(), where, MAX_UNPACKED_BYTES)
        else:   # an upload: unpacked to no more than an upload may be
            raw = source.read()
            if isinstance(raw, bytes):
                raw = _unpacked(raw, where, safe_json.max_upload_bytes())
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
        "whitespace_repaired": "answers that differ from the context only in whitespace (a non-breaking, "
                               "double or other Unicode space), set to the context's text",
        "unicode_repaired": "answers written in another Unicode form than the context (decomposed "
                            "accents, NFD, as macOS writes them, against composed ones), set to the "
                            "context's text",
        "answers_dropped": "answers whose text does not occur in the context, dropped (the "
                           "question kept other answers)",
        "answers_empty": "answers with an empty text, dropped",
        "no_gold": "questions without any gold answer (EM/F1 cannot be scored on them)",
        "questions_dropped": "questions left out: none of their answers occurs in the context, even "
                             "modulo whitespace",
    }

    SHORT = {"offsets_recovered": "answer_start -1 found (one occurrence)",
             "ambiguous_first": "answer_start -1 set to the first of several occurrences",
             "ambiguous_nearest": "answer_start -1 set to the occurrence nearest the question's words",
             "offsets_repaired": "wrong offsets moved to the text",
             "whitespace_repaired": "answers matched modulo whitespace",
             "unicode_repaired": "answers matched modulo Unicode form (NFC/NFD)",
             "answers_dropped": "answers not in the context",
             "answers_empty": "empty answers",
             "no_gold": "without gold",
             "questions_dropped": "questions whose answers are not in the context"}

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {k: [] for k in self.LABELS}
        self.dropped: list[str] = []   # one line per question left out, each named in the report

    def add(self, kind: str, qid: str) -> None:
        self.ids[kind].append(qid)

    def stats(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.ids.items() if v}

    def drop(self, question: _Unscorable, where: str, on_unscorable: str) -> None:
        """Leave ``question`` out and name it in the report, or refuse the file (``on_unscorable="error"``)."""
        if on_unscorable == "error":
            raise DatasetError(str(question)) from None
        self.add("questions_dropped", question.qid)
        self.dropped.append(f"left out: {str(question).removeprefix(where + ': ')}")

    def lines(self) -> list[str]:
        out = []
        for kind, ids in self.ids.items():
            if ids:
                unique = list(dict.fromkeys(ids))
                more = f" and {len(unique) - 5} more" if len(unique) > 5 else ""
                out.append(f"{len(ids)} {self.LABELS[kind]}; question ids: "
                           f"{', '.join(unique[:5])}{more}")
        return out + self.dropped


ON_AMBIGUOUS = ("error", "first", "nearest")
# A question none of whose answers occurs in its context: left out and named in the report ("drop"),
# or the whole file refused ("error").
ON_UNSCORABLE = ("drop", "error")
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


# Whitespace that real files swap for one another: any run of Unicode spaces (NBSP, U+2009, U+3000,
# ...), tabs and line breaks, plus zero-width spaces and BOMs, which str.isspace does not count.
_SPACE_RUN = r"[\s\u200b\u2060\ufeff]+"


def _whitespace_occurrences(context: str, text: str) -> list[tuple[int, int]]:
    """Every (start, end) in ``context`` where ``text`` occurs up to whitespace: each run of
    spaces in either may be any other run (a non-breaking space for a space, two spaces for one).

    >>> ctx = "Der Vertrag von\u00a0Rom  wurde 1957 unterzeichnet."
    >>> [ctx[a:b] for a, b in _whitespace_occurrences(ctx, "Vertrag von Rom wurde")]
    ['Vertrag von\xa0Rom  wurde']
    """
    words = re.split(_SPACE_RUN, text.strip())
    if not any(words):
        return []
    pattern = re.compile(_SPACE_RUN.join(re.escape(w) for w in words))
    return [(m.start(), m.end()) for m in pattern.finditer(context)]


def _locate(context: str, text: str, start: int, qid: str, where: str, path: str,
            on_ambiguous: str, fixes: _Fixes, question: str = "") -> Answer | None:
    """The answer with a checked offset (and, matched modulo whitespace, the context's own text),
    or None when its text is not in the context."""
    if start >= 0 and context[start:start + len(text)] == text:
        return Answer(text, start)
    found = _occurrences(context, text)
    spans = [(i, i + len(text)) for i in found]
    repair = "offsets_repaired"
    if not found:
        spans, repair = _whitespace_occurrences(context, text), "whitespace_repaired"
        for form in ("NFC", "NFD"):   # the answer in the context's Unicode form (é as one code point or two)
            if not spans and unicodedata.normalize(form, text) != text:
                spans, repair = _whitespace_occurrences(context, unicodedata.normalize(form, text)), "unicode_repaired"
        if not spans:
            return None
        found = [a for a, _ in spans]
    end = dict(spans)

    def answer(i: int) -> Answer:
        return Answer(context[i:end[i]], i)

    if start < 0:
        if len(found) == 1:
            fixes.add("offsets_recovered" if repair == "offsets_repaired" else repair, qid)
            return answer(found[0])
        if on_ambiguous == "first":
            fixes.add("ambiguous_first", qid)
            return answer(found[0])
        if on_ambiguous == "nearest":
            fixes.add("ambiguous_nearest", qid)
            return answer(nearest_occurrence(context, found, len(text), question))
        raise DatasetError(
            f"{where}: {path} (question id {qid!r}): answer_start is -1 and the answer "
            f"{text!r} occurs {len(found)} times in the context, so its position is ambiguous; "
            f"choose on_ambiguous='first' (the first occurrence) or 'nearest' (the one nearest "
            f"the question's words): --on-ambiguous first|nearest on the command line")
    fixes.add(repair, qid)
    return answer(min(found, key=lambda i: (abs(i - start), i)))


def load_squad(source: str | Path | IO, lang: str | None = None, *, name: str | None = None,
               on_ambiguous: str = "error", on_unscorable: str = "drop") -> Dataset:
    """Read a SQuAD v1.1/v2.0-style JSON file (path or open file) into a :class:`Dataset`.

    ``lang``: the language of every example; None = per-article ``"lang"`` field, else the file
    name, else the script of the text (see the module docstring). ``name``: the data set name
    (default: the file name without ``.json``). ``on_ambiguous``: "error" (default), "first" or
    "nearest" (:func:`nearest_occurrence`), what to do with an ``answer_start`` of -1 whose text
    occurs several times in the context. ``on_unscorable``: "drop" (default) leaves out a question
    none of whose answers occurs in its context, even modulo whitespace, and names each one in the
    report; "error" refuses the file instead. Raises DatasetError naming the file and the JSON path of
    the problem. The result's :meth:`Dataset.load_line` says what was recognised and repaired.
    """
    _check_options(lang, on_ambiguous, on_unscorable)
    src_name = str(source) if isinstance(source, (str, Path)) else getattr(source, "name", None)
    where = src_name if isinstance(src_name, str) else "<stream>"
    if name is None:
        name = data_name(where) if isinstance(src_name, str) else "dataset"

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
                try:
                    examples.append(_read_question(qa, f"{ppath}.qas[{qi}]", where, context, title, ex_lang,
                                                   on_ambiguous, fixes, seen))
                except _Unscorable as e:
                    fixes.drop(e, where, on_unscorable)
    if fixes.dropped and not examples:
        raise DatasetError(f"{where}: no question can be scored; the first: "
                           f"{fixes.dropped[0].removeprefix('left out: ')}")

    langs = {ex.lang for ex in examples}
    ds_lang = langs.pop() if len(langs) == 1 else ("mul" if langs else (file_lang or "und"))
    lang_source = _lang_source(lang, data, file_lang)
    report = fixes.lines()
    if detected and not lang:
        report.append(f"language not given: guessed {detected[0]!r} from the script of the "
                      f"text" + (" (Latin script is always taken as 'en')"
                                 if detected[0] == "en" else ""))
    fmt = _recognise_format(doc, src_name if isinstance(src_name, str) else name, examples, fixes)
    return Dataset(name=name, lang=ds_lang, examples=examples, report=report,
                   stats=fixes.stats(), format=fmt, lang_source=lang_source, left_out=fixes.ids["questions_dropped"])


def _check_options(lang: str | None, on_ambiguous: str, on_unscorable: str) -> None:
    if on_ambiguous not in ON_AMBIGUOUS:
        raise ValueError(f"on_ambiguous must be one of {', '.join(ON_AMBIGUOUS)}, not {on_ambiguous!r}")
    if on_unscorable not in ON_UNSCORABLE:
        raise ValueError(f"on_unscorable must be one of {', '.join(ON_UNSCORABLE)}, not {on_unscorable!r}")
    if lang is not None and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z]{2,4})?", lang):
        raise ValueError(f"lang should be a language code like en, de or zh, not {lang!r}")


def data_name(path: str | Path) -> str:
    """A data file's name without ``.json`` or ``.json.gz``.

    >>> data_name("it/SQuAD_it-test.json.gz"), data_name("xquad.de.json")
    ('SQuAD_it-test', 'xquad.de')
    """
    return Path(path).name.removesuffix(".gz").removesuffix(".json")


def _lang_source(lang: str | None, data: list, file_lang: str | None) -> str:
    """Where the examples' language came from (the load line says it)."""
    if lang:
        return "given"
    if any(isinstance(a, dict) and isinstance(a.get("lang"), str) for a in data):
        return "from the articles"
    if file_lang:
        return "from the file name"
    return "guessed from the script of the text"


class _Unscorable(DatasetError):
    """A question none of whose answers is in its context: dropped or refused (``on_unscorable``)."""

    def __init__(self, qid: str, message: str):
        super().__init__(message)
        self.qid = qid


def _read_question(qa: Any, qpath: str, where: str, context: str, title: str, ex_lang: str, on_ambiguous: str,
                   fixes: _Fixes, seen: dict[str, str]) -> QAExample:
    """One ``qas`` entry as an example, its answers located in ``context`` (repairs go to ``fixes``);
    DatasetError naming ``qpath`` for a duplicate id, a bad field or answers that are not in the context."""
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
        found = _locate(context, text, start, qid, where, npath, on_ambiguous, fixes, question)
        if found is not None:
            answers.append(found)
    texts = [a["text"] for a in raw_answers if a["text"]]
    if texts and not answers:
        raise _Unscorable(qid,
            f"{where}: {qpath} (question id {qid!r}): no answer text occurs in the "
            f"context (first answer: {texts[0]!r})")
    for _ in range(len(texts) - len(answers)):
        fixes.add("answers_dropped", qid)
    if not answers and not impossible:
        fixes.add("no_gold", qid)
    return QAExample(id=qid, question=question, context=context, answers=tuple(answers), title=title,
                     lang=ex_lang, is_impossible=impossible)


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
