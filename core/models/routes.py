"""Translate or answer in the language? Three routes per source language on XQuAD's parallel data.

NoiseQA's machine-translation interface asks what translating a question costs. With a model that
reads the source language the alternatives can be measured on the same questions (XQuAD's items
share their ids across languages):

- ``translate``: the question machine-translated to English, an English model, the English context;
- ``cross``: the original question, the multilingual model, the English context;
- ``native``: question and context in the source language, the multilingual model.

A route is scored against the gold answers of the context it reads (English for ``translate`` and
``cross``), with the scorer of that language. Each route's F1 has a bootstrap interval, and each
pair of routes a paired-bootstrap interval of its difference (:mod:`core.metrics.paired`).

    python -m core.models.routes --source de es zh --model e5-qa-multi [--english-model M] [--first N]
        [--json OUT.json] [--csv OUT.csv]
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import numpy as np

from core import cli
from core.budgets import MAX_QUESTIONS
from core.qa.engine import engine_settings

PROG = "python -m core.models.routes"
ROUTES = ("translate", "cross", "native")
ROUTE_LABELS = {
    "translate": "(a) question translated to English",
    "cross": "(b) original question, English context",
    "native": "(c) question and context in the language",
}
PAIRS = (("translate", "native"), ("translate", "cross"), ("cross", "native"))


@dataclass(frozen=True)
class ParallelItem:
    id: str
    question: str  # in the source language
    context: str
    answers: tuple[str, ...]
    context_en: str
    answers_en: tuple[str, ...]


def parallel_items(source, english) -> list[ParallelItem]:
    """The items of ``source`` (a Dataset) whose id is in ``english``, each with both contexts
    and both sets of gold answers; items without answers on either side are left out."""
    en = {e.id: e for e in english.examples}
    out = []
    for e in source.examples:
        twin = en.get(e.id)
        if twin is None or not e.answer_texts or not twin.answer_texts:
            continue
        out.append(ParallelItem(e.id, e.question, e.context, tuple(e.answer_texts), twin.context,
                                tuple(twin.answer_texts)))
    return out


def route_scores(predictions: dict[str, list[str]], items: list[ParallelItem], lang: str) -> dict[str, list[float]]:
    """Per-question F1 in [0, 1] of each route's predictions (lists in ``items`` order).

    >>> item = ParallelItem("1", "Wer?", "Anna kam.", ("Anna",), "Anna came.", ("Anna",))
    >>> route_scores({"cross": ["Anna came"], "native": ["Anna"]}, [item], "de")
    {'cross': [0.6666666666666666], 'native': [1.0]}
    """
    from core.metrics import score_answer

    out = {}
    for route, preds in predictions.items():
        golds, gold_lang = ((lambda it: it.answers), lang) if route == "native" else ((lambda it: it.answers_en), "en")
        out[route] = [score_answer(p, golds(it), gold_lang)[1] for p, it in zip(preds, items)]
    return out


def mean_interval(scores: list[float], seed: int = 0, n_resamples: int = 2000) -> tuple[float, float, float]:
    """(mean, low, high) in F1 points: a 95% percentile bootstrap over questions.

    >>> mean_interval([1.0, 1.0, 1.0])
    (100.0, 100.0, 100.0)
    """
    a = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, size=(n_resamples, a.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return round(100 * float(a.mean()), 2), round(100 * float(low), 2), round(100 * float(high), 2)


def summarise(lang: str, scores: dict[str, list[float]], seed: int = 0) -> dict:
    """One language's row: each route's F1 with its interval, and the paired differences."""
    from core.metrics.paired import paired_difference

    row = {"lang": lang, "n": len(next(iter(scores.values()))), "routes": {}, "differences": []}
    for route in ROUTES:
        if route in scores:
            f1, low, high = mean_interval(scores[route], seed)
            row["routes"][route] = {"f1": f1, "ci95": [low, high]}
    for a, b in PAIRS:
        if a in scores and b in scores:
            r = paired_difference(scores[a], scores[b], seed=seed)
            row["differences"].append({"a": a, "b": b, "difference": round(100 * r["difference"], 2),
                                       "ci95": [round(100 * r["ci_low"], 2), round(100 * r["ci_high"], 2)],
                                       "significant": bool(r["significant"])})
    return row


CHUNK = 64   # questions translated and answered between two progress reports


def run_language(lang: str, multilingual, english, translator, first: int | None = None,
                 seed: int = 0, progress=None) -> dict:
    """The three routes for XQuAD in ``lang`` (engines: ``multilingual`` for cross and native,
    ``english`` for translate; ``translator`` None or without the pair leaves translate out, and
    the row says why)."""
    from core.datasets import load_dataset

    items = parallel_items(load_dataset(f"xquad/xquad.{lang}"), load_dataset("xquad/xquad.en"))
    if first:
        items = items[:first]
    if len(items) < 2:
        raise ValueError(f"xquad.{lang}: fewer than 2 questions with answers in both languages")
    n = len(items)
    preds: dict[str, list[str]] = {}
    missing = None
    if translator is None:
        missing = "no offline machine translation is installed"
    elif (lang, "en") not in translator.available_pairs():
        missing = f"the translator has no {lang}->en pair"
    routes_run = {"translate": (english, lambda part: translator.translate(part, lang, "en"), "context_en"),
                  "cross": (multilingual, None, "context_en"), "native": (multilingual, None, "context")}
    for k, (route, (engine, translate, context)) in enumerate(routes_run.items()):
        if route == "translate" and missing:
            if progress:
                progress((k + 1) * n, 3 * n)
            continue
        preds[route] = []
        # a chunk at a time, so a page's Cancel (at the next report) stops within one
        for at in range(0, n, CHUNK):
            part = items[at:at + CHUNK]
            asked = [it.question for it in part]
            preds[route] += _answers(engine, translate(asked) if translate else asked,
                                     [getattr(it, context) for it in part])
            if progress:
                progress(k * n + at + len(part), 3 * n)
    row = summarise(lang, route_scores(preds, items, lang), seed)
    if missing:
        row["translate_missing"] = missing
    return row


def _answers(engine, questions: list[str], contexts: list[str]) -> list[str]:
    return [p.text for p in engine.predict(questions, contexts, n_best=1, skip_invalid=True)]


def csv_rows(rows: list[dict]) -> list[dict]:
    """One CSV row per language and route, then one per paired difference."""
    out = []
    for r in rows:
        for route, v in r["routes"].items():
            out.append({"lang": r["lang"], "n": r["n"], "what": route, "f1": v["f1"],
                        "ci_low": v["ci95"][0], "ci_high": v["ci95"][1]})
        for d in r["differences"]:
            out.append({"lang": r["lang"], "n": r["n"], "what": f"{d['b']} - {d['a']}", "f1": d["difference"],
                        "ci_low": d["ci95"][0], "ci_high": d["ci95"][1]})
    return out


def format_table(rows: list[dict]) -> str:
    head = f"{'lang':5s} {'n':>5s} " + " ".join(f"{r:>22s}" for r in ROUTES) + "   native - translate"
    lines = [head]
    for r in rows:
        cells = []
        for route in ROUTES:
            v = r["routes"].get(route)
            cells.append(f"{v['f1']:6.2f} [{v['ci95'][0]:6.2f},{v['ci95'][1]:6.2f}]" if v else f"{'—':>22s}")
        d = next((d for d in r["differences"] if (d["a"], d["b"]) == ("translate", "native")), None)
        lines.append(f"{r['lang']:5s} {r['n']:5d} " + " ".join(cells) +
                     (f"   {d['difference']:+.2f} [{d['ci95'][0]:+.2f}, {d['ci95'][1]:+.2f}]" if d
                      else f"   ({r.get('translate_missing', '')})"))
    return "\n".join(lines)


def _read_files(langs, args) -> list:
    """The XQuAD files the routes read for ``--source``: each language's and the English one."""
    names = [f"xquad/xquad.{str(lang).lower()}" for lang in langs or []] + ["xquad/xquad.en"]
    return cli.dataset_files()(names, args)


def build_parser() -> cli.ArgumentParser:
    ap = cli.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_input("--source", nargs="+", required=True, paths=_read_files,
                 help="XQuAD languages other than en (de es zh ...)")
    ap.add_argument("--model", required=True, help="the multilingual model (routes b and c)")
    ap.add_argument("--english-model", help="the English model of route a (default: --model)")
    ap.add_argument("--first", type=cli.Count(MAX_QUESTIONS, low=2),
                    help="only the first N parallel questions of each language")
    ap.add_argument("--seed", type=cli.seed, default=0, help="bootstrap seed")
    ap.add_argument("--backend", default="default")
    ap.add_output("--json", help="write the rows to this JSON file")
    ap.add_output("--csv", help="write one row per language and route to this CSV file")
    return ap


@cli.command(PROG)
def main(argv=None) -> int:
    from core.qa import registry
    from core.translate.translators import default_translator

    args = build_parser().parse_args(argv)
    langs = [lang.lower() for lang in args.source]
    bad = [lang for lang in langs if lang == "en" or not lang.isalpha() or len(lang) != 2]
    if bad:
        raise cli.CLIError(f"--source takes two-letter XQuAD languages other than en, got {', '.join(bad)}")
    settings = engine_settings(backend=args.backend)
    registry.get_entry(args.model)
    multilingual = registry.load_engine(args.model, settings)
    english = registry.load_engine(args.english_model, settings) if args.english_model else multilingual
    translator = default_translator()
    rows = []
    for lang in langs:
        print(f"{lang}: answering three routes ...", file=sys.stderr, flush=True)
        rows.append(run_language(lang, multilingual, english, translator, args.first, args.seed))
        rows[-1] |= {"model": args.model, "english_model": args.english_model or args.model}
    print(format_table(rows))
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(rows, indent=1, ensure_ascii=False))
    if args.csv:
        from core.io.csv_export import csv_text

        cli.write_text_atomic(args.csv, csv_text(csv_rows(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
