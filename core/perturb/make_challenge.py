"""Write a challenge set: a SQuAD-format data set with one perturbation applied to every example.

    python -m core.perturb.make_challenge --input xquad.en.json --perturbation keyboard_Q:p=0.5 \\
        --seed 0 --output xquad-keyboard-ours.json [--limit 200]

The output has the layout of NoiseQA's challenge sets: the same ids, titles and contexts, only the
perturbed field changed (the question, or the context for context perturbations, with answer
offsets shifted). Examples the perturbation does not apply to (no verb, no numeral, ...) or is not
compatible with (language) keep their original text, unless ``--only-perturbed`` leaves them out.

``--perturbation`` takes one spec in the language of :mod:`core.perturb.spec`, as the sweep CLI
does: a registered id with parameters (``keyboard_Q:p=0.5``) or a chain (``keyboard_Q:p=0.5+DPQ``,
:mod:`core.perturb.compose`). ``--param name=value`` (the older flag) adds a parameter (value
parsed as JSON, else taken as a string); for a chain, ``--param keyboard_Q.p=1.0`` sets a step's.
Each example draws from :func:`core.perturb.spec.rng_for` (seed, example, spec, repeat 0): the
generator a sweep with the same seed gives its first repeat and the Variants page its repeat 0, so
the three show the same variant, and one example's variant does not depend on which other
examples are in the file.

Printed summary: NoiseQA's Table 3, corpus CER, WER and BLEU of the perturbed field against the
original, as the paper defines it (CER/WER lower-cased without punctuation, BLEU uncased as
written: :func:`core.metrics.text_distance.table3_summary`) with the raw figure beside it (case
and punctuation counted: ``noise_summary``), over all written examples and over those a variant
was produced for, plus the counts of perturbed / unchanged by chance / not applicable /
incompatible examples.

An existing challenge file (NoiseQA's, a paraphrase set, ...) is measured the same way:

    python -m core.perturb.make_challenge --input xquad.en.json --challenge xquad-asr-synthetic.json

pairs it with ``--input`` (:func:`core.datasets.pair_challenge`: by id, else by position, else
refused naming the mismatches; ``--pair-by`` forces a rule), prints the rule and the counts and
the Table 3 figures of the paired questions. Nothing is written. The natural sets
(:mod:`core.datasets.natural`) are measured by name, against SQuAD dev or their own originals::

    python -m core.perturb.make_challenge --input squad/dev-v1.1.json --challenge natural:asr_human
    python -m core.perturb.make_challenge --input natural:heysquad --challenge natural:heysquad/asr_human

Where some paired questions sit on XQuAD's paragraphs (SQuAD dev, NoiseQA), their figures are
given apart from the others'.
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from dataclasses import dataclass, field

from core import cli
from core.budgets import MAX_QUESTIONS
from core.datasets import Dataset, DatasetError, load_dataset, load_squad, pair_challenge
from core.datasets.natural import CONDITIONS, NATURAL_PREFIX, natural_questions, xquad_ids
from core.metrics.text_distance import noise_summary, table3_summary
from core.perturb import compose
from core.perturb.base import Perturbation, PerturbationError
from core.perturb.spec import PerturbationSpec, parse_spec, rng_for
from core.types import QAExample


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


def spec_of(perturbation: Perturbation, params: dict) -> PerturbationSpec:
    """The spec a perturbation applied with ``params`` is (a Composite carries its own)."""
    own = getattr(perturbation, "spec", None)
    return own if isinstance(own, PerturbationSpec) else PerturbationSpec.make(perturbation.id, params)


def build_challenge(examples: list[QAExample], perturbation: Perturbation, seed: int, params: dict,
                    only_perturbed: bool = False) -> ChallengeResult:
    """Apply ``perturbation`` to each example (first variant, drawn from
    ``rng_for(seed, example, spec, 0)``) and collect the counts.

    An example it cannot run on (its language) is counted and kept as it is; when it is the
    parameters that make it impossible (a pivot no translator has, a voice not installed), the
    whole set is refused with the reason (PerturbationError), before any work.
    """
    spec = spec_of(perturbation, params)
    reasons = [perturbation.why_not(e, params) for e in examples]
    for example, why in zip(examples, reasons):
        if why is not None and params and perturbation.why_not(example) is None:
            raise PerturbationError(why)
    perturbation.prepare([e for e, why in zip(examples, reasons) if why is None], **params)
    result = ChallengeResult(examples=[])
    fld = perturbation.field
    for example, why in zip(examples, reasons):
        if why is not None:
            result.reasons[why] += 1
            result.counts["incompatible"] += 1
            new = None
        else:
            variants = perturbation.apply(example, rng_for(seed, example, spec, 0), **params)
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
    rows = [("all written examples", result.originals, result.perturbed)]
    changed = [(o, p) for o, p, a in zip(result.originals, result.perturbed, result.applied) if a]
    if changed:
        rows.append(("with a variant", [o for o, _ in changed], [p for _, p in changed]))
    return lines + table3_lines([(label, o, p) for label, o, p in rows if o])


def table3_lines(rows: list[tuple[str, list[str], list[str]]]) -> list[str]:
    """NoiseQA Table 3 (the paper's definition) and the raw figure, one line per (label,
    originals, noisy).

    >>> for line in table3_lines([("set", ["When did the war end?"], ["when did the war and"])]):
    ...     print(line)
                            Table 3 (paper's definition)  raw (case, punctuation counted)
                               CER     WER    BLEU         CER     WER
    set                        5.0    20.0    54.8        14.3    40.0
    """
    lines = [f"{'':<22}{'Table 3 (paper' + chr(39) + 's definition)':>30}  raw (case, punctuation counted)",
             f"{'':<22}{'CER':>8}{'WER':>8}{'BLEU':>8}{'CER':>12}{'WER':>8}"]
    for label, originals, noisy in rows:
        t, raw = table3_summary(originals, noisy), noise_summary(originals, noisy)
        lines.append(f"{label:<22}{t['cer']:>8.1f}{t['wer']:>8.1f}{t['bleu']:>8.1f}{raw['cer']:>12.1f}{raw['wer']:>8.1f}")
    return lines


def measure_challenge(original: Dataset, challenge: Dataset, pair_by: str = "auto") -> list[str]:
    """The report on an existing challenge file: what was loaded, how it pairs with its
    original, and Table 3 of its questions against the paired originals."""
    pairing = pair_challenge(original, challenge, pair_by)
    lines = [original.load_line(), challenge.load_line(), f"{challenge.name}: {pairing.summary()}"]
    for o, c, why in pairing.mismatched[:3]:
        lines.append(f"  mismatched: {o}" + (f" / {c}" if c != o else "") + f": {why}")
    originals = [o.question for o, _ in pairing.pairs]
    noisy = [c.question for _, c in pairing.pairs]
    changed = sum(a != b for a, b in zip(originals, noisy))
    lines.append(f"questions changed: {changed:,} of {len(originals):,}")
    rows = [("paired questions", originals, noisy)]
    # SQuAD dev questions (natural sets, NoiseQA): those on XQuAD's paragraphs apart from the rest
    xquad = xquad_ids([o for o, _ in pairing.pairs])
    if xquad:
        for label, inside in (("xquad paragraphs", True), ("other paragraphs", False)):
            part = [(o.question, c.question) for o, c in pairing.pairs if (o.id in xquad) == inside]
            if part:
                rows.append((f"{label} ({len(part):,})", [o for o, _ in part], [c for _, c in part]))
    return lines + table3_lines(rows)


def natural_challenge(original: Dataset, name: str) -> Dataset:
    """The challenge set ``--challenge natural:...`` names: a natural data set
    (``natural:heysquad/asr_human``, core.datasets.natural) or a natural condition alone
    (``natural:asr_human``): ``original``'s questions replaced by their natural versions, where the
    natural set has the same question under the same id (the others are left out: unpaired)."""
    condition = name.removeprefix(NATURAL_PREFIX).strip()
    if condition not in CONDITIONS:
        return load_dataset(name)
    found = natural_questions(condition)
    kept = [dataclasses.replace(ex, question=found[ex.id][1]) for ex in original.examples
            if ex.id in found and found[ex.id][0].split() == ex.question.split()]
    if not kept:
        raise DatasetError(f"{name}: no question of {original.name} has a natural version (ids and questions "
                           f"must match {CONDITIONS[condition].description.split(':')[0]})")
    return Dataset(f"{original.name}+{name}", original.lang, kept)


PROG = "python -m core.perturb.make_challenge"


def _perturbation(text: str, param_flags: list[str]) -> tuple[Perturbation, dict]:
    """(the perturbation, the parameters to apply) from --perturbation's spec and --param flags;
    bad ids and parameters fail here, before the data is read."""
    flat, per_step = parse_params(param_flags)
    spec = parse_spec(text)
    if spec.is_chain:
        if flat:
            raise ValueError("for a chain, name the step: --param STEP_ID.name=value")
        extra = {f"{step}.{k}": v for step, values in per_step.items() for k, v in values.items()}
    else:
        if per_step:
            raise ValueError("STEP.name=value parameters are only for chains (ID1+ID2)")
        extra = flat
    perturbation, params = compose.build(PerturbationSpec.make(spec.id, {**spec.params_dict, **extra}))
    perturbation.resolve_params(params)   # fail before reading the data
    return perturbation, params


@cli.command(PROG)
def main(argv: list[str] | None = None) -> int:
    """Bad input (an unknown id or parameter, an unreadable input, an output that cannot be
    written, a perturbation whose tool is missing) ends in one line and exit status 2 (core.cli);
    the output is written whole at the end or not at all."""
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_input("--input", required=True, help="SQuAD-format JSON file (XQuAD, SQuAD dev, ...)")
    parser.add_argument("--perturbation", help="one spec: ID, ID:key=value, or a chain ID1:key=value+ID2 "
                                               "(the sweep's spec language)")
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_output("--output", help="where to write the challenge set (SQuAD JSON)")
    parser.add_input("--challenge", metavar="FILE",
                        help="instead of writing one: pair this existing challenge file with --input and "
                             "print the pairing and its Table 3 (CER / WER / BLEU)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter (for a chain STEP_ID.name=value); the same as writing it in the spec")
    cli.add_loader_options(parser, pairing=True)
    parser.add_argument("--limit", type=cli.Count(MAX_QUESTIONS), default=None, help="only the first N examples")
    parser.add_argument("--only-perturbed", action="store_true",
                        help="leave out the examples the perturbation did not apply to")
    args = parser.parse_args(argv)
    if args.challenge:
        if args.perturbation or args.output:
            raise cli.CLIError("--challenge measures an existing file: no --perturbation or --output")
        original = (load_dataset(args.input) if args.input.startswith(NATURAL_PREFIX)
                    else load_squad(args.input, **cli.loader_kwargs(args)))
        challenge = (natural_challenge(original, args.challenge) if args.challenge.startswith(NATURAL_PREFIX) else
                     load_squad(args.challenge, lang=args.lang or original.lang, on_ambiguous=args.on_ambiguous))
        natural_notes = [line for ds in (original, challenge) if ds.name.startswith(NATURAL_PREFIX)
                         for line in ds.report]
        for line in measure_challenge(original, challenge, args.pair_by) + list(dict.fromkeys(natural_notes)):
            print(line)
        return 0
    missing = [f for f, v in (("--perturbation", args.perturbation), ("--output", args.output)) if not v]
    if missing:
        raise cli.CLIError(f"{' and '.join(missing)} required (or --challenge FILE to measure an existing set)")

    perturbation, flat = _perturbation(args.perturbation, args.param)
    dataset = load_squad(args.input, **cli.loader_kwargs(args))
    print(dataset.load_line())
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
