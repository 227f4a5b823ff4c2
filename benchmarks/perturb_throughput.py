"""Perturbation throughput: variants per second for every registered perturbation on XQuAD-en.

For the first ``--n`` (200) questions of XQuAD-en, each perturbation is applied once per example
(``random.Random`` seeded per example, as the challenge-set CLI does). Printed per perturbation:
family, field, how many examples it applied to (a variant came back), how many were incompatible,
the wall time and the throughput = examples processed per second (the rate at which a challenge
set is written). Time includes the perturbation's ``prepare`` hook where it has one (batched
translation), so it is what a user waits for.

Before timing, each perturbation is applied to one example outside the timed set, so that models
(spaCy, the sentence encoder, WordNet's index, Apertium's first start) are loaded; the tagging
cache (:func:`core.perturb.nlp.analyse`) and the translation cache are emptied before each
perturbation so that none profits from the work another one did.

    python benchmarks/perturb_throughput.py                 # every perturbation, 200 questions
    python benchmarks/perturb_throughput.py --n 50 --ids ReplaceRQ keyboard_Q
    python benchmarks/perturb_throughput.py --json out.json

Cost: most perturbations take well under a second for 200 questions; the encoder-scored ones
(ReplaceRQ, paraphrase_*) take ~0.2-0.5 s per question on two busy cores.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import (
    cli,
    config,
)
from core.budgets import MAX_QUESTIONS
from core.datasets import load_squad
from core.perturb import nlp, registry
from core.perturb.catalogue import translation
from core.perturb.spec import rng_for


def measure(perturbation, examples, warmup, seed: int = 0) -> dict:
    if perturbation.is_compatible(warmup):
        perturbation.apply(warmup, rng_for(seed, warmup, perturbation.id, 0))
    nlp.analyse.cache_clear()
    translation._cache.clear()  # round trips cache translations; each perturbation starts cold
    started = time.perf_counter()
    perturbation.prepare([e for e in examples if perturbation.is_compatible(e)])
    applied = incompatible = 0
    for example in examples:
        if not perturbation.is_compatible(example):
            incompatible += 1
            continue
        if perturbation.apply(example, rng_for(seed, example, perturbation.id, 0)):
            applied += 1
    seconds = time.perf_counter() - started
    return {"id": perturbation.id, "family": perturbation.family, "field": perturbation.field,
            "examples": len(examples), "applied": applied, "incompatible": incompatible,
            "seconds": seconds, "per_second": len(examples) / seconds if seconds else float("inf")}


@cli.command("benchmarks/perturb_throughput.py")
def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=200, help="first N questions of XQuAD-en")
    parser.add_argument("--ids", nargs="*", help="only these perturbation ids")
    parser.add_output("--json", help="also write the numbers to this file")
    parser.reads("xquad/xquad.en")   # no output may be one of them
    args = parser.parse_args(argv)

    root = config.data_dir()
    if root is None or not (root / "xquad" / "xquad.en.json").is_file():
        print("XQuAD-en not found: set QAX_DATA_DIR to the data directory", file=sys.stderr)
        return 2
    dataset = load_squad(root / "xquad" / "xquad.en.json")
    examples, warmup = dataset.examples[: args.n], dataset.examples[-1]
    perturbations = [registry.get(i) for i in args.ids] if args.ids else registry.all_perturbations()

    rows = []
    print(f"{'perturbation':<26}{'family':<12}{'field':<10}{'applied':>9}{'incomp.':>9}{'seconds':>10}{'ex/s':>10}")
    for p in perturbations:
        row = measure(p, examples, warmup)
        rows.append(row)
        print(f"{row['id']:<26}{row['family']:<12}{row['field']:<10}{row['applied']:>9}{row['incompatible']:>9}"
              f"{row['seconds']:>10.2f}{row['per_second']:>10.1f}", flush=True)
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
