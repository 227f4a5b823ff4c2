"""Write a challenge set: a SQuAD-format data set with one perturbation applied to every example.

    python -m core.perturb.make_challenge --input xquad.en.json --perturbation keyboard_Q \\
        --seed 0 --output xquad-keyboard-ours.json [--param p=0.5] [--limit 200]

The output has the layout of NoiseQA's challenge sets: the same ids, titles and contexts, only the
perturbed field changed (the question, or the context for context perturbations, with answer
offsets shifted). Examples the perturbation does not apply to (no verb, no numeral, ...) or is not
compatible with (language) keep their original text, unless ``--only-perturbed`` leaves them out.

``--perturbation`` takes a registered id or a chain "ID1+ID2" (:mod:`core.perturb.compose`);
``--param name=value`` sets a parameter (value parsed as JSON, else taken as a string); for a
chain, ``--param keyboard_Q.p=1.0`` sets a step's parameter. Each example gets its own
``random.Random`` seeded from ``(seed, example id)``, so one example's variant does not depend on
which other examples are in the file.

Printed summary (NoiseQA Table 3 style): corpus CER, WER (jiwer) and BLEU (sacreBLEU, uncased) of
the perturbed field against the original, over all written examples and over those a variant was
produced for (:func:`core.metrics.text_distance.noise_summary`), plus the counts of perturbed /
unchanged by chance / not applicable / incompatible examples.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from core import cli
from core.datasets import Dataset, load_squad
from core.metrics.text_distance import noise_summary
from core.perturb import compose
from core.perturb.base import Perturbation
from core.types import QAExample


def example_rng(seed: int, example_id: str) -> random.Random:
    """The generator for one example: seeded from sha256 of (seed, id), independent of file order."""
    digest = hashlib.sha256(f"{seed}\x00{example_id}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def parse_params(items: list[str]) -> tuple[dict, dict[str, dict]]:
    """``["p=0.5", "keyboard_Q.p=1"]`` -> ({"p": 0.5}, {"keyboard_Q": {"p": 1}})."""
    flat, per_step = {}, {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--param expects name=value, got {item!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if "." in name:
            step, _, key = name.partition(".")
            per_step.setdefault(step, {})[key] = value
        else:
            flat[name] = value
    return flat, per_step


@dataclass
class ChallengeResult:
    examples: list[QAExample]
    counts: Counter = field(default_factory=Counter)
    originals: list[str] = field(default_factory=list)     # perturbed field, original text
    perturbed: list[str] = field(default_factory=list)     # perturbed field, new text
    applied: list[bool] = field(default_factory=list)      # whether a variant was produced
    reasons: Counter = field(default_factory=Counter)      # incompatibility reasons


def build_challenge(examples: list[QAExample], perturbation: Perturbation, seed: int, params: dict,
                    only_perturbed: bool = False) -> ChallengeResult:
    """Apply ``perturbation`` to each example (first variant) and collect the counts."""
    prepare = getattr(perturbation, "prepare", None)
    if prepare is not None:
        prepare([e for e in examples if perturbation.is_compatible(e)], **params)
    result = ChallengeResult(examples=[])
    fld = perturbation.field
    for example in examples:
        if not perturbation.is_compatible(example):
            explain = getattr(perturbation, "why_incompatible", None)
            result.reasons[(explain(example) if explain else None) or "incompatible"] += 1
            result.counts["incompatible"] += 1
            new = None
        else:
            variants = perturbation.apply(example, example_rng(seed, example.id), **params)
            new = variants[0].example if variants else None
            if new is None:
                result.counts["not applicable"] += 1
            elif getattr(new, fld) == getattr(example, fld):
                result.counts["unchanged by chance"] += 1
            else:
                result.counts["perturbed"] += 1
        if new is None and only_perturbed:
            continue
        out = new if new is not None else example
        result.examples.append(out)
        result.originals.append(getattr(example, fld))
        result.perturbed.append(getattr(out, fld))
        result.applied.append(new is not None)
    return result


def summary_lines(result: ChallengeResult, total: int) -> list[str]:
    c = result.counts
    lines = [f"examples: {total} | perturbed: {c['perturbed']} | unchanged by chance: {c['unchanged by chance']}"
             f" | not applicable: {c['not applicable']} | incompatible: {c['incompatible']}"]
    lines += [f"  incompatible ({n}): {reason}" for reason, n in result.reasons.most_common()]
    lines.append(f"{'':<22}{'CER':>8}{'WER':>8}{'BLEU':>8}")
    rows = [("all written examples", result.originals, result.perturbed)]
    changed = [(o, p) for o, p, a in zip(result.originals, result.perturbed, result.applied) if a]
    if changed:
        rows.append(("with a variant", [o for o, _ in changed], [p for _, p in changed]))
    for label, originals, perturbed in rows:
        if not originals:
            continue
        s = noise_summary(originals, perturbed)
        lines.append(f"{label:<22}{s['cer']:>8.1f}{s['wer']:>8.1f}{s['bleu']:>8.1f}")
    return lines


PROG = "python -m core.perturb.make_challenge"


@cli.command(PROG)
def main(argv: list[str] | None = None) -> int:
    """Bad input (an unknown id or parameter, an unreadable input, an output that cannot be
    written, a perturbation whose tool is missing) ends in one line and exit status 2 (core.cli);
    the output is written whole at the end or not at all."""
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="SQuAD-format JSON file (XQuAD, SQuAD dev, ...)")
    parser.add_argument("--perturbation", required=True, help="registered id, or a chain ID1+ID2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", required=True, help="where to write the challenge set (SQuAD JSON)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--lang", default=None, help="language of the input (default: from the file)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N examples")
    parser.add_argument("--only-perturbed", action="store_true",
                        help="leave out the examples the perturbation did not apply to")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        raise cli.CLIError(f"--limit must be at least 1, got {args.limit}")

    flat, per_step = parse_params(args.param)
    if "+" in args.perturbation:
        if flat:
            raise ValueError("for a chain, name the step: --param STEP_ID.name=value")
        perturbation = compose.Composite([s.strip() for s in args.perturbation.split("+")], per_step)
    else:
        if per_step:
            raise ValueError("STEP.name=value parameters are only for chains (ID1+ID2)")
        perturbation = compose.resolve(args.perturbation)
        perturbation.resolve_params(flat)   # fail before reading the data
    cli.writable_file(args.output, "--output")  # before the work, not after it
    dataset = load_squad(args.input, lang=args.lang)
    examples = dataset.examples[: args.limit] if args.limit else dataset.examples

    started = time.perf_counter()
    result = build_challenge(examples, perturbation, args.seed, flat, args.only_perturbed)
    elapsed = time.perf_counter() - started
    out = Dataset(name=f"{dataset.name}-{perturbation.id}", lang=dataset.lang, examples=result.examples)
    doc = out.to_squad_json()
    cli.write_text_atomic(args.output, json.dumps(doc, ensure_ascii=False, indent=1))

    print(f"challenge set: {dataset.name} + {perturbation.id} (seed {args.seed}, field {perturbation.field})"
          f" -> {args.output} ({len(result.examples)} examples, {elapsed:.1f} s)")
    for line in summary_lines(result, len(examples)):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
