"""The Variants page's logic: perturb one example many ways, answer every variant, tabulate.

Flow (``pages/variants.py`` is only the UI around it):

1. :func:`generate_variants` runs each chosen perturbation on the example. A randomised
   perturbation runs ``repeats`` times; repeat ``r`` of a choice under ``seed`` draws from
   :func:`core.perturb.spec.rng_for` (seed, example, the choice's spec, r) (:func:`variant_rng`):
   the generator a sweep and make_challenge use, so the same seed shows the same variant here, in
   a sweep's drill-down and in a challenge file, whatever else was chosen alongside it.
   Deterministic perturbations run once (repeat 0). Perturbations that cannot run (incompatible
   language, no tagger), that return ``None`` (nothing to perturb) or that raise, give a
   :class:`Note` with the reason instead of a row. A chain "A+B" (``core.perturb.compose.Composite``)
   is one choice: its steps run in order, as a sweep's chain does (:func:`core.perturb.spec.step_rng`).
2. :func:`answer_variants` answers the original and every variant with each model in ONE batched
   ``engine.predict`` call per model (identical (question, context) pairs are answered once).
3. :func:`results_table` builds the rows: edits marked in plain text (:func:`marked_text`, since a
   table cell cannot hold HTML), CER/WER against the original field, and per model the answer,
   whether it differs from the model's answer to the original (DPR's notion of "different":
   after the language's EM normalisation, :func:`core.metrics.predictions_differ`), and EM/F1
   against gold.

A context perturbation's row is answered against its perturbed context (the question unchanged);
context perturbations never touch the gold answer, so gold offsets stay exact in ``row.example``.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.metrics import predictions_differ, score_answer
from core.metrics.text_distance import asr_normalise, wer
from core.perturb import registry
from core.perturb.base import Edit, Perturbation, PerturbationError
from core.perturb.compose import Composite
from core.perturb.spec import PerturbationSpec, rng_for
from core.types import Prediction, QAExample

ORIGINAL = "original"
# words, not ✓/✗: a tick next to an answer reads as "correct", not as "the answer changed"
CHANGED_MARK, SAME_MARK = "changed", "same"   # the answer differs from / equals the answer to the original
OPEN, CLOSE = "⟦", "⟧"
ELLIPSIS = "…"
MAX_REPEATS = 100

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Choice:
    """One perturbation to run, with the parameters to pass to ``apply`` (defaults fill the rest)."""

    id: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class VariantRow:
    """One row of the table: the original example or one variant of it."""

    perturbation: str              # perturbation id, or ORIGINAL
    repeat: int | None             # r of the seed rule; None for the original
    field: str | None              # "question" | "context"; None for the original
    example: QAExample             # what the models answer (perturbed field, exact gold offsets)
    original_text: str             # the field's text before the perturbation
    edits: list[Edit]              # offsets into original_text
    cer: float = 0.0
    wer: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)   # resolved parameters
    index: int = 0                 # k-th variant of one apply() call (the catalogue returns one)
    same_as: list[int] = field(default_factory=list)   # later repeats that gave this very variant

    @property
    def wer_normalised(self) -> float:
        """WER with both texts lower-cased and unpunctuated (as Heatmaps reports it): a
        recogniser that only drops the case and the "?" has WER 0, not 37.5 %."""
        return wer(asr_normalise(self.original_text), asr_normalise(self.text))

    @property
    def text(self) -> str:
        """The row's field text: the (perturbed) question, or the perturbed context."""
        return getattr(self.example, self.field or "question")

    @property
    def changed(self) -> bool:
        return self.text != self.original_text


@dataclass(frozen=True)
class Note:
    """Why a chosen perturbation produced no row (for one repeat, or for all when ``repeat`` is None)."""

    perturbation: str
    repeat: int | None
    status: str                    # "skipped" (cannot run here) | "n/a" (returned None) | "error"
    message: str


def choice_spec(choice: Choice) -> PerturbationSpec:
    """A choice as a spec of :mod:`core.perturb.spec`: a chain's per-step parameters as ``STEP.name``.

    >>> str(choice_spec(Choice("keyboard_Q+DPQ", {"keyboard_Q": {"p": 0.5}})))
    'keyboard_Q+DPQ(keyboard_Q.p=0.5)'
    """
    if is_chain(choice.id):
        return PerturbationSpec.make(choice.id, {f"{step}.{k}": v for step, values in choice.params.items()
                                                 for k, v in values.items()})
    return PerturbationSpec.make(choice.id, choice.params)


def variant_rng(seed: int, example: QAExample, choice: Choice, repeat: int,
                catalogue: Callable[[str], Perturbation] = registry.get) -> random.Random:
    """The generator of repeat ``repeat`` of ``choice`` on ``example`` (module docstring)."""
    return rng_for(seed, example, choice_spec(choice), repeat, catalogue=catalogue)


def incompatibility_reason(p: Perturbation, example: QAExample, params: Mapping[str, Any] | None = None) -> str | None:
    """None when ``p`` can run on ``example`` (with ``params``), else one sentence saying why not;
    a bad parameter is a reason too."""
    try:
        return p.why_not(example, dict(params or {}))
    except PerturbationError as e:
        return str(e)


def is_chain(perturbation_id: str) -> bool:
    """Whether the id names a composition ("TLQ+keyboard_Q")."""
    return "+" in perturbation_id


def _prepare(choice: Choice, catalogue: Callable[[str], Perturbation]) -> tuple[Perturbation | None, str | None]:
    """The perturbation for ``choice`` and None, or (None, why it cannot be built).

    A chain id "A+B" becomes :class:`core.perturb.compose.Composite` with ``choice.params`` as its
    per-step parameters ``{step id: {name: value}}``; its repeat r draws from
    :func:`variant_rng`, as a sweep's chain does.
    """
    if not is_chain(choice.id):
        return catalogue(choice.id), None
    ids = [part.strip() for part in choice.id.split("+")]
    for pid in ids:
        catalogue(pid)   # KeyError naming an unknown id, as for single perturbations
    try:
        return Composite(ids, {k: dict(v) for k, v in choice.params.items()}), None
    except PerturbationError as e:
        return None, str(e)


def runs_for(p: Perturbation, repeats: int) -> int:
    """How many times ``p`` runs: ``repeats`` if it is randomised, else once."""
    return repeats if p.randomised else 1


def generate_variants(
    example: QAExample,
    choices: Sequence[Choice],
    seed: int,
    repeats: int,
    progress: ProgressFn | None = None,
    catalogue: Callable[[str], Perturbation] = registry.get,
) -> tuple[list[VariantRow], list[Note]]:
    """Rows (the original first, then each choice's variants in choice order) and notes.

    ``progress(done, total)`` is called after each (perturbation, repeat) run.
    """
    if not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be an int in 1..{MAX_REPEATS}, got {repeats!r}")
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    prepared = [_prepare(c, catalogue) for c in choices]   # KeyError names an unknown id
    rows = [VariantRow(ORIGINAL, None, None, example, example.question, [])]
    notes: list[Note] = []
    total = sum(runs_for(p, repeats) if p else 1 for p, _ in prepared)
    done = 0
    seen: dict[tuple, VariantRow] = {}   # (perturbation, params, field, text) -> its first row
    for choice, (p, problem) in zip(choices, prepared):
        n_runs = runs_for(p, repeats) if p else 1
        single = {} if is_chain(choice.id) else choice.params   # a chain holds its steps' parameters
        reason = problem or incompatibility_reason(p, example, single)
        if reason is None:
            params = p.resolve_params(dict(single))
        if reason is not None:
            notes.append(Note(choice.id, None, "skipped", reason))
            done += n_runs
            if progress:
                progress(done, total)
            continue
        if is_chain(choice.id):
            params = {step: dict(values) for step, values in choice.params.items()}  # recorded, not passed
        for r in range(n_runs):
            variants = None
            try:
                rng = variant_rng(seed, example, choice, r, catalogue)
                variants = p.apply(example, rng, **({} if is_chain(choice.id) else params))
            except Exception as e:  # one broken perturbation must not lose the others' rows
                notes.append(Note(p.id, r, "error", f"{type(e).__name__}: {e}"))
            else:
                if not variants:
                    single_params = None if is_chain(choice.id) else params
                    notes.append(Note(p.id, r, "n/a", f"{p.id} returned no variant: " + (
                        p.nothing_to_change(example, single_params)
                        or f"this example has nothing it can change ({p.description})")))
            for k, v in enumerate(variants or []):
                # A repeat that drew the very same variant (a paraphraser with one good rewrite)
                # is one row that says which repeats gave it, not three identical rows.
                key = (p.id, repr(params), v.field, getattr(v.example, v.field))
                if key in seen:
                    seen[key].same_as.append(r)
                    continue
                seen[key] = VariantRow(p.id, r, v.field, v.example, getattr(example, v.field), list(v.edits),
                                       v.cer, v.wer, dict(params), k)
                rows.append(seen[key])
            done += 1
            if progress:
                progress(done, total)
    return rows, notes


def answer_variants(
    rows: Sequence[VariantRow],
    engines: Mapping[str, Any],
    n_best: int = 1,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, list[Prediction]]:
    """``{model: [prediction per row]}``, with ONE ``engine.predict`` call per model.

    Identical (question, context) pairs are answered once. A variant the engine refuses (e.g. a
    question emptied by a deletion) gets an empty Prediction; ``progress(model, done, total)``
    relays the engine's batch progress.
    """
    pair_index: dict[tuple[str, str], int] = {}
    row_pair = []
    for row in rows:
        pair = (row.example.question, row.example.context)
        row_pair.append(pair_index.setdefault(pair, len(pair_index)))
    questions = [q for q, _ in pair_index]
    contexts = [c for _, c in pair_index]
    out = {}
    for name, engine in engines.items():
        relay = (lambda done, total, _name=name: progress(_name, done, total)) if progress else None
        preds = engine.predict(questions, contexts, n_best=n_best, progress=relay, skip_invalid=True)
        out[name] = [preds[i] for i in row_pair]
    return out


def params_label(p_params: Mapping[str, Any]) -> str:
    """``n_chars=2, n_words=1``: a row's parameters, sorted by name; a chain's as ``step.name=value``.

    >>> params_label({"n_words": 1, "n_chars": 2}), params_label({"keyboard_Q": {"p": 0.5}, "TLQ": {}})
    ('n_chars=2, n_words=1', 'keyboard_Q.p=0.5')
    """
    parts = []
    for k, v in sorted(p_params.items()):
        if isinstance(v, Mapping):
            parts += [f"{k}.{name}={value}" for name, value in sorted(v.items())]
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


SNAP = 15   # how far a context window may widen to reach a word boundary


def _snap_left(text: str, a: int) -> int:
    for k in range(a, max(0, a - SNAP) - 1, -1):
        if k == 0 or text[k - 1].isspace():
            return k
    return a


def _snap_right(text: str, b: int) -> int:
    for k in range(b, min(len(text), b + SNAP) + 1):
        if k == len(text) or text[k].isspace():
            return k
    return b


def edit_segments(original: str, edits: Sequence[Edit], window: int | None = None) -> list[tuple]:
    """``original`` cut into ``("text", str)``, ``("edit", old, new, kind)`` and ``("gap",)`` pieces.

    With ``window``, only about ``window`` characters either side of the edits are kept (widened to
    the nearest word boundary within :data:`SNAP` characters, so no word is cut); each elided
    stretch becomes one ``("gap",)`` (shared by :func:`marked_text` and ``components.edits``).

    >>> edit_segments("one two three four five", [Edit(8, 13, "3", "k")], window=2)
    [('gap',), ('text', 'two '), ('edit', 'three', '3', 'k'), ('text', ' four'), ('gap',)]
    """
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    n = len(original)
    if window is None or not ordered:
        keep = [(0, n if window is None else _snap_right(original, min(n, 2 * window)))]
    else:
        keep = []
        for e in ordered:
            a, b = _snap_left(original, max(0, e.start - window)), _snap_right(original, min(n, e.end + window))
            if keep and a <= keep[-1][1]:
                keep[-1] = (keep[-1][0], max(keep[-1][1], b))
            else:
                keep.append((a, b))
    out: list[tuple] = []
    for a, b in keep:
        if a > 0:
            out.append(("gap",))
        cursor = a
        for e in ordered:
            if a <= e.start and e.end <= b:
                if e.start > cursor:
                    out.append(("text", original[cursor:e.start]))
                out.append(("edit", original[e.start:e.end], e.replacement, e.kind))
                cursor = e.end
        if b > cursor:
            out.append(("text", original[cursor:b]))
        if b < n:
            out.append(("gap",))
    # a gap closing one window and the gap opening the next are the same stretch
    return [seg for i, seg in enumerate(out) if not (seg == ("gap",) and i and out[i - 1] == ("gap",))]


def marked_text(original: str, edits: Sequence[Edit], window: int | None = None) -> str:
    """``original`` with each edit written in place as ⟦old→new⟧, ⟦+inserted⟧ or ⟦−deleted⟧.

    With ``window``, only ``window`` characters either side of the edits are kept and the gaps
    are shown as "…" (for long contexts). Without edits the text is returned as it is.

    >>> marked_text("When was it lit?", [Edit(0, 1, "w", "case"), Edit(8, 11, "", "drop"), Edit(15, 15, "!", "ins")])
    '⟦W→w⟧hen was⟦− it⟧ lit⟦+!⟧?'
    >>> marked_text("a bc de fgh ij kl mn op", [Edit(3, 4, "X", "k"), Edit(20, 20, "Y", "k")], window=1)
    '…b⟦c→X⟧ de…mn⟦+Y⟧ op'
    """
    out = []
    for seg in edit_segments(original, edits, window):
        if seg[0] == "gap":
            out.append(ELLIPSIS)
        elif seg[0] == "text":
            out.append(seg[1])
        else:
            _, old, new, _ = seg
            if not old:
                out.append(f"{OPEN}+{new}{CLOSE}")
            elif not new:
                out.append(f"{OPEN}−{old}{CLOSE}")
            else:
                out.append(f"{OPEN}{old}→{new}{CLOSE}")
    return "".join(out)


def row_label(i: int, row: VariantRow) -> str:
    """``#2 DRQ r1``: how a row is named in pickers."""
    if row.perturbation == ORIGINAL:
        return f"#{i} original"
    suffix = f".{row.index}" if row.index else ""
    same = f" (= {', '.join(f'r{r}' for r in row.same_as)})" if row.same_as else ""
    return f"#{i} {row.perturbation} r{row.repeat}{suffix}{same}"


def _pct(x: float) -> float:
    return round(100 * x, 1)


def results_table(
    rows: Sequence[VariantRow],
    predictions: Mapping[str, Sequence[Prediction]],
    lang: str,
    context_window: int = 40,
    scored: bool = True,
) -> list[dict[str, Any]]:
    """One dict per row (keys are the table's column names; see the module docstring).

    Per model ``m``: ``"m: answer"``, ``"m: changed"`` ("changed": differs from the answer to the
    original, "same", empty for the original row), ``"m: EM"`` / ``"m: F1"`` in percent (None without
    gold, or when not ``scored``: a question that is not the item's own has no gold answer, though
    the perturbations still need the item's answers to leave them intact).
    """
    if not rows or rows[0].perturbation != ORIGINAL:
        raise ValueError("results_table needs the original example as its first row")
    for name, preds in predictions.items():
        if len(preds) != len(rows):
            raise ValueError(f"model {name!r} has {len(preds)} predictions for {len(rows)} rows")
    table = []
    for i, row in enumerate(rows):
        window = context_window if row.field == "context" else None
        # Column order: what changed and how each model answered come first, so they are in view
        # without scrolling; the edit statistics and the full texts follow.
        record: dict[str, Any] = {
            "#": i,
            "perturbation": row.perturbation,
            "params": params_label(row.params),
            "variant (edits marked)": marked_text(row.original_text, row.edits, window),
        }
        golds = row.example.answer_texts if scored else []
        for name, preds in predictions.items():
            answer = preds[i].text
            record[f"{name}: answer"] = answer
            record[f"{name}: changed"] = "" if i == 0 else (
                CHANGED_MARK if predictions_differ(preds[0].text, answer, lang) else SAME_MARK)
            if golds:
                em, f1 = score_answer(answer, golds, lang)
                record[f"{name}: EM"], record[f"{name}: F1"] = _pct(em), _pct(f1)
            else:
                record[f"{name}: EM"] = record[f"{name}: F1"] = None
        record.update({
            "field": row.field or "",
            "repeat": row.repeat,
            "same as repeats": ", ".join(map(str, row.same_as)),
            "n edits": len(row.edits),
            "CER %": _pct(row.cer),
            "WER %": _pct(row.wer_normalised),
            "question": row.example.question,
            "text": row.text,
        })
        table.append(record)
    return table


def compact_table(table: Sequence[Mapping[str, Any]], models: Sequence[str]) -> list[dict[str, Any]]:
    """The table as the page shows it: one narrow column per model (changed mark, answer, F1), and
    the perturbation and its parameters named in the variant's cell, so three models fit beside it
    in a window 800 px wide (the page hides their own columns); :func:`results_table` keeps every
    column for the CSV.

    >>> row = {"#": 1, "perturbation": "TUQ", "params": "", "variant (edits marked)": "WHO?",
    ...        "m: answer": "Paris", "m: changed": "changed", "m: EM": 0.0, "m: F1": 66.7, "WER %": 0.0}
    >>> compact_table([row], ["m"])  # doctest: +NORMALIZE_WHITESPACE
    [{'#': 1, 'perturbation': 'TUQ', 'variant (edits marked)': 'TUQ: WHO?', 'm': 'changed: Paris · F1 67',
    'params': '', 'WER %': 0.0}]
    >>> compact_table([{**row, "perturbation": "keyboard_Q", "variant (edits marked)": "Who?", "n edits": 0}],
    ...               ["m"])[0]["variant (edits marked)"]
    'keyboard_Q (unchanged: this draw edited nothing): Who?'
    """
    out = []
    for r in table:
        spec = r["perturbation"] + (f"({r['params']})" if r.get("params") else "")
        # a random draw that changed nothing (keyboard_Q picked no word) is a row of its own: said so
        unchanged = r.get("n edits") == 0 and r["perturbation"] != ORIGINAL
        same = " (unchanged: this draw edited nothing)" if unchanged else ""
        record = {"#": r["#"], "perturbation": r["perturbation"],
                  "variant (edits marked)": f"{spec}{same}: {r['variant (edits marked)']}"}
        for m in models:
            answer = r.get(f"{m}: answer") or "∅"
            mark = r.get(f"{m}: changed") or ""
            f1 = r.get(f"{m}: F1")
            record[m] = (f"{mark}: {answer}" if mark else answer) + ("" if f1 is None else f" · F1 {f1:.0f}")
        # then the edit statistics and full texts, as in the full table
        record.update({k: v for k, v in r.items() if k not in record and not any(
            k.startswith(f"{m}: ") for m in models)})
        out.append(record)
    return out
