"""Token attributions of a model's answer, for a clean question and optionally a perturbed one.

    python -m core.explain --model minilm-squad --context "Maria has a cat and a truck." \\
        --question "What animal does Maria have?" [--perturbation keyboard_Q:p=0.5 --seed 0] \\
        --json out.json [--steps 50] [--lang en]

Writes (atomically) one JSON object: the model, the method, and for the clean question its
answer and every question and context token with its character offsets (into the question or the
context as given) and its attribution (``score`` = ``score_start`` + ``score_end``: integrated
gradients of the span's start and end logits, :mod:`core.explain.integrated`), with the
completeness check per part. With ``--perturbation`` (one spec of :mod:`core.perturb.spec`, a
chain included) and ``--seed``, the perturbation's variant of the example (the generator a sweep's
repeat 0 and the Variants page use: :func:`core.perturb.spec.rng_for`) is explained the same way
under ``"perturbed"``, and ``"change"`` aligns the edited field's words, clean against perturbed,
and says how the answer moved. Bad input (unknown model, bad spec, a perturbation with nothing to
change, an empty question, an output that is an input) is one line on stderr and exit status 2.
"""
from __future__ import annotations

import json
from pathlib import Path

from core import cli
from core.budgets import MAX_ATTRIBUTION_STEPS
from core.explain.integrated import DEFAULT_STEPS

PROG = "python -m core.explain"


def _parser() -> cli.ArgumentParser:
    ap = cli.ArgumentParser(prog=PROG, description="Token attributions (integrated gradients) of a model's answer.")
    ap.add_argument("--model", required=True, help="a model name of models.toml")
    ap.add_argument("--context", required=True, help="the context paragraph (text)")
    ap.add_argument("--question", required=True, help="the question (text)")
    ap.add_argument("--perturbation", default=None,
                    help="one perturbation spec (keyboard_Q:p=0.5, TLQ+keyboard_Q, ...) to explain too")
    ap.add_argument("--seed", type=cli.seed, default=None,
                    help="the perturbation's seed (required with --perturbation)")
    ap.add_argument("--lang", default=None, help="language of the example (default: detected from the context)")
    ap.add_argument("--steps", type=cli.Count(MAX_ATTRIBUTION_STEPS, low=2), default=DEFAULT_STEPS,
                    help=f"integration steps of integrated gradients (at least 2, default {DEFAULT_STEPS})")
    ap.add_output("--json", required=True, help="output JSON file")
    return ap


def perturb(spec_text: str, seed: int, question: str, context: str, lang: str):
    """The variant ``spec_text`` makes of (question, context) under ``seed`` (repeat 0), or
    CLIError saying why there is none."""
    from core.perturb.compose import build
    from core.perturb.spec import parse_spec, rng_for
    from core.types import QAExample

    spec = parse_spec(spec_text)
    p, params = build(spec)
    example = QAExample("cli", question, context, (), lang=lang)
    why = p.why_not(example, params)
    if why is not None:
        raise cli.CLIError(f"--perturbation {spec_text}: {why}")
    p.prepare([example], **params)
    variants = p.apply(example, rng_for(seed, example, spec, 0), **params)
    if not variants:
        raise cli.CLIError(f"--perturbation {spec_text}: this example has nothing it can change ({p.description})")
    return spec, variants[0]


@cli.command(PROG)
def main(argv: list[str]) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.perturbation is not None and args.seed is None:
        ap.error("--perturbation needs --seed N (the perturbation's random seed)")
    if args.seed is not None and args.perturbation is None:
        ap.error("--seed is only for --perturbation")
    from core.qa.engine import validate_pair
    from core.qa.registry import get_entry

    out = Path(args.json).expanduser()
    entry = get_entry(args.model)
    folder = entry.local_dir()
    if folder is not None and out.resolve().is_relative_to(folder.resolve()):
        raise cli.CLIError(f"--json {out} is inside the model's folder {folder}: refusing to write among its "
                           "files; name another output file")
    validate_pair(args.question, args.context)
    lang = args.lang
    if lang is None:
        from core.langid import detect_lang

        lang = detect_lang(args.context)
    variant = spec = None
    if args.perturbation is not None:   # before the model loads: a bad spec costs nothing
        spec, variant = perturb(args.perturbation, args.seed, args.question, args.context, lang)
    from core.explain.integrated import explain
    from core.explain.pair import explain_change
    from core.qa.registry import load_engine

    engine = load_engine(args.model)
    clean = explain(engine, args.question, args.context, n_steps=args.steps)
    result = {
        "model": args.model,
        "method": {"name": "integrated gradients (layer integrated gradients over the input word embeddings)",
                   "targets": "start logit at the span's first token, end logit at its last token",
                   "baseline": "the part's tokens (question or context) replaced by the pad token, the other part kept",
                   "weights": "torch", "n_steps": args.steps},
        "context": args.context,
        "clean": clean.as_dict(),
    }
    if variant is not None:
        q, c = variant.example.question, variant.example.context
        change = explain_change(engine, args.question, args.context, q, c, variant.edits, variant.field,
                                n_steps=args.steps, clean=clean)
        result["perturbed"] = {"perturbation": spec.text, "seed": args.seed, "field": variant.field,
                               "changed": getattr(variant.example, variant.field) != (
                                   args.question if variant.field == "question" else args.context),
                               "edits": [{"start": e.start, "end": e.end, "replacement": e.replacement, "kind": e.kind}
                                         for e in variant.edits],
                               **({"context": c} if variant.field == "context" else {}),
                               **change.perturbed.as_dict()}
        result["change"] = change.as_dict()
    cli.write_text_atomic(out, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    answer = clean.answer.text if clean.answer else "(no answer)"
    print(f"{args.model}: {answer!r}; {len(clean.tokens)} tokens attributed -> {out}")
    return 0

