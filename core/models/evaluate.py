"""Score registered QA models on data sets: ``python -m core.models.evaluate``.

    python -m core.models.evaluate --model minilm-squad --dataset xquad/xquad.en xquad/xquad.de --card

EM/F1 use the language's scorer (SQuAD v1.1 for most languages, character-level for Chinese,
see core.metrics). Latency is the batched engine's wall time per question and questions/second.
With ``--card`` the figures are written into the model's ``model_card.json`` (under
``evaluations``, keyed by data set) and its README.md is regenerated from it (core.models.cards).
With two models and ``--paired`` it also says whether the second is really better than the
first on each data set: the mean per-question F1 difference with a 95% paired-bootstrap interval
(core.metrics.paired).

    python -m core.models.evaluate --model minilm-squad minilm-squad-noise --paired \
        --dataset noiseqa/Synthetic/xquad-asr-synthetic --json runs/paired.json
"""
from __future__ import annotations

import dataclasses
import json
import platform
import re
import sys
import time
from datetime import datetime, timezone

from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_QUESTIONS, MAX_THREADS
from core.datasets import Dataset
from core.metrics import corpus_scorer, score_answer
from core.metrics.paired import paired_difference
from core.models.cards import read_card, write_card
from core.qa.engine import QAEngine, QAInputError, engine_settings, validate_pair
from core.types import QAExample

PROG = "python -m core.models.evaluate"


def scorable(examples: list[QAExample]) -> tuple[list[QAExample], dict[str, int]]:
    """The examples that can be scored, and {reason: count} of those left out: SQuAD 2.0's
    unanswerable questions (no gold answer to compare with) and pairs the engine refuses (an
    empty question would otherwise score 0 as if the model had failed it).

    >>> from core.types import Answer
    >>> ok = QAExample("1", "Where?", "In Paris.", [Answer("Paris", 3)])
    >>> keep, skipped = scorable([ok, QAExample("2", "Who?", "No one.", [], is_impossible=True),
    ...                           QAExample("3", "  ", "In Paris.", [Answer("Paris", 3)])])
    >>> [e.id for e in keep], skipped
    (['1'], {'unanswerable (SQuAD 2.0 is_impossible)': 1, 'empty question': 1})
    """
    keep, skipped = [], {}
    for e in examples:
        reason = None
        if e.is_impossible:
            reason = "unanswerable (SQuAD 2.0 is_impossible)"
        elif not e.answers:
            reason = "no gold answer"
        else:
            try:
                validate_pair(e.question, e.context)
            except QAInputError as exc:
                reason = exc.reason
        if reason is None:
            keep.append(e)
        else:
            skipped[reason] = skipped.get(reason, 0) + 1
    return keep, skipped


def skip_summary(name: str, n_scored: int, skipped: dict[str, int]) -> str:
    """One line saying what was scored and what was left out, and why.

    >>> skip_summary("squad2", 3, {"unanswerable (SQuAD 2.0 is_impossible)": 2, "empty question": 1})
    'squad2: scored 3 of 6 questions; skipped 3: 2 unanswerable (SQuAD 2.0 is_impossible), 1 empty question'
    """
    total = n_scored + sum(skipped.values())
    if not skipped:
        return f"{name}: scored all {total} questions"
    reasons = ", ".join(f"{n} {why}" for why, n in skipped.items())
    return f"{name}: scored {n_scored} of {total} questions; skipped {sum(skipped.values())}: {reasons}"


def select(examples: list[QAExample], first: int | None = None, sample: int | None = None,
           seed: int = 0) -> list[QAExample]:
    """The questions to score: the first ``first``, or a seeded sample of ``sample`` in file
    order (core.datasets.sample_examples: the sample of 100 is inside the sample of 200), or all.

    >>> exs = [QAExample(str(i), "Q?", "C.") for i in range(10)]
    >>> [e.id for e in select(exs, first=3)], len(select(exs, sample=4, seed=1)), len(select(exs))
    (['0', '1', '2'], 4, 10)
    >>> select(exs, sample=4, seed=1) == select(exs, sample=4, seed=1)
    True
    """
    if first is not None:
        return list(examples[:first])
    if sample is not None:
        from core.datasets import sample_examples

        return sample_examples(examples, sample, seed)
    return list(examples)


def evaluate(engine: QAEngine, ds: Dataset, progress=None, per_question: bool = False,
             details: bool = False) -> dict:
    """EM/F1 (x100) and latency of one engine on one data set: the questions :func:`scorable`
    keeps; ``skipped`` counts the others by reason, ``n`` the scored ones.

    ``per_question``: also return ``per_question_f1``, {question id: F1 in [0, 1]}, for paired
    comparisons of two models (:mod:`core.metrics.paired`). ``details``: also return
    ``predictions`` ({id: answer}, the official SQuAD prediction format) and ``questions`` (one
    row per question: id, question, gold, prediction, EM, F1)."""
    examples, skipped = scorable(ds.examples)
    if not examples:
        raise ValueError(f"{ds.name}: no question can be scored ({skip_summary(ds.name, 0, skipped)})")
    t0 = time.perf_counter()
    preds = engine.predict([e.question for e in examples], [e.context for e in examples],
                           n_best=1, progress=progress, skip_invalid=True)
    secs = time.perf_counter() - t0
    # Pairs this engine could not answer (an LLM's context window) are left out and counted, as
    # the pairs no engine can answer are: scored, they would read as wrong answers.
    unanswered: dict[str, int] = {}
    for p in preds:
        if p.unanswered:
            unanswered[p.unanswered] = unanswered.get(p.unanswered, 0) + 1
            skipped[p.unanswered] = skipped.get(p.unanswered, 0) + 1
    examples, preds = [e for e, p in zip(examples, preds) if not p.unanswered], [p for p in preds if not p.unanswered]
    if not examples:
        raise ValueError(f"the model answered no question: {skip_summary(ds.name, 0, skipped)}")
    predictions = {e.id: p.text for e, p in zip(examples, preds)}
    references = {e.id: e.answer_texts for e in examples}
    scorer_name, scorer = corpus_scorer(ds.lang)
    s = scorer(predictions, references)
    result = {
        "dataset": ds.name,
        "lang": ds.lang,
        "n": len(examples),
        "skipped": skipped,
        "exact_match": round(s["exact_match"], 2),
        "f1": round(s["f1"], 2),
        "scorer": scorer_name,
        "seconds": round(secs, 2),
        "questions_per_second": round(len(examples) / secs, 2),
        "ms_per_question": round(1000 * secs / len(examples), 2),
        "threads": engine.settings.threads,
        "max_answer_tokens": engine.settings.max_answer_tokens,
        "backend": getattr(engine, "backend_name", "torch"),  # the one that answered
        "device": str(engine.device),
        "hardware": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }
    if unanswered:
        result["unanswered"] = unanswered
    aligned = [p.alignment for p in preds if p.alignment]
    if aligned:   # a generative reader: how often its answer was found in the passage, in % of questions
        result["alignment"] = {k: round(100 * aligned.count(k) / len(preds), 1)
                               for k in ("exact", "approximate", "not in the passage")}
    if per_question or details:
        each = {e.id: score_answer(predictions[e.id], e.answer_texts, ds.lang) for e in examples}
    if per_question:
        result["per_question_f1"] = {i: f1 for i, (_em, f1) in each.items()}
    if details:
        result["predictions"] = predictions
        result["questions"] = [{"id": e.id, "question": e.question, "gold": " | ".join(e.answer_texts),
                                "prediction": predictions[e.id], "EM": each[e.id][0], "F1": round(each[e.id][1], 4)}
                               for e in examples]
    return result


def compare_paired(result_a: dict, result_b: dict, seed: int = 0) -> dict:
    """B - A in F1 points on one data set, with a 95% paired-bootstrap interval, from two
    :func:`evaluate` results made with ``per_question=True`` on the same questions."""
    ids = list(result_a["per_question_f1"])
    if set(ids) != set(result_b["per_question_f1"]):
        raise ValueError(f"{result_a['dataset']}: the two results do not cover the same questions")
    r = paired_difference([result_a["per_question_f1"][i] for i in ids],
                          [result_b["per_question_f1"][i] for i in ids], seed=seed)
    points = {k: round(100 * r[k], 2) for k in ("mean_a", "mean_b", "difference", "ci_low", "ci_high")}
    return {"dataset": result_a["dataset"], "model_a": result_a.get("model"), "model_b": result_b.get("model"),
            "f1_a": points["mean_a"], "f1_b": points["mean_b"], "difference": points["difference"],
            "ci95": [points["ci_low"], points["ci_high"]], "significant": r["significant"], "n": r["n"],
            "bootstrap": {"n_resamples": r["n_resamples"], "seed": r["seed"], "method": "paired percentile (scipy)"}}


def _prediction_paths(value, args) -> list[str] | None:
    """Every file ``--predictions`` writes (one per model and data set when there are several)."""
    if not value:
        return None
    many = len(args.model) * len(args.dataset) > 1
    return [prediction_path(value, m, d, many) for m in args.model for d in args.dataset]


def build_parser() -> cli.ArgumentParser:
    """The argument table."""
    ap = cli.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs="+", required=True, help="registered model names")
    ap.add_input("--dataset", nargs="+", required=True, paths=cli.dataset_files(),
                    help="files, demo.<lang>, or names under the data dir (xquad/xquad.en)")
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS, low=0), default=0,
                    help="CPU threads (default 0: the policy of core.qa.threads, every core when alone)")
    ap.add_argument("--batch-size", type=cli.Count(MAX_BATCH_SIZE), default=None,
                    help="windows per forward pass (default: 8 on CPU, 256 on a GPU)")
    ap.add_argument("--backend", default="default",
                    help="forward pass: default (the model card's choice by the rule), torch, torch-bf16, onnx "
                         "(ONNX Runtime fp32) or onnx-int8; the card records which one answered")
    ap.add_argument("--card", action="store_true", help="write results into the model card")
    ap.add_output("--json", help="also write all results to this JSON file")
    ap.add_argument("--paired", action="store_true",
                    help="with exactly two models: the second minus the first in F1 on each data set, "
                         "with a 95%% paired-bootstrap interval over questions")
    pick = ap.add_mutually_exclusive_group()
    pick.add_argument("--first", type=cli.Count(MAX_QUESTIONS), metavar="N",
                      help="score only the first N scorable questions")
    pick.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), metavar="N",
                      help="score a seeded sample of N scorable questions (the sample core.sweeps draws)")
    ap.add_argument("--seed", type=cli.seed, default=0, help="seed of --sample (default 0)")
    ap.add_output("--predictions", metavar="OUT.json", paths=_prediction_paths,
                    help="write the predictions in the official SQuAD format {id: answer}; with several "
                         "models or data sets, one file each: OUT.<model>.<dataset>.json")
    ap.add_output("--csv", metavar="OUT.csv",
                    help="write one row per question: model, dataset, id, question, gold, prediction, EM, F1")
    ap.add_argument("--max-answer-tokens", type=cli.Bounded(1, 512), default=30,
                    help="longest answer span the engine may return, in tokens (default 30; long answers "
                         "in domain sets need more)")
    cli.add_loader_options(ap)
    return ap


def load_datasets(args) -> tuple[list[Dataset], list[str]]:
    """The data sets to score (each cut to ``--first`` / ``--sample``), and their load lines.
    Refuses a set with no scorable question; says on stderr what each set leaves out."""
    from core.datasets import load_dataset

    datasets, load_lines = [], []
    for dname in args.dataset:
        ds = load_dataset(dname, **cli.loader_kwargs(args))
        ds.name = dname
        load_lines.append(ds.load_line())
        examples, skipped = scorable(ds.examples)
        if not examples:
            raise cli.CLIError(f"no question can be scored: {skip_summary(dname, 0, skipped)}")
        if skipped:
            print(skip_summary(dname, len(examples), skipped), file=sys.stderr, flush=True)
        chosen = select(examples, args.first, args.sample, args.seed)
        if len(chosen) < len(examples):
            how = f"the first {len(chosen)}" if args.first else f"a sample of {len(chosen)} (seed {args.seed})"
            print(f"{dname}: scoring {how} of {len(examples)} scorable questions", file=sys.stderr, flush=True)
            ds = dataclasses.replace(ds, examples=chosen, report=list(ds.report), stats=dict(ds.stats))
            ds.name = dname
        datasets.append(ds)
    return datasets, load_lines


def evaluate_on_all(engine, name: str, datasets: list[Dataset], args, many: bool) -> tuple[list[dict], list[dict]]:
    """One model on every data set, with a progress bar each: (results, per-question rows);
    writes ``--predictions`` files on the way and prints one line per data set."""
    from tqdm import tqdm

    results, rows = [], []
    for ds in datasets:
        dname = ds.name
        with tqdm(total=None, desc=f"{name} on {dname}", unit="window", file=sys.stderr) as bar:
            def progress(done, total, bar=bar):
                bar.total = total
                bar.n = done
                bar.refresh()
            r = evaluate(engine, ds, progress, per_question=args.paired,
                         details=bool(args.predictions or args.csv))
        r["model"] = name
        if args.first or args.sample:
            r["selection"] = {"first": args.first} if args.first else {"sample": args.sample, "seed": args.seed}
        if args.predictions:
            out = prediction_path(args.predictions, name, dname, many)
            cli.write_text_atomic(out, json.dumps(r["predictions"], indent=1, ensure_ascii=False))
            print(f"predictions (official SQuAD format) -> {out}", file=sys.stderr, flush=True)
        rows += [{"model": name, "dataset": dname, **q} for q in r.pop("questions", [])]
        r.pop("predictions", None)
        if r.get("unanswered"):
            print(f"{name} on {dname}: left out, not scored: "
                  + ", ".join(f"{n} {why}" for why, n in r["unanswered"].items()), file=sys.stderr, flush=True)
        print(f"{name:24s} {dname:40s} n={r['n']:5d} EM={r['exact_match']:6.2f} F1={r['f1']:6.2f} "
              f"{r['ms_per_question']:.1f} ms/q", flush=True)
        results.append(r)
    return results, rows


@cli.command(PROG)
def main(argv=None) -> int:
    """Every input is checked before a model is loaded: settings, the --json path, model names,
    data sets and model cards; any of them wrong ends in one line and exit status 2 (core.cli)."""
    from core.qa import registry

    ap = build_parser()
    args = ap.parse_args(argv)
    if args.paired and len(args.model) != 2:
        ap.error("--paired compares exactly two models (--model A B)")

    settings = engine_settings(threads=args.threads or None, batch_size=args.batch_size, backend=args.backend,
                                   max_answer_tokens=args.max_answer_tokens)
    entries = {name: registry.get_entry(name) for name in args.model}
    if args.card:
        for entry in entries.values():
            if entry.local_dir() is not None:
                read_card(entry.local_dir())  # a broken card fails now, not after the evaluation
    # The load lines are printed once a model has loaded: a refused run prints nothing on stdout.
    datasets, load_lines = load_datasets(args)

    all_results, rows = [], []
    many = len(entries) * len(datasets) > 1
    for name, entry in entries.items():
        engine = registry.load_engine(name, settings)
        for line in load_lines:
            print(line, flush=True)
        load_lines = []
        results, model_rows = evaluate_on_all(engine, name, datasets, args, many)
        rows += model_rows
        if args.card:
            if entry.local_dir() is None:
                print(f"{name}: hub model, no local model card to write", file=sys.stderr)
            else:
                write_card(entry.local_dir(), [{k: v for k, v in r.items() if k != "per_question_f1"} for r in results])
        all_results += results
    output: dict | list = all_results
    if args.paired:
        n = len(args.dataset)
        comparisons = [compare_paired(a, b) for a, b in zip(all_results[:n], all_results[n:])]
        for c in comparisons:
            print(f"{c['model_b']} - {c['model_a']} on {c['dataset']}: F1 {c['difference']:+.2f} "
                  f"(95% CI {c['ci95'][0]:+.2f} to {c['ci95'][1]:+.2f}; "
                  f"{'significant' if c['significant'] else 'not significant'}; n={c['n']})", flush=True)
        output = {"results": all_results, "paired": comparisons}
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(output, indent=1, ensure_ascii=False))
    if args.csv:
        from core.io.csv_export import csv_text

        cli.write_text_atomic(args.csv, csv_text(rows))
        print(f"{len(rows)} per-question rows -> {args.csv}", file=sys.stderr, flush=True)
    return 0


def prediction_path(path: str, model: str, dataset: str, many: bool) -> str:
    """``path`` itself for one model on one data set; else ``OUT.<model>.<dataset>.json``.

    >>> prediction_path("p.json", "m", "xquad/xquad.en", False), prediction_path("p.json", "m", "xquad/xquad.en", True)
    ('p.json', 'p.m.xquad-xquad.en.json')
    """
    if not many:
        return path
    stem = path.removesuffix(".json")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", dataset).strip("-")
    return f"{stem}.{model}.{slug}.json"


if __name__ == "__main__":
    sys.exit(main())
