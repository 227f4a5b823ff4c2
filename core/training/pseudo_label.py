"""Self-training data: questions without answers, labelled with a model's own confident spans.

The only German questions with answers in ``../shared/data`` are MLQA-de dev's 512; the partial
MLQA-de test file has 3,821 German questions and contexts whose answers are all empty (it was
rebuilt from MLQA's cross-lingual files). Self-training turns such questions into training data:
a QA model answers each one, the answers it is confident of (the best span's score, p(start) *
p(end) in its window, at least ``min_score``) become gold spans, and a further training stage
learns from them beside the real gold data. The model sees German questions and contexts it has
not seen; what it learns is bounded by what it already answers, so the threshold trades quantity
against label noise.

``python -m core.training.pseudo_label --model M --data FILE --min-score 0.5 --output OUT.json``
writes a SQuAD v1.1 file (``answer_start`` and ``text`` from the model's span, ``pseudo_score``
beside them) whose top level records the model, its fingerprint, the source file and the
threshold. Train on it with the source named too when it is an MLQA file, so that the trainer's
evaluation-set guard knows those contexts are allowed (``--allow-mlqa``)::

    python -m core.training ... --allow-mlqa \\
        --train .../mlqa/dev-context-de-question-de.json .../mlqa/test-context-de-question-de.partial.json OUT.json
"""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core import cli
from core.budgets import MAX_QUESTIONS
from core.qa.engine import engine_settings
from core.types import QAExample, Span


def confident(examples: Sequence[QAExample], spans: Sequence[Span | None],
              min_score: float) -> list[tuple[QAExample, Span]]:
    """The (example, span) pairs whose span scores at least ``min_score``, in input order; an
    example the model gave no span (``None``) or an empty one is left out.

    >>> e = [QAExample(str(i), "Wer?", "Anna lief.") for i in range(3)]
    >>> s = [Span("Anna", 0, 4, 0.9), Span("lief", 5, 9, 0.2), None]
    >>> [(x.id, y.text) for x, y in confident(e, s, 0.5)]
    [('0', 'Anna')]
    """
    return [(e, s) for e, s in zip(examples, spans, strict=True)
            if s is not None and s.text.strip() and s.score >= min_score]


def to_squad(labelled: Sequence[tuple[QAExample, Span]], meta: dict) -> dict:
    """A SQuAD v1.1 document: one paragraph per distinct (title, context), questions in order,
    each answered by its span (``pseudo_score`` kept beside it); ``meta`` goes to the top level.

    >>> e = QAExample("q1", "Wer lief?", "Anna lief.", title="T")
    >>> doc = to_squad([(e, Span("Anna", 0, 4, 0.91234))], {"model": "m"})
    >>> doc["model"], doc["data"][0]["paragraphs"][0]["qas"][0]["answers"]
    ('m', [{'answer_start': 0, 'text': 'Anna', 'pseudo_score': 0.9123}])
    """
    articles: dict[str, dict] = {}
    paragraphs: dict[tuple[str, str], dict] = {}
    for e, s in labelled:
        article = articles.setdefault(e.title, {"title": e.title, "paragraphs": []})
        key = (e.title, e.context)
        if key not in paragraphs:
            paragraphs[key] = {"context": e.context, "qas": []}
            article["paragraphs"].append(paragraphs[key])
        paragraphs[key]["qas"].append({"id": e.id, "question": e.question, "answers": [
            {"answer_start": s.start, "text": s.text, "pseudo_score": round(s.score, 4)}]})
    return {"version": "1.1", **meta, "data": list(articles.values())}


def build_parser() -> cli.ArgumentParser:
    ap = cli.ArgumentParser(prog="python -m core.training.pseudo_label", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="registered model name (core.qa.registry)")
    ap.add_input("--data", required=True, help="SQuAD-format file of the questions to label")
    ap.add_output("--output", required=True, help="the labelled SQuAD v1.1 file to write")
    ap.add_argument("--min-score", type=float, default=0.5,
                    help="keep a question when its best span's p(start)*p(end) is at least this (default 0.5)")
    ap.add_argument("--backend", default="default", help="engine backend (default: the model card's)")
    ap.add_argument("--first", type=cli.Count(MAX_QUESTIONS), default=None, metavar="N",
                    help="label only the first N questions")
    cli.add_loader_options(ap)
    return ap


@cli.command("python -m core.training.pseudo_label")
def main(argv: list[str]) -> int:
    from core.datasets import load_squad
    from core.qa import registry
    from core.qa.protocol import fingerprint_of

    args = build_parser().parse_args(argv)
    if not 0.0 <= args.min_score <= 1.0:
        raise cli.CLIError(f"--min-score is a probability, between 0 and 1, not {args.min_score}")
    out = Path(args.output).expanduser()
    registry.get_entry(args.model)  # an unknown name fails before the data loads
    ds = load_squad(args.data, **cli.loader_kwargs(args))
    examples = [e for e in ds.examples if e.question.strip()][:args.first]
    if not examples:
        raise cli.CLIError(f"{args.data}: no question to label")
    engine = registry.load_engine(args.model, engine_settings(backend=args.backend))
    print(f"{ds.load_line()}; labelling {len(examples)} questions with {args.model} "
          f"({engine.resolve_backend()})", file=sys.stderr, flush=True)

    def progress(done: int, total: int) -> None:
        if done == total or done % 200 == 0:
            print(f"  {done}/{total}", file=sys.stderr, flush=True)

    predictions = engine.predict([e.question for e in examples], [e.context for e in examples],
                                 n_best=1, progress=progress, skip_invalid=True)
    spans = [p.best for p in predictions]
    kept = confident(examples, spans, args.min_score)
    scores = [s.score for s in spans if s is not None]
    quartiles = [round(float(q), 4) for q in np.percentile(scores, [25, 50, 75])] if scores else []
    meta = {"pseudo_labels": {
        "model": args.model, "fingerprint": fingerprint_of(engine), "backend": engine.resolve_backend(),
        "source": str(Path(args.data)), "lang": ds.lang, "min_score": args.min_score,
        "questions": len(examples), "kept": len(kept),
        "score_quartiles": quartiles,
    }}
    cli.write_text_atomic(out, json.dumps(to_squad(kept, meta), ensure_ascii=False, indent=1))
    print(f"kept {len(kept)} of {len(examples)} questions (score >= {args.min_score}; quartiles "
          f"{quartiles}) -> {out}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
